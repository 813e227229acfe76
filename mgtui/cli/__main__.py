"""`python -m mgtui.cli`: the `mgtui` command."""

from mgtui.cli import entry

entry()
