"""The graph picture's layout (mgtui/graph), headless."""
