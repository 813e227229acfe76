"""Bytes the app sends to the terminal for each key, as a terminal over SSH receives them.

The app runs in a pseudo-terminal of its own (the `pty` module: no tmux) at 80×24 and
at 200×60, opened on a saved trace of `moons.py` (or `neuron.py`) at a step in the
middle of its first backward pass. Each key is sent once the screen is quiet, and every
byte written until it is quiet again is counted. A `pyte` terminal emulator reads the
same bytes, so the script also knows which cells each key changed, and prints the
fewest bytes that could have updated them (see `changed`). Byte counts do not depend on
the machine's load. `--root` runs another checkout's mgtui with this script, for a
before-and-after.

Targets (issue 12): every `n` at 80×24 mid-moons backward at most 1.5 KB; at 200×60 at
most 2× the changed cells' minimum.

    python bench/bytes_per_key.py [--keys n,n,n,p,G,g] [--scenario moons] [--root CHECKOUT]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

import pyte
from pyte.graphics import FG_BG_256

ROOT = Path(__file__).resolve().parent.parent
QUIET = 1.0  # seconds without output: the screen has settled
PALETTE = {hex_: k for k, hex_ in enumerate(FG_BG_256)}
NAMED = ("black", "red", "green", "brown", "blue", "magenta", "cyan", "white")


class App:
    """mgtui in a pseudo-terminal of `cols`×`rows`, its output read into a pyte screen."""

    def __init__(self, trace: Path, step: int, cols: int, rows: int) -> None:
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        pid, fd = pty.fork()
        if pid == 0:  # the child: the app, on the pty's slave side
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("TEXTUAL", "COLORTERM", "NO_COLOR"))}
            env["TERM"] = "xterm-256color"
            os.chdir(ROOT)
            os.execve(sys.executable, [sys.executable, "-c", "from mgtui.cli import entry; entry()",
                                       str(trace), "--step", str(step)], env)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def read_until_quiet(self, quiet: float = QUIET, at_least: float = 0.0) -> bytes:
        out = bytearray()
        start = last = time.monotonic()
        while True:
            now = time.monotonic()
            if now - last >= quiet and now - start >= at_least:
                break
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
                last = time.monotonic()
        self.stream.feed(bytes(out))
        return bytes(out)

    def press(self, key: str) -> tuple[int, int, int]:
        """(bytes sent, cells changed, fewest bytes for those cells) for one key."""
        before = snapshot(self.screen)
        os.write(self.fd, key.encode())
        sent = self.read_until_quiet()
        after = snapshot(self.screen)
        cells, minimum = changed(before, after)
        return len(sent), cells, minimum

    def close(self) -> None:
        try:
            os.write(self.fd, b"q")
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                if os.waitpid(self.pid, os.WNOHANG)[0]:
                    break
                self.read_until_quiet(0.1)
            else:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
        finally:
            os.close(self.fd)


def snapshot(screen: pyte.Screen) -> list[list[tuple]]:
    return [[_cell(screen.buffer[y][x]) for x in range(screen.columns)]
            for y in range(screen.lines)]


def _cell(c) -> tuple:
    """What a cell shows: a blank shows only its background (unless underlined, struck
    through or reversed), so its foreground colour, bold and italic are not counted."""
    if c.data == " " and not (c.underscore or c.reverse or c.strikethrough):
        return (" ", "default", c.bg, False, False, False, False, False)
    return (c.data, c.fg, c.bg, c.bold, c.italics, c.underscore, c.reverse, c.strikethrough)


def changed(before, after, erase: bool = True) -> tuple[int, int]:
    """The number of cells that differ, and about the fewest bytes that would redraw
    them: row by row, left to right, the characters of the changed cells, the shortest
    SGR code wherever the style changes (the difference from the style before, or a
    reset and the whole style; a blank on the same background needs none), to reach a
    changed cell the cheapest of a cursor move (forward within a row, or to a row and
    column) and sending the unchanged cells before it again, and with `erase` (as
    xterm-256color's terminfo allows: bce, ech) a run of changed blanks erased in place
    where that is cheaper (greedy, so a slight overestimate of the true minimum)."""
    cells = minimum = 0
    style = None  # the terminal's style: carried from row to row (None: not known)
    for y, (old, new) in enumerate(zip(before, after)):
        diff = [x for x in range(len(new)) if old[x] != new[x]]
        if not diff:
            continue
        cells += len(diff)
        x = None  # the cursor's column on this row (None: on another row)
        k = 0
        while k < len(diff):
            target = diff[k]
            jump = _move(y, x, target)
            if x is not None and target > x:  # a gap of unchanged cells: jump or send it
                bridge, bridged = 0, style
                for g in range(x, target):
                    cost, bridged = _draw(new[g], bridged)
                    bridge += cost
                if bridge <= jump:
                    minimum, style = minimum + bridge, bridged
                    jump = 0
            minimum += jump
            blanks = _blanks(new, diff, k) if erase else 0
            if blanks:  # erased in place: the cursor stays where the blanks start
                cost, style = _draw(new[target], style)
                erased = len(f"\x1b[{blanks}X")
                if cost - 1 + erased < blanks * 1:
                    minimum += cost - 1 + erased
                    x, k = target, k + blanks
                    continue
            cost, style = _draw(new[target], style)
            minimum += cost
            x, k = target + 1, k + 1
    return cells, minimum


def _blanks(new: list, diff: list, k: int) -> int:
    """How many changed cells from `diff[k]` on are blanks side by side on one
    background, with nothing else showing (an erase in place can draw them)."""
    first = new[diff[k]]
    if first[0] != " " or any(first[5:]):
        return 0
    n = 1
    while (k + n < len(diff) and diff[k + n] == diff[k] + n
           and new[diff[k + n]][0] == " " and new[diff[k + n]][2] == first[2]
           and not any(new[diff[k + n]][5:])):
        n += 1
    return n


def _move(y: int, x: int | None, target: int) -> int:
    """The bytes of the shortest move from column `x` of row `y` (None: another row) to
    column `target` of row `y`."""
    if x == target:
        return 0
    if x is not None and target > x:
        return len("\x1b[C") if target - x == 1 else len(f"\x1b[{target - x}C")
    return len(f"\x1b[{y + 1}H") if target == 0 else len(f"\x1b[{y + 1};{target + 1}H")


def _draw(cell: tuple, style: tuple | None) -> tuple[int, tuple | None]:
    """The bytes to draw `cell` after a cell in `style`, and the style after it."""
    # a style: (fg, bg, bold, italics, underscore, reverse, strikethrough)
    blank_fits = (cell[0] == " " and not any(cell[5:]) and style is not None
                  and style[1] == cell[2] and not any(style[4:]))
    cost = len(cell[0].encode())
    if cell[1:] != style and not blank_fits:
        cost += len(sgr(cell[1:], style))
        style = cell[1:]
    return cost, style


ON = ("1", "3", "4", "7", "9")  # bold, italics, underscore, reverse, strikethrough
OFF = ("22", "23", "24", "27", "29")


def sgr(style: tuple, before: tuple | None = None) -> str:
    """The shortest SGR sequence for a cell's style in 256 colours, after a cell in
    `before` (None: not known): what differs, or a reset and the whole style."""
    fg, bg, *attrs = style
    colours = [_colour(fg, 30), _colour(bg, 40)]
    whole = [code for on, code in zip(attrs, ON) if on] + [c for c in colours if c]
    reset = "\x1b[" + ";".join(["0", *whole]) + "m" if whole else "\x1b[m"
    if before is None:
        return reset
    codes = [off for on, was, off in zip(attrs, before[2:], OFF) if was and not on]
    codes += [code for on, was, code in zip(attrs, before[2:], ON) if on and not was]
    for k, (colour, base) in enumerate(((fg, 39), (bg, 49))):
        if colour != before[k]:
            codes.append(colours[k] or str(base))
    diff = "\x1b[" + ";".join(codes) + "m"
    return diff if len(diff) < len(reset) else reset


def _colour(colour: str, base: int) -> str:
    """A pyte colour as an SGR parameter ("" for the default)."""
    if colour == "default":
        return ""
    if colour in NAMED:
        return str(base + NAMED.index(colour))
    if colour.removeprefix("bright") in NAMED:
        return str(base + 60 + NAMED.index(colour.removeprefix("bright")))
    return f"{base + 8};5;{PALETTE.get(colour, 255)}"


def saved_trace(scenario: str, directory: Path) -> tuple[Path, int]:
    """The scenario recorded once into a .mgtrace file, and the middle step of its first
    backward pass."""
    path = directory / f"{scenario}.mgtrace"
    subprocess.run([sys.executable, "-c", "from mgtui.cli import entry; entry()", scenario,
                    "--save", str(path), "--print"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    from mgtui.trace.export import load

    trace = load(path)
    backward = next(p for p in trace.passes if p.kind == "backward")
    return path, backward.start + len(backward) // 2


def main() -> None:
    global ROOT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="moons")
    parser.add_argument("--keys", default="n,n,n,n,n,n,n,n,n,n,p,G,g",
                        help="keys to press, comma-separated (single characters)")
    parser.add_argument("--sizes", default="80x24,200x60")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the checkout whose mgtui runs (another commit's, to compare)")
    parser.add_argument("--quick", action="store_true",
                        help="small and fast, for the test suite: measures nothing")
    args = parser.parse_args()
    if args.quick:
        args.scenario, args.keys, args.sizes = "chain", "n,p", "80x24"
    ROOT = args.root.resolve()
    keys = args.keys.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        trace, step = saved_trace(args.scenario, Path(tmp))
        print(f"{args.scenario}: opened at step {step}, the middle of its first backward pass")
        for size in args.sizes.split(","):
            cols, rows = map(int, size.split("x"))
            app = App(trace, step, cols, rows)
            try:
                first = app.read_until_quiet(quiet=1.5, at_least=2.0)
                print(f"\n{cols}×{rows}: first screen {len(first):,} B")
                print(f"  {'key':>4} {'sent':>8} {'cells':>6} {'minimum':>8} {'ratio':>6}")
                sent_n = []
                for key in keys:
                    sent, cells, minimum = app.press(key)
                    if key == "n":
                        sent_n.append((sent, minimum))
                    ratio = f"{sent / minimum:.2f}" if minimum else "-"
                    print(f"  {key:>4} {sent:>8,} {cells:>6,} {minimum:>8,} {ratio:>6}")
                if sent_n:
                    ratios = sorted(sent / max(minimum, 1) for sent, minimum in sent_n)
                    sent_n.sort()
                    sent, minimum = sent_n[len(sent_n) // 2]
                    print(f"  n: median {sent:,} B against a minimum of {minimum:,} B "
                          f"({sent / max(minimum, 1):.2f}×); most {sent_n[-1][0]:,} B "
                          f"(minimum {sent_n[-1][1]:,} B); ratio {ratios[0]:.2f}–{ratios[-1]:.2f}×")
            finally:
                app.close()


if __name__ == "__main__":
    main()
