"""A tiny DevTools-protocol driver for Debian's headless chromium (no browser download, no playwright): start
chromium, open a page, evaluate JavaScript, collect console errors, exceptions and network requests, and take
screenshots. Used by the report test and the report benchmark.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any, Self

CHROMIUM = Path(os.environ.get("RESCUE_SIM_CHROMIUM", "/usr/bin/chromium"))
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not CHROMIUM.is_file():
        return f"chromium not found at {CHROMIUM} (Debian: apt-get install -y chromium; or set RESCUE_SIM_CHROMIUM)"
    try:
        import websockets.sync.client  # noqa: F401
    except ImportError:
        return "the websockets package is missing (pip install -e '.[test]')"
    return None


# What chromium answers when an evaluation meets a page that is navigating away.
NAVIGATING = ("Inspected target navigated or closed", "Execution context was destroyed", "Cannot find context")


class Page:
    def __init__(self, ws_url: str):
        from websockets.sync.client import connect

        self._conn = connect(ws_url, max_size=None, open_timeout=20)
        self.ws = self._conn.__enter__()
        self.next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, timeout: float = 30) -> dict:
        self.next_id += 1
        mine = self.next_id
        self.ws.send(json.dumps({"id": mine, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{method}: no answer in {timeout} s")
            msg = json.loads(self.ws.recv(timeout=left))
            if msg.get("id") == mine:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def pump(self, seconds: float) -> None:
        """Read events for a while (console messages arrive asynchronously)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = json.loads(self.ws.recv(timeout=left))
            except TimeoutError:
                return
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str, timeout: float = 30) -> dict:
        seen = len(self.events)
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events[seen:]:
                if e["method"] == method:
                    return e
            seen = len(self.events)
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {method} in {timeout} s")
            msg = json.loads(self.ws.recv(timeout=left))
            if "method" in msg:
                self.events.append(msg)

    def eval(self, expression: str, timeout: float = 30) -> Any:
        res = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, timeout
        )
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expression!r} threw: {res['exceptionDetails'].get('text')}")
        return res["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.eval(expression)
            except RuntimeError as err:
                # A click that navigates tears down the page being asked; the next page answers the next poll.
                if not any(m in str(err) for m in NAVIGATING):
                    raise
                value = None
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(f"{expression!r} not true in {timeout} s")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors seen so far."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(f"exception: {d.get('text')} {d.get('exception', {}).get('description', '')}")
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a)) for a in p.get("args", [])))
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"log: {p['entry'].get('text')} ({p['entry'].get('url', '')})")
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"]

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self._conn.__exit__(None, None, None)


class Browser:
    """Headless chromium with a private profile in `profile_dir`; use as a context manager."""

    def __init__(self, profile_dir: Path):
        self.profile = profile_dir
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def __enter__(self) -> Self:
        self.profile.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().strip()):
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not open its DevTools port in 60 s")
            time.sleep(0.05)
        self.port = int(port_file.read_text().split()[0])
        return self

    def page(self, width: int = 1400, height: int = 1000) -> Page:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=10) as r:
            targets = json.loads(r.read())
        target = next(t for t in targets if t.get("type") == "page")
        page = Page(target["webSocketDebuggerUrl"])
        for domain in ("Runtime", "Log", "Page", "Network"):
            page.send(f"{domain}.enable")
        page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        return page

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)


def open_report(page: Page, path: Path, timeout: float = 60) -> float:
    """Navigate to a report file and wait until it says it is ready; returns ms from navigation to ready."""
    page.send("Page.navigate", {"url": path.resolve().as_uri()})
    page.wait_event("Page.loadEventFired", timeout)
    page.wait_for("window.__report && window.__report.ready === true", timeout)
    return float(page.eval("window.__report.readyAt"))
