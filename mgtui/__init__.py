"""mgtui: a terminal step-through debugger for micrograd-style autograd graphs."""

__version__ = "0.1.0"
