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
    Row('diff', 'tensor_unbroadcast:unbroadcast_mean',
        'grad difference in pass 1 on b written by #9 (op +) at tensor_unbroadcast__unbroadcast_mean.py:39 [wrong: place tensor_unbroadcast__unbroadcast_mean.py:39, not line 20]',
        'exit 1: the first difference is a grad in backward pass 1, written by op +, at the line `# BUG`'),
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
