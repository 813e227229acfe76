"""`Tensor`: the scalar `Value` with numpy arrays for its data and grad.

The same shape as micrograd's `Value` (`data`, `grad`, `_prev`, `_op`, `_backward`,
`label`, `backward()`), with the ops a lecture-style tensor engine defines: `+`, `*`,
`@`, `**`, `sum`, `mean`, `relu`, `tanh`, `exp` and `log`. Adding or multiplying arrays
of different shapes broadcasts, as numpy does; in the backward pass `unbroadcast` sums
a gradient back down to the shape of the input it belongs to.

numpy is needed here only: `import engine` alone does not import this module.
"""

import numpy as np


def unbroadcast(grad, shape):
    """Sum `grad` over the axes that broadcasting added or stretched, so that it has
    `shape` again: the leading axes `shape` lacks, and the axes where `shape` has 1."""
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


class Tensor:
    """ stores an array of numbers and its gradient, of the same shape """

    def __init__(self, data, _children=(), _op='', label=''):
        self.data = np.array(data, dtype=np.float64)
        self.grad = np.zeros_like(self.data)
        # internal variables used for autograd graph construction
        self._backward = lambda: None
        self._prev = tuple(dict.fromkeys(_children))  # insertion order, no duplicates
        self._op = _op  # the op that produced this node
        self.label = label

    @property
    def shape(self):
        return self.data.shape

    def __add__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data + other.data, (self, other), '+')

        def _backward():
            # d(a+b)/da = 1, summed over the axes a was broadcast along
            self.grad += unbroadcast(out.grad, self.data.shape)
            other.grad += unbroadcast(out.grad, other.data.shape)
        out._backward = _backward

        return out

    def __mul__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data * other.data, (self, other), '*')

        def _backward():
            # d(a*b)/da = b, element by element, then summed back to a's shape
            self.grad += unbroadcast(other.data * out.grad, self.data.shape)
            other.grad += unbroadcast(self.data * out.grad, other.data.shape)
        out._backward = _backward

        return out

    def __matmul__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data @ other.data, (self, other), '@')

        def _backward():
            # out = A @ B: dL/dA = dL/dout @ Bᵀ, dL/dB = Aᵀ @ dL/dout
            self.grad += out.grad @ other.data.T
            other.grad += self.data.T @ out.grad
        out._backward = _backward

        return out

    def __pow__(self, other):
        assert isinstance(other, (int, float)), "only supporting int/float powers for now"
        out = Tensor(self.data**other, (self,), f'**{other}')

        def _backward():
            # d(x**n)/dx = n * x**(n-1)
            self.grad += (other * self.data**(other - 1)) * out.grad
        out._backward = _backward

        return out

    def sum(self):
        out = Tensor(self.data.sum(), (self,), 'sum')

        def _backward():
            # every element counts once: its gradient is out's
            self.grad += np.ones_like(self.data) * out.grad
        out._backward = _backward

        return out

    def mean(self):
        n = self.data.size
        out = Tensor(self.data.mean(), (self,), 'mean')

        def _backward():
            # every element counts 1/n times
            self.grad += np.ones_like(self.data) * out.grad / n
        out._backward = _backward

        return out

    def relu(self):
        out = Tensor(np.maximum(self.data, 0), (self,), 'ReLU')

        def _backward():
            # d(relu)/dx = 1 where x > 0, else 0
            self.grad += (out.data > 0) * out.grad
        out._backward = _backward

        return out

    def tanh(self):
        t = np.tanh(self.data)
        out = Tensor(t, (self,), 'tanh')

        def _backward():
            # d(tanh)/dx = 1 - tanh²
            self.grad += (1 - t**2) * out.grad
        out._backward = _backward

        return out

    def exp(self):
        out = Tensor(np.exp(self.data), (self,), 'exp')

        def _backward():
            # d(exp)/dx = exp(x)
            self.grad += out.data * out.grad
        out._backward = _backward

        return out

    def log(self):
        out = Tensor(np.log(self.data), (self,), 'log')

        def _backward():
            # d(log x)/dx = 1/x
            self.grad += out.grad / self.data
        out._backward = _backward

        return out

    def backward(self):
        # topological order all of the children in the graph (an explicit stack, as
        # `Value.backward` does)
        topo = []
        visited = set()
        stack = [(self, False)]
        while stack:
            v, children_done = stack.pop()
            if children_done:
                topo.append(v)
            elif v not in visited:
                visited.add(v)
                stack.append((v, True))
                stack.extend((child, False) for child in reversed(v._prev))

        # go one variable at a time and apply the chain rule to get its gradient
        self.grad = np.ones_like(self.data)
        for v in reversed(topo):
            v._backward()

    def __neg__(self):  # -self
        return self * -1

    def __radd__(self, other):  # other + self
        return self + other

    def __sub__(self, other):  # self - other
        return self + (-other)

    def __rsub__(self, other):  # other - self
        return other + (-self)

    def __rmul__(self, other):  # other * self
        return self * other

    def __truediv__(self, other):  # self / other
        return self * other**-1

    def __rtruediv__(self, other):  # other / self
        return other * self**-1

    def __repr__(self):
        return f"Tensor(shape={self.data.shape}, data={self.data}, grad={self.grad})"
