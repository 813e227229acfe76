"""The version of mgtui, importable without the package's in-code API."""

__version__ = "0.1.0"
