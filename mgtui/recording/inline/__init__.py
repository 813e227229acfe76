"""The recording inlined into the code that touches nodes: the recorder's fast path.

`rewrite` is the syntax-tree rewrite (its `Rewriter` docstring lists the state it keeps);
`helpers` holds every helper the rewritten code calls, all reached from one table,
`INJECTED`; `probe` is the `Inliner`, the probe that puts the rewrite on and takes it
off."""
