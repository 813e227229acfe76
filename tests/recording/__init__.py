"""Recording (mgtui/recording): the recorder, its probes, the store, naming, closures, the engines it records (scalar, array, torch)."""
