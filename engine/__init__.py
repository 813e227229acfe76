"""A small scalar autograd engine in the style of micrograd, used as lesson material."""

from engine.value import Value

__all__ = ["Value"]
