"""The corpus cases mgtui does not get right today (issue 33): one row each, with what
mgtui says today (its code at commit 90c96c4) and what it should say. Not a test
module: `tests/doctor/test_corpus.py` runs every case that is not a row here. To turn a case
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


PENDING: list[Row] = []
