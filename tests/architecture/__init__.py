"""The walls of the house, checked: import contracts, size limits, the one sanitising path, Textual's internals, what is defined once."""
