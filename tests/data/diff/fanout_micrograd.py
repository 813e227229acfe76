"""A fan-out on PyPI micrograd

The independent twin of `mine_fanout.py`.
"""

from micrograd.engine import Value

a = Value(-2.0)
b = Value(3.0)
c = a*b
f = c + a
f.backward()
