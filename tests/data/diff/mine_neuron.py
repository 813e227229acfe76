"""The lecture's neuron on a hand-written Value (correct)

The twin of `scenarios/neuron.py` (the project's engine) for `mgtui diff`.
"""

from mine_value import neuron

neuron()
