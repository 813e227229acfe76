"""The corpus cases mgtui does not get right today (issue 33): one row each, with what
mgtui says today (its code at commit 90c96c4) and what it should say. Not a test
module: `tests/test_corpus.py` runs every case that is not a row here. To turn a case
on, make mgtui say what the row says it should, then delete the row.

`tool`: "check" is the doctor on the file (`diagnose(path)`, as `mgtui FILE --check`),
"check(fn)" the doctor in this process on its `train` (`mgtui.check(train)`), "diff" is
`mgtui diff ENGINE TORCH_TWIN --json`. `case`: `engine:correct` (the correct twin) or
`engine:bug` (a row of `cases.PLANTED`). `today` ends with what is wrong with it, in
brackets. The doctor's time on each case is in README.md.
"""

from __future__ import annotations

from typing import NamedTuple


class Row(NamedTuple):
    tool: str
    case: str
    today: str
    should: str


PENDING = [
    Row('check', 'scalar_inputs_backward_fn:queue_twice',
        'repeated-backward on #18 (op exp) at scalar_inputs_backward_fn__queue_twice.py:115 `out.backprop()` [wrong: line scalar_inputs_backward_fn__queue_twice.py:115, not 76]',
        'one finding: repeated-backward, op exp or relu or add or mul or pow-1, at the `# BUG` line'),
    Row('check', 'scalar_inputs_backward_fn:late_bound_relu',
        "foreign-write on out (op relu) at scalar_inputs_backward_fn__late_bound_relu.py:91 `x.grad += (out.val > 0) * out.grad` [wrong: the message does not say 'bound late']",
        'one finding: foreign-write, op relu, at the line `x.grad += (out.val > 0) * out.grad`, saying the closure was bound late'),
    Row('check', 'scalar_grad_rebind:kahn_counts_once',
        'topo-order on p (op sigmoid) at scalar_grad_rebind__kahn_counts_once.py:109 `loss.backward()`; missing-zero-grad on #0 (op -) at scalar_grad_rebind__kahn_counts_once.py:109 `loss.backward()` [wrong: 2 findings, not 1]',
        'one finding: topo-order, op sigmoid, at the `# BUG` line'),
    Row('check', 'tensor_grad_elements:index_add_drops_repeats',
        'wrong-derivative on loss (op cross_entropy) at tensor_grad_elements__index_add_drops_repeats.py:77 `self.grad += probs * out.grad / n` element (1, 0); wrong-derivative on #9 (op +) at tensor_grad_elements__index_add_drops_repeats.py:31 `def _backward():`; wrong-derivative on #5 (op split) at tensor_grad_elements__index_add_drops_repeats.py:65 `def _backward(part=part, lo=lo, hi=hi):` [wrong: 3 findings, not 1]',
        'one finding: wrong-derivative, op embedding, node h, at the `# BUG` line, input E, element (1, 0)'),
    Row('check', 'tensor_grad_elements:late_bound_split',
        'wrong-derivative on loss (op cross_entropy) at tensor_grad_elements__late_bound_split.py:77 `self.grad += probs * out.grad / n` element (1, 0); wrong-derivative on #9 (op +) at tensor_grad_elements__late_bound_split.py:31 `def _backward():`; wrong-derivative on #5 (op split) at tensor_grad_elements__late_bound_split.py:65 `def _backward():  # BUG` [wrong: 3 findings, not 1]',
        'one finding: wrong-derivative, op split, at the line `self.grad[:, lo:hi] += part.grad`, input h, saying the closure was bound late'),
    Row('check', 'tensor_grad_elements:cross_entropy_unscaled',
        'wrong-derivative on loss (op cross_entropy) at tensor_grad_elements__cross_entropy_unscaled.py:77 `self.grad += probs * out.grad / n` element (1, 0); wrong-derivative on #9 (op +) at tensor_grad_elements__cross_entropy_unscaled.py:31 `def _backward():`; wrong-derivative on #5 (op split) at tensor_grad_elements__cross_entropy_unscaled.py:65 `def _backward(part=part, lo=lo, hi=hi):` [wrong: 3 findings, not 1]',
        'one finding: wrong-derivative, op cross_entropy, node loss, at the `# BUG` line, element (0, 2)'),
    Row('check', 'tensor_function_ctx:mean_not_dim',
        'wrong-derivative on out (op Mean) at tensor_function_ctx__mean_not_dim.py:29 `for t, g in zip(inputs, grads):` element (0, 0); missing-zero-grad on X (op -) at tensor_function_ctx__mean_not_dim.py:179 `loss.backward()` [wrong: 2 findings, not 1]',
        'one finding: wrong-derivative, op Mean, at the `# BUG` line, input err, element (0, 0)'),
    Row('check', 'tensor_function_ctx:tanh_derivative',
        'wrong-derivative on h (op Tanh) at tensor_function_ctx__tanh_derivative.py:29 `for t, g in zip(inputs, grads):` element (0, 0); missing-zero-grad on X (op -) at tensor_function_ctx__tanh_derivative.py:179 `loss.backward()` [wrong: 2 findings, not 1]',
        'one finding: wrong-derivative, op Tanh, node h, at the `# BUG` line, element (0, 0)'),
    Row('check', 'tensor_grad_none:relu_unmasked',
        "non-finite on W1 (op -) at tensor_grad_none__relu_unmasked.py:113 `p.grad = None` [wrong: kind non-finite, not wrong-derivative; op , not one of ('relu',); node W1, not one of ('h',); line tensor_grad_none__relu_unmasked.py:113, not 60; element None, not (0, 0)]",
        'one finding: wrong-derivative, op relu, node h, at the `# BUG` line, element (0, 0)'),
    Row('check', 'tensor_grad_none:mean_over_rows',
        "non-finite on W1 (op -) at tensor_grad_none__mean_over_rows.py:113 `p.grad = None` [wrong: kind non-finite, not wrong-derivative; op , not one of ('mean',); node W1, not one of ('penalty',); line tensor_grad_none__mean_over_rows.py:113, not 74; element None, not (0, 0)]",
        'one finding: wrong-derivative, op mean, node penalty, at the `# BUG` line, element (0, 0)'),
    Row('check(fn)', 'scalar_inputs_backward_fn:queue_twice',
        'repeated-backward on #18 (op exp) at scalar_inputs_backward_fn__queue_twice.py:115 `out.backprop()` [wrong: line scalar_inputs_backward_fn__queue_twice.py:115, not 76]',
        'one finding: repeated-backward, op exp or relu or add or mul or pow-1, at the `# BUG` line'),
    Row('check(fn)', 'scalar_inputs_backward_fn:late_bound_relu',
        "foreign-write on #12 (op relu) at scalar_inputs_backward_fn__late_bound_relu.py:91 `x.grad += (out.val > 0) * out.grad` [wrong: the message does not say 'bound late']",
        'one finding: foreign-write, op relu, at the line `x.grad += (out.val > 0) * out.grad`, saying the closure was bound late'),
    Row('check(fn)', 'scalar_grad_rebind:kahn_counts_once',
        'topo-order on #73 (op sigmoid) at scalar_grad_rebind__kahn_counts_once.py:109 `loss.backward()`; missing-zero-grad on #0 (op -) at scalar_grad_rebind__kahn_counts_once.py:109 `loss.backward()` [wrong: 2 findings, not 1]',
        'one finding: topo-order, op sigmoid, at the `# BUG` line'),
    Row('check(fn)', 'tensor_grad_elements:index_add_drops_repeats',
        'wrong-derivative on #10 (op cross_entropy) at tensor_grad_elements__index_add_drops_repeats.py:77 `self.grad += probs * out.grad / n` element (1, 0); wrong-derivative on #9 (op +) at tensor_grad_elements__index_add_drops_repeats.py:32 `self.grad += out.grad` element (0, 2); wrong-derivative on #5 (op split) at tensor_grad_elements__index_add_drops_repeats.py:111 `loss.backward()` element (4, 2) [wrong: 3 findings, not 1]',
        'one finding: wrong-derivative, op embedding, node h, at the `# BUG` line, input E, element (1, 0)'),
    Row('check(fn)', 'tensor_grad_elements:late_bound_split',
        'wrong-derivative on #10 (op cross_entropy) at tensor_grad_elements__late_bound_split.py:77 `self.grad += probs * out.grad / n` element (1, 0); wrong-derivative on #9 (op +) at tensor_grad_elements__late_bound_split.py:32 `self.grad += out.grad` element (0, 2); wrong-derivative on #5 (op split) at tensor_grad_elements__late_bound_split.py:111 `loss.backward()` element (4, 2) [wrong: 3 findings, not 1]',
        'one finding: wrong-derivative, op split, at the line `self.grad[:, lo:hi] += part.grad`, input h, saying the closure was bound late'),
    Row('check(fn)', 'tensor_grad_elements:cross_entropy_unscaled',
        'wrong-derivative on #10 (op cross_entropy) at tensor_grad_elements__cross_entropy_unscaled.py:77 `self.grad += probs * out.grad / n` element (1, 0); wrong-derivative on #9 (op +) at tensor_grad_elements__cross_entropy_unscaled.py:32 `self.grad += out.grad` element (0, 2); wrong-derivative on #5 (op split) at tensor_grad_elements__cross_entropy_unscaled.py:111 `loss.backward()` element (4, 2) [wrong: 3 findings, not 1]',
        'one finding: wrong-derivative, op cross_entropy, node loss, at the `# BUG` line, element (0, 2)'),
    Row('check(fn)', 'tensor_function_ctx:mean_not_dim',
        'wrong-derivative on #9 (op Mean) at tensor_function_ctx__mean_not_dim.py:29 `for t, g in zip(inputs, grads):` element (0, 0); missing-zero-grad on #0 (op -) at tensor_function_ctx__mean_not_dim.py:179 `loss.backward()` [wrong: 2 findings, not 1]',
        'one finding: wrong-derivative, op Mean, at the `# BUG` line, input err, element (0, 0)'),
    Row('check(fn)', 'tensor_function_ctx:matmul_transposed',
        'wrong-derivative on #4 (op MatMul) at tensor_function_ctx__matmul_transposed.py:45 `grad_w = grad.T @ x  # BUG` element (0, 1); missing-zero-grad on #0 (op -) at tensor_function_ctx__matmul_transposed.py:179 `loss.backward()` [wrong: 2 findings, not 1]',
        'one finding: wrong-derivative, op MatMul, at the `# BUG` line, input W, an element off the diagonal'),
    Row('check(fn)', 'tensor_function_ctx:tanh_derivative',
        'wrong-derivative on #6 (op Tanh) at tensor_function_ctx__tanh_derivative.py:29 `for t, g in zip(inputs, grads):` element (0, 0); missing-zero-grad on #0 (op -) at tensor_function_ctx__tanh_derivative.py:179 `loss.backward()` [wrong: 2 findings, not 1]',
        'one finding: wrong-derivative, op Tanh, node h, at the `# BUG` line, element (0, 0)'),
    Row('check(fn)', 'tensor_grad_none:relu_unmasked',
        "non-finite on params[0] (op -) at tensor_grad_none__relu_unmasked.py:113 `p.grad = None` [wrong: kind non-finite, not wrong-derivative; op , not one of ('relu',); line tensor_grad_none__relu_unmasked.py:113, not 60; element None, not (0, 0)]",
        'one finding: wrong-derivative, op relu, node h, at the `# BUG` line, element (0, 0)'),
    Row('check(fn)', 'tensor_grad_none:mean_over_rows',
        "non-finite on params[0] (op -) at tensor_grad_none__mean_over_rows.py:113 `p.grad = None` [wrong: kind non-finite, not wrong-derivative; op , not one of ('mean',); line tensor_grad_none__mean_over_rows.py:113, not 74; element None, not (0, 0)]",
        'one finding: wrong-derivative, op mean, node penalty, at the `# BUG` line, element (0, 0)'),
    Row('diff', 'tensor_unbroadcast:correct',
        'no difference; agree False, partial True, 5 aligned [wrong: exit 1, agree False, partial True]',
        'exit 0: they agree, aligned (not partial), no difference'),
    Row('diff', 'tensor_grad_elements:correct',
        "grad difference in pass 1 on E written by None (op None) at None [wrong: exit 1, agree False, partial True; a difference: backward pass 1: E.grad[0, 0] is 0 in yours and -0.06083 in torch (last written by `h`'s `_backward`) (the calls that added to it could not be paired one by one)]",
        'exit 0: they agree, aligned (not partial), no difference'),
    Row('diff', 'tensor_function_ctx:correct',
        'no difference; agree False, partial True, 3 aligned [wrong: exit 1, agree False, partial True]',
        'exit 0: they agree, aligned (not partial), no difference'),
    Row('diff', 'tensor_grad_none:correct',
        'no difference; agree False, partial True, 4 aligned [wrong: exit 1, agree False, partial True]',
        'exit 0: they agree, aligned (not partial), no difference'),
    Row('diff', 'tensor_unbroadcast:unbroadcast_mean',
        'grad difference in pass 1 on b written by #9 (op +) at tensor_unbroadcast__unbroadcast_mean.py:39 [wrong: place tensor_unbroadcast__unbroadcast_mean.py:39, not line 20]',
        'exit 1: the first difference is a grad in backward pass 1, written by op +, at the line `# BUG`'),
    Row('diff', 'tensor_unbroadcast:sigmoid_derivative',
        "grad difference in pass 1 on Wz written by #6 (op @) at tensor_unbroadcast__sigmoid_derivative.py:56 [wrong: written by #6 (op @), not an op in ('sigmoid',); place tensor_unbroadcast__sigmoid_derivative.py:56, not line 81]",
        'exit 1: the first difference is a grad in backward pass 1, written by op sigmoid, at the line `# BUG`'),
    Row('diff', 'tensor_grad_elements:late_bound_split',
        "grad difference in pass 1 on E written by None (op None) at None [wrong: written by None (op None), not an op in ('split',); place None, not line 66]",
        'exit 1: the first difference is a grad in backward pass 1, written by op split, at the line `self.grad[:, lo:hi] += part.grad`'),
    Row('diff', 'tensor_grad_elements:cross_entropy_unscaled',
        "grad difference in pass 1 on W2 written by #8 (op @) at tensor_grad_elements__cross_entropy_unscaled.py:41 [wrong: written by #8 (op @), not an op in ('cross_entropy',); place tensor_grad_elements__cross_entropy_unscaled.py:41, not line 78]",
        'exit 1: the first difference is a grad in backward pass 1, written by op cross_entropy, at the line `# BUG`'),
    Row('diff', 'tensor_function_ctx:mean_not_dim',
        "grad difference in pass 1 on b written by out (op Add) at tensor_function_ctx__mean_not_dim.py:30 [wrong: written by out (op Add), not an op in ('Mean',); place tensor_function_ctx__mean_not_dim.py:30, not line 84]",
        'exit 1: the first difference is a grad in backward pass 1, written by op Mean, at the line `# BUG`'),
    Row('diff', 'tensor_function_ctx:matmul_transposed',
        'grad difference in pass 1 on W written by out (op MatMul) at tensor_function_ctx__matmul_transposed.py:30 [wrong: place tensor_function_ctx__matmul_transposed.py:30, not line 45]',
        'exit 1: the first difference is a grad in backward pass 1, written by op MatMul, at the line `# BUG`'),
    Row('diff', 'tensor_function_ctx:tanh_derivative',
        "grad difference in pass 1 on b written by out (op Add) at tensor_function_ctx__tanh_derivative.py:30 [wrong: written by out (op Add), not an op in ('Tanh',); place tensor_function_ctx__tanh_derivative.py:30, not line 72]",
        'exit 1: the first difference is a grad in backward pass 1, written by op Tanh, at the line `# BUG`'),
    Row('diff', 'tensor_grad_none:relu_unmasked',
        "grad difference in pass 1 on b1 written by #6 (op add) at tensor_grad_none__relu_unmasked.py:27 [wrong: written by #6 (op add), not an op in ('relu',); place tensor_grad_none__relu_unmasked.py:27, not line 60]",
        'exit 1: the first difference is a grad in backward pass 1, written by op relu, at the line `# BUG`'),
    Row('diff', 'tensor_grad_none:mean_over_rows',
        "grad difference in pass 1 on W1 written by #8 (op square) at tensor_grad_none__mean_over_rows.py:27 [wrong: written by #8 (op square), not an op in ('mean',); place tensor_grad_none__mean_over_rows.py:27, not line 74]",
        'exit 1: the first difference is a grad in backward pass 1, written by op mean, at the line `# BUG`'),
]
