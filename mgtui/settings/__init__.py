"""What a user can set: the one table of the debugger's keys (`bindings`, which feeds the
footer, the help screen and the command palette) and the user's settings file,
`config.toml` (`config`), whose keymap rebinds that table by id. Plain data: no textual.
"""
