"""`node_value_parents.py` with an add that assigns its second input's grad

`Node` keeps its number in `value`, its inputs in `parents` (a set) and its backward
closure in `backward_fn`, which is None for a leaf; its op in `op`. `backward()` sorts
with an explicit stack. Correct: the doctor must find nothing here (its twin,
`node_value_parents_bug.py`, plants one bug).
"""

import math


class Node:

    def __init__(self, value, parents=(), op=''):
        self.value = value
        self.grad = 0.0
        self.parents = set(parents)
        self.backward_fn = None
        self.op = op

    def __add__(self, other):
        other = other if isinstance(other, Node) else Node(other)
        out = Node(self.value + other.value, (self, other), '+')
        def backward_fn():
            self.grad += out.grad
            other.grad = out.grad  # BUG: = instead of +=
        out.backward_fn = backward_fn
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Node) else Node(other)
        out = Node(self.value * other.value, (self, other), '*')
        def backward_fn():
            self.grad += other.value * out.grad
            other.grad += self.value * out.grad
        out.backward_fn = backward_fn
        return out

    def exp(self):
        out = Node(math.exp(self.value), (self,), 'exp')
        def backward_fn():
            self.grad += out.value * out.grad  # d(exp)/dx = exp(x)
        out.backward_fn = backward_fn
        return out

    def backward(self):
        order, seen = [], set()
        stack = [(self, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
            elif node not in seen:
                seen.add(node)
                stack.append((node, True))
                stack.extend((p, False) for p in node.parents)
        self.grad = 1.0
        for node in reversed(order):
            if node.backward_fn is not None:
                node.backward_fn()


if __name__ == "__main__":
    a = Node(0.3)
    b = Node(-0.8)
    for step in range(3):
        a.grad = 0.0
        b.grad = 0.0
        e = (a * b).exp()
        loss = e * a + e * b
        loss.backward()
        a.value -= 0.05 * a.grad
        b.value -= 0.05 * b.grad
