"""Running a scenario: every recording in a child process of its own.

`runner` starts the child and reads its stream (`LiveTrace`); its `start_run` is the one
place every caller starts a run from, with `RunOptions` (`spec`: every run's defaults).
`child` records in the child and streams the store's chunks to the parent, `spec` is
what both share (the `RunSpec`). `lessons` and `bundled` find the scenarios, notebooks and traces to open."""
