"""Headless Chromium for the browser tests: how to find and start it here, and a small DevTools client.

``CHROMIUM_FLAGS`` are what Debian's ``chromium`` needs to start headless as root in a container
(../shared/NOTES.md). ``DevTools`` drives one page over the Chrome DevTools Protocol, so a test can
click, read the DOM after the page's script ran and take a screenshot with a single browser start.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def chromium_binary() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("no Chromium on PATH: bin/test installs Debian's `chromium`; install it to run the browser tests")


class DevTools:
    """One headless Chromium with one page, driven over its DevTools websocket."""

    def __init__(self, profile_dir: Path, width: int = 1400, height: int = 900) -> None:
        self._process = subprocess.Popen(
            [
                chromium_binary(),
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile_dir}",
                f"--window-size={width},{height}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._ids = itertools.count(1)
        # Every event the page sent (``{"method", "params"}``), in order; a test enables the domains it
        # wants (``Network.enable``, ``Runtime.enable``) and clears the list between pages.
        self.events: list[dict[str, Any]] = []
        self._resources = contextlib.ExitStack()
        try:
            port = self._wait_for_port(profile_dir / "DevToolsActivePort")
            self._socket = self._resources.enter_context(self._connect(port))
            self.call("Page.enable")
            self.call(
                "Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False
            )
        except BaseException:
            self.close()
            raise

    def _wait_for_port(self, port_file: Path, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self._process.returncode} before DevTools was up")
            if port_file.is_file():
                lines = port_file.read_text().splitlines()
                if lines and lines[0].isdigit():
                    return int(lines[0])
            time.sleep(0.1)
        raise TimeoutError("chromium did not open its DevTools port")

    @staticmethod
    def _connect(port: int):
        from websockets.sync.client import connect

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
            targets = json.load(response)
        page = next(target for target in targets if target.get("type") == "page")
        return connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=10)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        message_id = next(self._ids)
        self._socket.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self._socket.recv(timeout=60))
            if "method" in reply:
                self.events.append(reply)
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def settle(self, quiet: float = 1.5, timeout: float = 30) -> None:
        """Reads the page's events until none came for ``quiet`` seconds, or ``timeout`` passed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                message = json.loads(self._socket.recv(timeout=quiet))
            except TimeoutError:
                return
            if "method" in message:
                self.events.append(message)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str, ready: str, timeout: float = 30) -> None:
        """Navigates and waits until the JavaScript expression ``ready`` is true."""
        self.call("Page.navigate", url=url)
        self.wait_until(ready, timeout, f"the page at {url}")

    def wait_until(self, ready: str, timeout: float = 30, what: str = "the page") -> None:
        """Waits until the JavaScript expression ``ready`` is true (after a click, say)."""
        # Between the navigation and the new document's parse there is a moment with no body; asking
        # ``ready`` then would throw, so it is only asked once the new document has one.
        guarded = f"document.body !== null && Boolean({ready})"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.evaluate(guarded):
                return
            time.sleep(0.1)
        raise TimeoutError(f"{what} never became ready ({ready})")

    def click(self, x: float, y: float) -> None:
        """A real mouse click (press and release) at page coordinates."""
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y, button="none")
        for event_type in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=event_type, x=x, y=y, button="left", clickCount=1)

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self._resources.close()
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> DevTools:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
