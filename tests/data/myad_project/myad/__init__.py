"""A small autograd package, as a user keeps one beside their training script."""

from myad.value import Value

__all__ = ["Value"]
