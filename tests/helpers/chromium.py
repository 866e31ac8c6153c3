"""Headless Chromium (Debian's `chromium`) driven over the DevTools protocol on a pipe
(`--remote-debugging-pipe`: the browser reads commands on fd 3 and writes answers and events on
fd 4, each a JSON message ended by a NUL byte), for tests that check what a page shows.

`open_page(url, profile_dir, timeout_s)` starts one browser, loads the page, and returns a
`PageSession`: `navigate(url)` (another page, in the same browser), `evaluate(expression)` (a
JavaScript expression's value, by value), `screenshot()` (PNG bytes of the whole page) and
`problems` (every console error, uncaught exception and log entry of level error seen while it
loaded and since). Every wait is bounded by the timeout; the browser is closed (then killed, if it
does not close) when the `with` block ends.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe")


def chromium() -> str | None:
    return shutil.which("chromium")


class BrowserError(AssertionError):
    """The browser did not answer in time, or answered with an error."""


class PageSession:
    def __init__(self, process: subprocess.Popen[bytes], to_browser: int, from_browser: int, deadline: float):
        self.process, self._to, self._from, self.deadline = process, to_browser, from_browser, deadline
        self._next_id = 0
        self._buffer = b""
        self.session: str | None = None
        self.events: list[dict[str, Any]] = []

    # ---- the protocol -----------------------------------------------------------------------------
    def _message(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self._from], [], [], left)[0]:
                raise BrowserError("chromium did not answer in time")
            chunk = os.read(self._from, 1 << 20)
            if not chunk:
                raise BrowserError(f"chromium closed its pipe (exit {self.process.poll()})")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def send(self, method: str, params: dict[str, Any] | None = None, *, browser: bool = False) -> dict[str, Any]:
        self._next_id += 1
        command: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if not browser and self.session is not None:
            command["sessionId"] = self.session
        os.write(self._to, json.dumps(command).encode() + b"\0")
        while True:
            message = self._message()
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method: str) -> dict[str, Any]:
        for index, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(index)
        while True:
            message = self._message()
            if message.get("method") == method:
                return message
            self.events.append(message)

    # ---- what a test asks -------------------------------------------------------------------------
    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def navigate(self, url: str) -> None:
        """Load `url` in the page and wait for its load event."""
        self.send("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")

    def screenshot(self) -> bytes:
        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        return base64.b64decode(data)

    @property
    def problems(self) -> list[str]:
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(f"uncaught: {params['exceptionDetails'].get('text')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(f"log: {params['entry'].get('text')} ({params['entry'].get('url', '')})")
        return found

    def close(self) -> None:
        try:
            self.send("Browser.close", browser=True)
        except (BrowserError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to, self._from):
            os.close(fd)

    def __enter__(self) -> PageSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _above_9(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


def open_page(url: str, profile_dir: Path, timeout_s: float = 60.0, width: int = 1200,
              height: int = 900) -> PageSession:
    binary = chromium()
    assert binary is not None, "no chromium on PATH"
    # every end above 9, so that the child's dup2 onto 3 and 4 never meets one of them there (a dup2
    # onto itself would leave it close-on-exec)
    commands_read, commands_write, answers_read, answers_write = (_above_9(fd) for fd in (*os.pipe(), *os.pipe()))

    def pipes_at_3_and_4() -> None:  # the protocol's fixed descriptors in the browser
        os.dup2(commands_read, 3)
        os.dup2(answers_write, 4)

    process = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={profile_dir}", f"--window-size={width},{height}",
                                "about:blank"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, close_fds=False, preexec_fn=pipes_at_3_and_4)
    os.close(commands_read)
    os.close(answers_write)
    page = PageSession(process, commands_write, answers_read, time.monotonic() + timeout_s)
    try:
        target = page.send("Target.createTarget", {"url": "about:blank"}, browser=True)["targetId"]
        page.session = page.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 browser=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            page.send(f"{domain}.enable")
        page.navigate(url)
    except BaseException:
        page.close()
        raise
    return page
