"""A small Chrome DevTools Protocol client for the tests: headless Chromium driven over
`--remote-debugging-pipe` (its fds 3 and 4, JSON messages ended by NUL), so no port is
opened. One page, its Network and Runtime events kept, keys pressed as a user presses them.
"""

from __future__ import annotations

import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")
# key -> (code, Windows virtual key code, shift)
KEYS = {
    "n": ("KeyN", 78, False), "p": ("KeyP", 80, False), "g": ("KeyG", 71, False),
    "G": ("KeyG", 71, True), " ": ("Space", 32, False), "]": ("BracketRight", 221, False),
    "[": ("BracketLeft", 219, False), "ArrowRight": ("ArrowRight", 39, False),
    "ArrowLeft": ("ArrowLeft", 37, False),
}


def high(fd: int) -> int:
    """`fd` moved to a number above 9 (the old one closed)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return moved


class Chromium:
    """A headless Chromium with one page (`session`), closed by `close()`."""

    def __init__(self, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="mgtui-chromium-")
        to_chrome, self._in = os.pipe()
        self._out, from_chrome = os.pipe()
        # (moved above 9 first, so that making them 3 and 4 cannot clobber either)
        to_chrome, from_chrome = (high(to_chrome), high(from_chrome))
        # fds 3 and 4 in the browser, through bash (no preexec_fn in a threaded test run;
        # dash takes no fd above 9)
        script = f'exec "$0" "$@" 3<&{to_chrome} 4>&{from_chrome} {to_chrome}<&- {from_chrome}>&-'
        self.proc = subprocess.Popen(
            ["bash", "-c", script, str(CHROMIUM), *FLAGS, f"--user-data-dir={self.profile}",
             "--remote-debugging-pipe", "about:blank"],
            pass_fds=(to_chrome, from_chrome), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome)
        os.close(from_chrome)
        self.events: list[dict] = []
        self._replies: dict[int, queue.Queue] = {}
        self._lock = threading.Lock()
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Network", "Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=self.session)

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._out, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                for q in list(self._replies.values()):
                    q.put({"error": {"message": "the browser closed its pipe"}})
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message:
                    with self._lock:
                        q = self._replies.pop(message["id"], None)
                    if q is not None:
                        q.put(message)
                else:
                    self.events.append(message)

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        with self._lock:
            self._next += 1
            ident = self._next
            q: queue.Queue = queue.Queue()
            self._replies[ident] = q
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._in, json.dumps(message).encode() + b"\0")
        reply = q.get(timeout=self.timeout)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    # -- the page --------------------------------------------------------------------------
    def navigate(self, url: str) -> None:
        self.call("Page.navigate", {"url": url}, self.session)

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, self.session)
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"].get("text", "exception"))
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float | None = None) -> None:
        """Until `expression` is true in the page (asked every 50 ms)."""
        import time

        end = time.monotonic() + (timeout or self.timeout)
        while not self.evaluate(expression):
            if time.monotonic() > end:
                raise TimeoutError(f"the page never made {expression} true")
            time.sleep(0.05)

    def press(self, key: str) -> None:
        """A key pressed and let go, as a keyboard sends it."""
        code, vk, shift = KEYS[key]
        down = {"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk,
                "modifiers": 8 if shift else 0}
        if len(key) == 1:
            down["text"] = key
        self.call("Input.dispatchKeyEvent", down, self.session)
        self.call("Input.dispatchKeyEvent", {**down, "type": "keyUp", "text": ""}, self.session)

    def requests(self) -> list[str]:
        """The URL of every request the page made."""
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]

    def errors(self) -> list[str]:
        """Exceptions thrown in the page and errors logged (a blocked load among them)."""
        out = []
        for e in self.events:
            if e.get("method") == "Runtime.exceptionThrown":
                out.append(e["params"]["exceptionDetails"].get("text", "exception"))
            elif e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error":
                out.append(e["params"]["entry"]["text"])
            elif e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error":
                out.append(str(e["params"]["args"]))
        return out

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, queue.Empty, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._in, self._out):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)
