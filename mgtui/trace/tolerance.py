"""How far a recorded gradient may stray from what an op's rule gives, worked out
exactly, before the working says the two differ: `allowed(dtype, terms, scale)`.

The rule's numbers are worked out in float64 from the recorded inputs; the engine
worked them out in its own dtype. A float32 matrix product summed over K terms carries
a rounding error of up to about K·u times the size of its terms (u the unit roundoff,
2⁻²⁴ for float32; in practice nearer √K·u), and that error does not shrink on an
element that cancels near zero. So the tolerance has two parts:

- a relative one, for the rounding of each element itself: 4u of its own size (never
  tighter than 1e-6, the tolerance the working always had for float64);
- an absolute one, for the rounding carried through a sum: 2·K·u of `scale`, the
  largest magnitude among the expected values, the terms the rule sums and the grad
  they are added into (its `+=` rounds to that grad's size; never tighter than 1e-9 of
  it, nor than 1e-12 outright: float64 much as before).

A real error in a rule (a missing transpose, a factor of 2, a sign) moves an element by
about its own size, or the size of the array's largest: far more than this for float32
and float64 on any sum a lesson makes. For float16 and bfloat16 the tolerance is wide
(u is 2⁻¹¹ and 2⁻⁸): only errors of that order are told apart there.
"""

from __future__ import annotations

# unit roundoff (half the gap between 1 and the next number) of each float dtype by
# name; any other dtype (an integer array, say) is compared as float64
ROUNDOFF = {"float64": 2.0 ** -53, "float32": 2.0 ** -24, "float16": 2.0 ** -11,
            "half": 2.0 ** -11, "bfloat16": 2.0 ** -8}
FLOAT64_RELATIVE = 1e-6  # the floors: what the working allowed before dtypes counted
FLOAT64_ABSOLUTE = 1e-9
TINY = 1e-12  # an absolute floor where every value is 0


def roundoff(dtype: str) -> float:
    """The unit roundoff of `dtype` (a name: float32, torch.float32, bfloat16, ...)."""
    return ROUNDOFF.get(dtype.rsplit(".", 1)[-1], ROUNDOFF["float64"])


def coarsest(*dtypes: str) -> str:
    """The least precise of `dtypes` (float64 if none)."""
    return max(dtypes, key=roundoff, default="float64")


def allowed(dtype: str, terms: int, scale: float) -> tuple[float, float]:
    """(relative, absolute): an element `x` worked out by the rule and `y` recorded agree
    where `|x - y| <= relative·|x| + absolute`. `terms`: how many products the rule sums
    into one element (a matrix product's inner dimension; 1 for an elementwise rule);
    `scale`: the largest magnitude among the expected values, the rule's terms and the
    grad before and after."""
    u = roundoff(dtype)
    relative = max(FLOAT64_RELATIVE, 4 * u)
    absolute = max(FLOAT64_ABSOLUTE, 2 * max(terms, 1) * u) * abs(scale)
    return relative, max(absolute, TINY)
