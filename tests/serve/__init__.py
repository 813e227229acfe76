"""The class server (mgtui/serve), over real SSH, the web and worker processes."""
