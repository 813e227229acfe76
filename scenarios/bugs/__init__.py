"""One small scenario per classic autograd bug: `mgtui bugs/<name> --check` finds each one."""
