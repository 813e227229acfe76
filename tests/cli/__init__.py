"""The entry points: the command line, the in-code API, exports and printed handouts."""
