"""Command palette entries that take you somewhere: a step, a pass, a node, or the
first difference `mgtui diff` found."""

from __future__ import annotations

import re
from functools import partial

from rich.text import Text
from textual.command import Hit, Hits, Provider
from textual.markup import escape


DIFFERENCE = "Go to the first difference"


class GoToProvider(Provider):
    """Command palette entries: go to step N, go to pass N, go to a node by label."""

    async def search(self, query: str) -> Hits:
        app = self.app
        if not hasattr(app, "debugger"):
            return
        screen = app.debugger
        trace = screen.trace
        if trace is None:
            return
        matcher = self.matcher(query)
        text = query.strip().lower()
        if screen.difference is not None and matcher.match(DIFFERENCE):
            yield Hit(matcher.match(DIFFERENCE), DIFFERENCE, screen.goto_difference,
                      help="where mgtui diff found it, both sides below")
        number = re.search(r"(\d+)\s*$", text)
        if number:
            n = int(number.group(1))
            if "pass" not in text and n <= screen.total:
                yield Hit(1.0, f"Go to step {n}", partial(screen.goto, n),
                          help=f"of {screen.total} steps")
            if "step" not in text and 1 <= n <= len(trace.passes):
                p = trace.passes[n - 1]
                yield Hit(0.9, f"Go to pass {n} ({p.kind})", partial(screen.goto, p.start + 1),
                          help=f"steps {p.start + 1}–{p.end}")
        label = text.removeprefix("node").strip() if text.startswith("node") else query.strip()
        if not label:
            return
        found = 0
        needle = label.lower()
        session = screen.session
        for nid in range(trace.node_count):
            name = trace.label(nid)
            if needle in name.lower():
                score = matcher.match(f"node {name}") or 0.5
                what = f"node {nid}, op {trace.op(nid) or 'leaf'}"
                # a label is scenario text: a Text prompt, escaped help, never markup
                yield Hit(score, Text(f"Go to node {name}"), partial(screen.goto_node, nid),
                          text=f"Go to node {name}", help=escape(what))
                made = trace.index.created_at(nid)
                if made is not None:
                    title = f"Go to node {name}: where it was made"
                    yield Hit(score * 0.99, Text(title), partial(screen.goto_node, nid, "made"),
                              text=title, help=escape(f"step {made + 1} · {what}"))
                step = session.backward_step(nid) if session is not None else None
                if step is not None:
                    title = f"Go to node {name}: where its _backward ran"
                    yield Hit(score * 0.98, Text(title), partial(screen.goto_node, nid, "backward"),
                              text=title, help=escape(f"step {step} · {what}"))
                found += 1
                if found >= 20:
                    break

    async def discover(self) -> Hits:
        app = self.app
        if hasattr(app, "debugger") and app.debugger.trace is not None:
            yield Hit(1.0, "Go to step … (type: step 14)", lambda: None)
            yield Hit(1.0, "Go to pass … (type: pass 3)", lambda: None)
            yield Hit(1.0, "Go to node … (type: node w1)", lambda: None)
            if app.debugger.difference is not None:
                yield Hit(1.0, DIFFERENCE, app.debugger.goto_difference)
