"""Recording: observing a scenario's values from outside and writing what they do into
one record store.

`store.Records` is the one store, with named row fields. Every probe writes through it
behind the protocol in `probes`: the dict hooks, the `__slots__` hooks, the inlined
rewrite (`inline/`), and the in-process recording of the in-code API (`inprocess`).
Each probe is handed the run's `context.RecordingContext` (what it may read and write),
never the recorder. `recorder.Recorder` keeps only the lifecycle (start, stop, limits,
finish) and composes the rest: `classes` hands each Value class to a probe,
`backward_calls` records `_backward` calls for every probe, `naming` names nodes after
the variables that hold them; `sandbox` sets up the interpreter for a run; `scenario`
loads a scenario file; `call_values` keeps what a custom op's `_backward` reads; `nodes`
is how code outside (the doctor) reads a recorded node."""
