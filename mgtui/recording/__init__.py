"""Recording: observing a scenario's values from outside and writing what they do into
one record store.

`store.Records` is the one store, with named row fields. Every probe writes through it
behind the protocol in `probes`: the dict hooks, the `__slots__` hooks, the inlined
rewrite (`inline/`), and the in-process recording of the in-code API (`inprocess`).
`recorder.Recorder` keeps only the lifecycle (start, stop, limits, finish); `sandbox` sets
up the interpreter for a run; `scenario` loads a scenario file; `naming` names nodes
after the variables that hold them; `call_values` keeps what a custom op's `_backward`
reads."""
