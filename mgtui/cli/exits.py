"""The `mgtui` command's exit codes, and its messages on stderr.

Exit codes: 0 the scenario ran to completion (and `--check` found nothing), 1 the
scenario raised or `--check` found a problem (the partial output is still printed),
2 it could not run at all, 3 `--check` found nothing but could not check all of the
gradients numerically (it says what and why): not a clean bill. Errors go to stderr as
short messages, never tracebacks.
"""

from __future__ import annotations

import sys

from mgtui.safe import inert

# mgtui.recording.recorder's and mgtui.run.runner's, without importing them before the scenario's
# child starts
EXIT_OK, EXIT_FAILED, EXIT_UNUSABLE = 0, 1, 2
EXIT_UNCHECKED = 3  # `--check`: no finding, but part of the gradients was not checked


def fail(message: str, detail: str = "") -> int:
    say(message, detail)
    return EXIT_UNUSABLE


def say(message: str, detail: str = "") -> None:
    """A message on stderr; scenario text in it is made inert (`mgtui.safe`)."""
    print(f"mgtui: {inert(message)}", file=sys.stderr)
    if detail:
        print(inert(detail), file=sys.stderr)
