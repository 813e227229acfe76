"""Bytes the app sends to the terminal for each key, as a terminal over SSH receives them.

The app runs in a pseudo-terminal of its own (the `pty` module: no tmux) at 80×24 and
at 200×60, opened on a saved trace of `moons.py` (or `neuron.py`) at a step in the
middle of its first backward pass. Each key is sent once the screen is quiet, and every
byte written until it is quiet again is counted. A `pyte` terminal emulator reads the
same bytes, so the script also knows which cells each key changed, and prints the
fewest bytes that could have updated them: for each run of changed cells on a row, one
cursor move, the characters, and an SGR sequence wherever the style changes. Byte
counts do not depend on the machine's load.

Targets (issue 12): `n` at 80×24 mid-moons backward at most 1.5 KB; at 200×60 at most
2× the changed cells' minimum.

    python bench/bytes_per_key.py [--keys n,n,n,p,G,g] [--scenario moons]
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


def changed(before, after) -> tuple[int, int]:
    """The number of cells that differ, and about the fewest bytes that would redraw
    them: row by row, left to right, the characters of the changed cells and an SGR code
    wherever the style changes (a blank on the same background needs none), and across
    a gap of unchanged cells whichever is cheaper, a cursor move or sending the gap
    again (greedy, so a slight overestimate of the true minimum)."""
    cells = minimum = 0
    for y, (old, new) in enumerate(zip(before, after)):
        diff = [x for x in range(len(new)) if old[x] != new[x]]
        if not diff:
            continue
        cells += len(diff)
        minimum += len(f"\x1b[{y + 1};{diff[0] + 1}H")
        style = None
        x = diff[0]
        for target in diff:
            if target > x:  # a gap of unchanged cells: jump over it, or send it again
                jump = len(f"\x1b[{y + 1};{target + 1}H")
                bridge, bridged = 0, style
                for k in range(x, target):
                    cost, bridged = _draw(new[k], bridged)
                    bridge += cost
                if bridge <= jump:
                    minimum, style = minimum + bridge, bridged
                else:
                    minimum += jump
            cost, style = _draw(new[target], style)
            minimum += cost
            x = target + 1
    return cells, minimum


def _draw(cell: tuple, style: tuple | None) -> tuple[int, tuple | None]:
    """The bytes to draw `cell` after a cell in `style`, and the style after it."""
    # a style: (fg, bg, bold, italics, underscore, reverse, strikethrough)
    blank_fits = (cell[0] == " " and not any(cell[5:]) and style is not None
                  and style[1] == cell[2] and not any(style[4:]))
    cost = len(cell[0].encode())
    if cell[1:] != style and not blank_fits:
        style = cell[1:]
        cost += len(sgr(style))
    return cost, style


def sgr(style: tuple) -> str:
    """The shortest SGR sequence for a cell's style, from a reset, in 256 colours."""
    fg, bg, bold, italics, underscore, reverse, strike = style
    params = ["0"]
    params += [code for on, code in ((bold, "1"), (italics, "3"), (underscore, "4"),
                                     (reverse, "7"), (strike, "9")) if on]
    for colour, base in ((fg, 30), (bg, 40)):
        if colour == "default":
            continue
        if colour in NAMED:
            params.append(str(base + NAMED.index(colour)))
        elif colour.removeprefix("bright") in NAMED:
            params.append(str(base + 60 + NAMED.index(colour.removeprefix("bright"))))
        else:
            params.append(f"{base + 8};5;{PALETTE.get(colour, 255)}")
    return "\x1b[" + ";".join(params) + "m"


def saved_trace(scenario: str, directory: Path) -> tuple[Path, int]:
    """The scenario recorded once into a .mgtrace file, and the middle step of its first
    backward pass."""
    path = directory / f"{scenario}.mgtrace"
    subprocess.run([sys.executable, "-c", "from mgtui.cli import entry; entry()", scenario,
                    "--save", str(path), "--print"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    from mgtui.export import load

    trace = load(path)
    backward = next(p for p in trace.passes if p.kind == "backward")
    return path, backward.start + len(backward) // 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="moons")
    parser.add_argument("--keys", default="n,n,n,n,n,p,G,g",
                        help="keys to press, comma-separated (single characters)")
    parser.add_argument("--sizes", default="80x24,200x60")
    args = parser.parse_args()
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
                    sent_n.sort()
                    sent, minimum = sent_n[len(sent_n) // 2]
                    print(f"  median n: {sent:,} B against a minimum of {minimum:,} B "
                          f"({sent / max(minimum, 1):.2f}×)")
            finally:
                app.close()


if __name__ == "__main__":
    main()
