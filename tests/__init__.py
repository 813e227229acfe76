"""mgtui's tests, one folder a room (tests/README.md says which)."""
