"""Training a tiny MLP

The lecture's network: `MLP(3, [4, 4, 1])` with tanh in every layer, 41 parameters in all
(4×(3+1) + 4×(4+1) + 1×(4+1)). It learns four examples, `xs`, whose targets `ys` are
`1, -1, -1, 1`. The loss is the squared error summed over the four predictions.

Each of the 20 training steps has four passes, and you can step through each one:

1. **forward**: run the four examples through the network and build the loss;
2. **zero_grad**: reset every parameter's `grad` to 0;
3. **backward**: `loss.backward()` fills in every `grad`;
4. **update**: nudge each parameter against its gradient, `p.data += -0.05 * p.grad`.

The loss starts near 7.7 and falls at every step, to about 0.055 by step 20 (watch the
sparkline). `zero_grad` must come *before* `backward`. Without it, each step's gradients
are added on top of the previous step's, and training goes astray.
"""

import random

from engine.nn import MLP

random.seed(0)

n = MLP(3, [4, 4, 1], activation='tanh')
print(f"{len(n.parameters())} parameters")

xs = [
    [2.0, 3.0, -1.0],
    [3.0, -1.0, 0.5],
    [0.5, 1.0, 1.0],
    [1.0, 1.0, -1.0],
]
ys = [1.0, -1.0, -1.0, 1.0]  # desired targets

losses = []
for k in range(20):

    # forward pass
    ypred = [n(x) for x in xs]
    loss = sum((yout - ygt)**2 for ygt, yout in zip(ys, ypred))
    losses.append(loss.data)

    # backward pass
    n.zero_grad()
    loss.backward()

    # update
    for p in n.parameters():
        p.data += -0.05 * p.grad

    print(k, loss.data)

print("predictions:", [round(yout.data, 3) for yout in ypred])
