"""The documentation site builds strictly."""
