"""A fan-out on a hand-written Value (correct)

`a` is used twice, in `c = a*b` and in `f = c + a`, so its grad gets two contributions,
`b + 1 = 4`: the lesson of `+=`. The twin of `fanout_micrograd.py`.
"""

from mine_value import fanout

fanout()
