"""`--print` carries the lesson's `#:` notes under the steps they belong to, as the app
shows them (issue 23, item 4): a handout loses nothing the lesson says."""

from pathlib import Path

from mgtui.cli import main

SCENARIOS = Path(__file__).resolve().parent.parent.parent / "scenarios"


def step_blocks(out: str) -> dict[int, list[str]]:
    """The printed lines of each step, by step number."""
    blocks: dict[int, list[str]] = {}
    current = None
    for line in out.splitlines():
        words = line.split()
        if len(words) > 1 and words[0] == "step" and words[1].isdigit():
            current = int(words[1])
            blocks[current] = []
        elif not line.startswith("    "):
            current = None
        if current is not None:
            blocks[current].append(line)
    return blocks


def test_print_shows_each_note_under_its_steps(capsys):
    assert main([str(SCENARIOS / "chain.py"), "--print"]) == 0
    blocks = step_blocks(capsys.readouterr().out)
    product = "✎ a product: backward, each input gets the other input times e.grad"
    # line 26 makes e (step 4), and e's _backward (step 13) is the backward half of it
    with_note = sorted(n for n, lines in blocks.items() if any(product in l for l in lines))
    assert with_note == [4, 13]
    assert all(sum(product in l for l in blocks[n]) == 1 for n in with_note)
    # a step on a line with no note has none
    assert not any("✎" in l for l in blocks[1] + blocks[2] + blocks[6])
