"""What the app writes to the terminal, cut to the cells that change (the bytes over SSH).

Textual sends a refreshed part of a line from its widget's left edge, every segment as a
whole SGR code, its text and a reset (`ESC[1;38;5;71;48;5;234m text ESC[0m`). `ScreenDiff`
sits between the app and its terminal, as curses does: it keeps what each cell of the
screen shows, and of each write it sends only the cells that differ, each style as its
difference from the one the terminal is in (`ESC[7m`, `ESC[22m`), or as a reset and the
whole style where that is shorter, across unchanged cells the cheaper of a cursor move
and the cells themselves, and, where the terminal's terminfo says it erases in the
background colour in use (`bce`, `ech`), long stretches of blanks erased in place. The
terminal ends each write showing what Textual's own write would have shown. (Written
here: Textual has no such layer, and curses cannot sit under Textual's output.)

It reads only what Textual writes for a screen update: absolute cursor moves, SGR codes,
text, newlines, private modes and OSC sequences. Anything else (an erase, a relative
move, a control character, a character of zero width) is sent as it is, and from there
on every cell counts as unknown and is sent again until something draws it; so is the
screen after a change of size and the alternate screen switching. Cells drawn inside a
link are always sent.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from typing import TYPE_CHECKING, NamedTuple

from rich.cells import cell_len

if TYPE_CHECKING:
    from textual.driver import Driver

# -- styles ----------------------------------------------------------------------------------

# attribute codes (as Rich writes them) and the code that turns each off; 22, 24, 25
# and 54 turn off two attributes each
_OFF = {"1": "22", "2": "22", "3": "23", "4": "24", "21": "24", "5": "25", "6": "25",
        "7": "27", "8": "28", "9": "29", "51": "54", "52": "54", "53": "55"}
_CLEARS = {off: frozenset(a for a, o in _OFF.items() if o == off) for off in set(_OFF.values())}
_ORDER = {code: k for k, code in enumerate(_OFF)}  # Rich's order of attributes


class Look(NamedTuple):
    """A terminal's drawing style: the attribute codes on, the fg and bg colour codes."""

    attrs: frozenset[str] = frozenset()
    fg: str | None = None  # "38;5;71", "31", "38;2;1;2;3"; None: the terminal's default
    bg: str | None = None


DEFAULT = Look()


def apply(look: Look, params: str) -> Look | None:
    """`look` after an SGR code with `params`, or None for a code not understood."""
    codes = params.split(";")
    attrs, fg, bg = set(look.attrs), look.fg, look.bg
    k = 0
    while k < len(codes):
        code = codes[k]
        if code in ("", "0"):
            attrs, fg, bg = set(), None, None
        elif code in _OFF:
            attrs.add(code)
        elif code in _CLEARS:
            attrs -= _CLEARS[code]
        elif code in ("38", "48"):
            size = {"5": 2, "2": 4}.get(codes[k + 1] if k + 1 < len(codes) else "")
            if size is None or k + size >= len(codes):
                return None
            colour = ";".join(codes[k : k + size + 1])
            if code == "38":
                fg = colour
            else:
                bg = colour
            k += size
        elif code in ("39", "49"):
            fg, bg = (None, bg) if code == "39" else (fg, None)
        elif code.isdigit() and (30 <= int(code) <= 37 or 90 <= int(code) <= 97):
            fg = code
        elif code.isdigit() and (40 <= int(code) <= 47 or 100 <= int(code) <= 107):
            bg = code
        else:
            return None
        k += 1
    return Look(frozenset(attrs), fg, bg)


def whole(look: Look) -> list[str]:
    """The codes that set `look` from the default style, in Rich's order."""
    return sorted(look.attrs, key=_ORDER.__getitem__) + [c for c in (look.fg, look.bg) if c]


def change(drawn: Look | None, wanted: Look) -> str:
    """The shortest SGR sequence from `drawn` (None: not known) to `wanted`: the
    difference, or a reset and the whole style."""
    if drawn == wanted:
        return ""
    reset = "\x1b[" + ";".join(["0", *whole(wanted)]) + "m" if wanted != DEFAULT else "\x1b[m"
    if drawn is None:
        return reset
    offs = sorted({_OFF[a] for a in drawn.attrs - wanted.attrs})
    left = drawn.attrs.difference(*(_CLEARS[o] for o in offs))
    codes = offs + sorted(wanted.attrs - left, key=_ORDER.__getitem__)
    if wanted.fg != drawn.fg:
        codes.append(wanted.fg or "39")
    if wanted.bg != drawn.bg:
        codes.append(wanted.bg or "49")
    diff = "\x1b[" + ";".join(codes) + "m"
    return diff if len(diff) < len(reset) else reset


# what shows on a blank cell besides its background: reverse video, lines, a frame
_SHOWS_ON_BLANK = frozenset({"4", "21", "7", "9", "51", "52", "53"})


def shown(ch: str, look: Look) -> tuple[str, Look]:
    """What a cell shows: a blank only its background, unless it is reversed, underlined,
    struck through, overlined or framed."""
    if ch == " " and not look.attrs & _SHOWS_ON_BLANK:
        return (" ", Look(bg=look.bg))
    return (ch, look)


def style_for(drawn: Look | None, ch: str, look: Look) -> tuple[str, Look | None]:
    """The SGR sequence to draw `ch` in `look` over a terminal in style `drawn`, and the
    style after it: none for a blank on the background it needs."""
    if (ch == " " and drawn is not None and drawn.bg == look.bg
            and not (drawn.attrs | look.attrs) & _SHOWS_ON_BLANK):
        return "", drawn
    return change(drawn, look), look


# -- the screen --------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"\x1b\[([0-?]*)([ -/]*)([@-~])"  # CSI: parameters, intermediates, final byte
    r"|\x1b\](.*?)(?:\x07|\x1b\\)"  # OSC, up to its terminator
    r"|\x1b.?"  # any other escape
    r"|[\x00-\x1f\x7f]",  # a control character
    re.S,
)
_SCREENS = {"47", "1047", "1048", "1049"}  # private modes that switch the screen's contents
_BRIDGE = 8  # at most this many unchanged cells are sent again in place of a cursor move
_ERASE = " " * 8  # a stretch of blanks this long or longer is erased in place (ECH) ...
_BLANKS = re.compile(f"{_ERASE}+ *")  # ... where the terminal can

Cell = tuple  # (character, Look); "" for the right half of a wide character


class ScreenDiff:
    """The cells the terminal shows, and `write`, which cuts a write to what changes."""

    def __init__(self, erase: bool = False) -> None:
        """`erase`: the terminal erases cells in the background colour in use (terminfo's
        `bce`) and a number of cells in place (`ech`), so blanks may be erased."""
        self.erase = erase
        self.forget()

    def forget(self) -> None:
        """Count every cell as unknown (after a resize, or an escape not understood)."""
        self.rows: dict[int, list[Cell | None]] = {}
        self.cursor: tuple[int, int] | None = None  # where the terminal's cursor is
        self.look: Look | None = None  # the terminal's style

    def take(self, model: ScreenDiff) -> None:
        """This terminal shows what `model`'s does now (it was in the same state, cell
        for cell, cursor and style, and was sent what `model`'s was sent)."""
        self.rows = {y: list(row) for y, row in model.rows.items()}
        self.cursor, self.look = model.cursor, model.look

    def write(self, data: str) -> str:
        """What to send in place of `data`, written to a terminal that shows `rows`."""
        self._out: list[str] = []
        self._at: tuple[int, int] | None = self.cursor  # where `data` has moved the cursor
        # the style `data` has set: it starts from the default, as Textual's writes do
        self._look: Look | None = DEFAULT
        self._link = False
        self._lost: tuple[tuple[int, int], list[str]] | None = None  # before newlines
        pos = 0
        for match in _TOKEN.finditer(data):
            if match.start() > pos:
                self._text(data[pos : match.start()])
            pos = match.end()
            self._escape(match)
        if pos < len(data):
            self._text(data[pos:])
        if self._at is not None and self._at != self.cursor:
            self._move(*self._at)  # where the write leaves the cursor
        elif self._at is None and self._lost is not None:
            self._move(*self._lost[0])
            self._out += self._lost[1]
            self.cursor = None
        out, self._out = "".join(self._out), []
        return out

    # -- what the write does --------------------------------------------------------------
    def _escape(self, match: re.Match) -> None:
        text = match.group(0)
        params, between, final = match.group(1, 2, 3)
        if final is None:
            final = between = params = ""
        if final == "m" and not between and not params.startswith(("?", ">", "<", "=")):
            look = apply(self._look, params) if self._look is not None else None
            if look is None and params.split(";")[0] in ("", "0"):
                look = apply(DEFAULT, params)  # a reset makes the style known again
            if look is None:  # not understood: sent as it is, over the style so far
                self._sync_look()
                self._out.append(text)
                self._look = self.look = None
            else:
                self._look = look
        elif final in ("H", "f") and not between and not params.startswith("?"):
            row, _, col = params.partition(";")
            try:
                self._at = (max(int(row or 1), 1) - 1, max(int(col or 1), 1) - 1)
            except ValueError:
                self._unknown(text)
        elif final in ("h", "l") and params.startswith("?") and not between:
            self._out.append(text)  # a mode: the cursor, the mouse, synchronized output
            if _SCREENS & set(params[1:].split(";")):
                self._forget_all()
        elif match.group(4) is not None:  # OSC: a link, a title
            self._out.append(text)
            osc = match.group(4)
            if osc.startswith("8;"):
                self._link = bool(osc.split(";", 2)[-1])
        elif text in ("\n", "\r"):
            # Textual moves the cursor after each newline it writes; until it does, where
            # the cursor is depends on the terminal, so the newline is kept to send
            if self._at is not None:
                self._lost = (self._at, [])
            if text == "\r" and self._at is not None:
                self._at = (self._at[0], 0)
            else:
                self._at = None
                if self._lost is not None:
                    self._lost[1].append(text)
        else:
            self._unknown(text)

    def _text(self, text: str) -> None:
        at, look = self._at, self._look
        if at is None:
            self._unknown(text)
            return
        narrow = cell_len(text) == len(text)
        if not narrow and not self._wide_ok(text):
            self._unknown(text)
            return
        y, x = at
        row = self.rows.setdefault(y, [])
        end = x + cell_len(text) + 1
        if end > len(row):
            row.extend([None] * (end - len(row)))
        if narrow and look is not None and not self._link:
            self._narrow(text, look, y, x, row)
        else:
            self._cells(text, look, y, x, row)
        self._at = (y, x + cell_len(text))

    def _narrow(self, text: str, look: Look, y: int, x: int, row: list) -> None:
        """Characters one cell wide each, in a known style: the runs that differ from
        what the row shows are drawn, each as one string, left to right; where the
        terminal can, long stretches of blanks are erased in place instead (ECH)."""
        blank = shown(" ", look)
        new = [(ch, look) if ch != " " else blank for ch in text]
        old = row[x : x + len(text)]
        if old == new:
            return
        erase = {}
        if self.erase and not look.attrs & _SHOWS_ON_BLANK and _ERASE in text:
            erase = self._stretches(text, old, new)
        n, i = len(new), 0
        while i < n:
            if i in erase:
                self._erase(y, x + i, erase[i] - i, look, row, new[i : erase[i]])
                i = erase[i]
                continue
            if old[i] == new[i]:
                i += 1
                continue
            j = i + 1
            while j < n and old[j] != new[j] and j not in erase:
                j += 1
            self._run(y, x + i, text[i:j], look, row, new[i:j])
            i = j

    @staticmethod
    def _stretches(text: str, old: list, new: list) -> dict[int, int]:
        """The long stretches of blanks in `text` to erase: each from its first changed
        cell to its last (blanks already there are erased again, harmlessly)."""
        spans = {}
        for stretch in _BLANKS.finditer(text):
            changed = [i for i in range(*stretch.span()) if old[i] != new[i]]
            if changed and changed[-1] + 1 - changed[0] >= len(_ERASE):
                spans[changed[0]] = changed[-1] + 1
        return spans

    def _erase(self, y: int, x: int, n: int, look: Look, row: list, cells: list) -> None:
        self._goto(y, x, row)
        code, self.look = style_for(self.look, " ", look)
        self._out += (code, f"\x1b[{n}X")
        self.cursor = (y, x)  # an erase does not move the cursor
        row[x : x + n] = cells

    def _run(self, y: int, x: int, run: str, look: Look, row: list, cells: list) -> None:
        """Draw `run` at (y, x) in `look`."""
        if x > 0 and row[x] is not None and row[x][0] == "":
            row[x - 1] = None  # the left half of a wide character drawn over
        end = x + len(run)
        if row[end] is not None and row[end][0] == "":
            row[end] = None  # the right half of one
        self._goto(y, x, row)
        code, self.look = style_for(self.look, run if run.strip(" ") else " ", look)
        self._out += (code, run)
        self.cursor = (y, end)
        row[x:end] = cells

    def _cells(self, text: str, look: Look | None, y: int, x: int, row: list) -> None:
        """Characters one by one: some are two cells wide, or the style is not known,
        or they are in a link (then they are always drawn, and count as unknown)."""
        known = look is not None and not self._link
        for ch in text:
            width = cell_len(ch)
            cell = shown(ch, look) if known else None
            if cell is None or row[x] != cell or (width == 2 and row[x + 1] != ("", look)):
                # a wide character partly drawn over is gone: its other half is unknown
                if x > 0 and row[x] is not None and row[x][0] == "":
                    row[x - 1] = None
                if row[x + width] is not None and row[x + width][0] == "":
                    row[x + width] = None
                self._goto(y, x, row)
                if look is not None:
                    code, self.look = style_for(self.look, ch, look)
                    self._out.append(code)
                self._out.append(ch)
                self.cursor = (y, x + 1) if width == 1 else None  # terminals disagree on wide
                row[x] = cell
                if width == 2:
                    row[x + 1] = ("", look) if known else None
            x += width

    @staticmethod
    def _wide_ok(text: str) -> bool:
        """Every character is one or two cells wide (none zero, as combining marks are)."""
        return all(cell_len(ch) in (1, 2) for ch in text)

    # -- what is sent ---------------------------------------------------------------------
    def _goto(self, y: int, x: int, row: list) -> None:
        """Put the cursor at (y, x): across unchanged cells, or with a move."""
        if self.cursor != (y, x) and not self._bridge(y, x, row):
            self._move(y, x)

    def _bridge(self, y: int, x: int, row: list) -> bool:
        """Send the unchanged cells between the cursor and `x` again, if that is cheaper
        than a move."""
        cursor = self.cursor
        if cursor is None or cursor[0] != y or not 0 < x - cursor[1] <= _BRIDGE:
            return False
        cells = row[cursor[1] : x]
        if any(c is None or c[0] == "" or cell_len(c[0]) != 1 for c in cells):
            return False
        move = len(self._move_code(y, x))
        cost, look, pieces = 0, self.look, []
        for ch, cell_look in cells:
            code, look = style_for(look, ch, cell_look)
            pieces += [code, ch]
            cost += len(code) + len(ch.encode())
            if cost > move:
                return False
        self._out += pieces
        self.look, self.cursor = look, (y, x)
        return True

    def _move_code(self, y: int, x: int) -> str:
        cursor = self.cursor
        if cursor is not None and cursor[0] == y and cursor[1] < x:
            return "\x1b[C" if x - cursor[1] == 1 else f"\x1b[{x - cursor[1]}C"
        if cursor is not None and cursor[0] == y and x == 0:
            return "\r"
        return f"\x1b[{y + 1}H" if x == 0 else f"\x1b[{y + 1};{x + 1}H"

    def _move(self, y: int, x: int) -> None:
        self._out.append(self._move_code(y, x))
        self.cursor = (y, x)

    def _sync_look(self) -> None:
        if self._look is not None and self._look != self.look:
            self._out.append(change(self.look, self._look))
            self.look = self._look

    def _unknown(self, text: str) -> None:
        """Something not understood: it is sent as it is, where and in the style the
        write put it, and every cell is unknown from then on."""
        if self._at is not None and self._at != self.cursor:
            self._move(*self._at)
        elif self._at is None and self._lost is not None:  # after a newline: as it was
            self._move(*self._lost[0])
            self._out += self._lost[1]
        self._sync_look()
        self._out.append(text)
        self._forget_all()

    def _forget_all(self) -> None:
        self._lost = None
        self.rows = {}
        self.cursor = self._at = None
        self.look = self._look = None


# -- the driver ----------------------------------------------------------------------------------


def diffing(driver_class: type[Driver]) -> type[Driver]:
    """`driver_class` with every write cut by a `ScreenDiff` of its own."""
    if issubclass(driver_class, _Diffing):
        return driver_class
    made = _DRIVERS.get(driver_class)
    if made is None:
        made = _DRIVERS[driver_class] = type(driver_class.__name__, (_Diffing, driver_class),
                                             {"__module__": __name__})
    return made


class _Diffing:
    """A driver mixin: `write` sends what a `ScreenDiff` makes of the data. The screen is
    counted unknown when the app's size changes (a terminal may redraw, reflow or clear
    itself as it is resized; Textual repaints the whole screen after a resize)."""

    _screen_diff: ScreenDiff | None = None
    _screen_size = None

    def __init__(self, app, *args, **kwargs) -> None:
        super().__init__(app, *args, **kwargs)  # type: ignore[call-arg]
        self._diff_app = app  # (the app it drives: Textual's Driver takes it first)

    def write(self, data: str) -> None:
        self.write_cut(data)

    def write_cut(self, data: str) -> str:
        """Write `data` cut by the screen diff; what was sent."""
        diff = self._screen_diff
        if diff is None:
            try:
                from textual.drivers.linux_driver import LinuxDriver
            except ImportError:  # Windows: its console's TERM says nothing
                LinuxDriver = ()  # type: ignore[assignment]  # noqa: N806
            # how the terminal erases: as the app says (a served client's, from its TERM),
            # else as this process's own terminal's TERM says
            erase = getattr(self._diff_app, "screen_erases", None)
            if erase is None:
                erase = isinstance(self, LinuxDriver) and erases_here(os.environ.get("TERM"))
            diff = self._screen_diff = ScreenDiff(erase)
        size = getattr(self._diff_app, "size", None)
        if size != self._screen_size:
            self._screen_size = size
            diff.forget()
        out = diff.write(data)
        super().write(out)  # type: ignore[misc]
        return out

    def write_as(self, data: str, out: str, model: ScreenDiff) -> None:
        """Write `data`, which `model`'s screen diff, in the state this one is in now,
        has cut to `out`: `out` is sent, and this screen diff takes `model`'s state (a
        class's students drawn by one of them: the cut made once for all who showed the
        same; bench/README.md, "The teacher's key to 30 screens, fourth round")."""
        diff = self._screen_diff
        if diff is None or getattr(self._diff_app, "size", None) != self._screen_size:
            self.write(data)
            return
        diff.take(model)
        super().write(out)  # type: ignore[misc]


_DRIVERS: dict[type, type] = {}


@functools.cache
def erases_here(term: str | None) -> bool:
    """`erases` for this process's own terminal, read with curses: about 2 ms, where
    `tput` costs two processes (about 20 ms) on the way to the app's first frame.
    (curses reads terminfo for one terminal a process, so only for this one.)"""
    if not term:
        return False
    try:
        import curses

        curses.setupterm(term, sys.__stdout__.fileno() if sys.__stdout__ else 1)
        ech = curses.tigetstr("ech")
        return curses.tigetflag("bce") == 1 and ech is not None \
            and curses.tparm(ech, 7) == b"\x1b[7X"
    except Exception:  # noqa: BLE001 - no curses, no terminfo entry, no stdout: blanks
        return False


@functools.lru_cache(maxsize=64)  # (a class's clients name a few terminal types)
def erases(term: str | None) -> bool:
    """Does terminal `term` erase in the background colour in use (terminfo's `bce`),
    and a number of cells in place (`ech`)? Without both, blanks are sent as blanks.
    (Asked of `tput`, once per terminal type: a served class has many.)"""
    if not term:
        return False
    try:  # tput, not curses: curses reads terminfo for one terminal a process
        bce = subprocess.run(["tput", "-T", term, "bce"], capture_output=True, timeout=5)
        ech = subprocess.run(["tput", "-T", term, "ech", "7"], capture_output=True, timeout=5)
        return bce.returncode == 0 and ech.stdout == b"\x1b[7X"
    except (OSError, subprocess.SubprocessError):  # no tput
        return False
