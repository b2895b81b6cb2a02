"""A small driver of a real headless Chromium over the DevTools protocol (CDP), for browser tests.

It starts the system's ``chromium`` with ``--remote-debugging-port=0``, connects to the first page
over a WebSocket (the ``websockets`` package the server already depends on through uvicorn) and
offers what the console tests need: navigate, evaluate JavaScript (awaiting promises), wait for a
condition, record every network request, take screenshots.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import ClientConnection, connect


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    def __init__(self, binary: str, width: int = 1440, height: int = 900) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="stratamem-cdp-"))
        self.proc = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--remote-debugging-port=0",
                "--remote-allow-origins=*",
                f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text().strip():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise RuntimeError(f"chromium did not start: {err[-2000:]}")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        pages = [t for t in httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json() if t["type"] == "page"]
        self.ws: ClientConnection = connect(pages[0]["webSocketDebuggerUrl"], max_size=None)
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Network.enable")

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60) -> dict[str, Any]:
        msg_id = next(self.ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            msg = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                result: dict[str, Any] = msg.get("result", {})
                return result
            if "method" in msg:
                self.events.append(msg)

    def navigate(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression (a promise is awaited); raises on a JS exception."""
        out = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True})
        if "exceptionDetails" in out:
            raise RuntimeError(f"JS error in {expression!r}: {out['exceptionDetails']}")
        return out["result"].get("value")

    def wait(self, expression: str, timeout: float = 30) -> Any:
        """Poll until the expression is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                # a DOM node comes back by value as {}: count it as found
                last = self.eval(f"(() => {{ const v = ({expression}); return v instanceof Node ? true : v; }})()")
            except RuntimeError:
                last = None
            if last:
                return last
            time.sleep(0.15)
        body = self.eval("document.body ? document.body.innerText.slice(0, 2000) : ''")
        raise AssertionError(f"timed out waiting for {expression!r}; page text: {body}")

    def requested_urls(self) -> list[str]:
        """Every URL the page requested so far (Network.requestWillBeSent)."""
        self.call("Runtime.evaluate", {"expression": "1"})  # drain pending events
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)
