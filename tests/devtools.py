"""A headless Chromium (Debian's, `make setup`'s browser step) driven through its DevTools protocol, for the tests
of the pages minikafka makes (the console, the chaos report): open a page, evaluate JavaScript in it, collect what
it says on its console (errors above all), take screenshots.

The protocol is JSON messages over a websocket (aiohttp's client): commands carry an id and get an answer with it;
events have a method and no id. As root Chromium needs --no-sandbox; the other flags keep it from reaching out to a
network this machine does not have.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import shutil
from pathlib import Path
from typing import Any, Self

import aiohttp
import pytest

from tests.polling import eventually

CHROMIUM = "chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")
_START_S = 30.0
_COMMAND_S = 30.0


class Browser:
    """One Chromium with one page, its profile in `profile` (a fresh directory). ``async with`` starts and stops it.

    `problems` collects what the page reports as going wrong: console errors and assertions, uncaught exceptions,
    and the browser's own log entries of level error (a resource that failed to load, for one)."""

    def __init__(self, profile: Path, *, width: int = 1400, height: int = 900) -> None:
        self.profile = profile
        self.width = width
        self.height = height
        self.problems: list[str] = []
        self._process: asyncio.subprocess.Process | None = None
        self._session: aiohttp.ClientSession | None = None
        self._socket: aiohttp.ClientWebSocketResponse | None = None
        self._reader: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self._answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._loaded = asyncio.Event()

    async def __aenter__(self) -> Self:
        if shutil.which(CHROMIUM) is None:
            pytest.fail("chromium is not installed: run make setup")
        self.profile.mkdir(parents=True, exist_ok=True)
        self._process = await asyncio.create_subprocess_exec(
            CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
            f"--window-size={self.width},{self.height}", "about:blank",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        port_file = self.profile / "DevToolsActivePort"
        await eventually(lambda: port_file.exists() and len(port_file.read_text().splitlines()) >= 2,
                         f"chromium to write {port_file}", timeout_s=_START_S)
        port = int(port_file.read_text().splitlines()[0])
        self._session = aiohttp.ClientSession()
        async with self._session.get(f"http://127.0.0.1:{port}/json/list") as answer:
            targets = await answer.json()
        page = next(t for t in targets if t["type"] == "page")
        self._socket = await self._session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        self._reader = asyncio.create_task(self._read())
        for domain in ("Page", "Runtime", "Log"):
            await self.send(f"{domain}.enable")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._socket is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.send("Browser.close"), 5)
            await self._socket.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self._session is not None:
            await self._session.close()
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
            await self._process.wait()

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        """One command's result; AssertionError with the browser's message if it failed."""
        assert self._socket is not None
        command_id = next(self._ids)
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._answers[command_id] = answer
        await self._socket.send_json({"id": command_id, "method": method, "params": params})
        try:
            result = await asyncio.wait_for(answer, _COMMAND_S)
        finally:
            self._answers.pop(command_id, None)
        assert "error" not in result, f"{method} failed: {result['error']}"
        return result.get("result", {})

    async def open(self, url: str) -> None:
        """Navigate to `url` and wait for its load event."""
        self._loaded.clear()
        await self.send("Page.navigate", url=url)
        await asyncio.wait_for(self._loaded.wait(), _START_S)

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited); AssertionError if it threw."""
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in result, f"{expression!r} threw: {result['exceptionDetails']}"
        return result["result"].get("value")

    async def screenshot(self, path: Path) -> Path:
        """The whole page (not only the window) as a PNG at `path`."""
        metrics = await self.send("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        clip = {"x": 0, "y": 0, "width": max(size["width"], self.width), "height": size["height"], "scale": 1}
        shot = await self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    async def _read(self) -> None:
        assert self._socket is not None
        async for message in self._socket:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            data = message.json()
            answer = self._answers.get(data.get("id", -1))
            if answer is not None and not answer.done():
                answer.set_result(data)
            elif "method" in data:
                self._event(data["method"], data.get("params", {}))

    def _event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Page.loadEventFired":
            self._loaded.set()
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.problems.append(f"exception: {details.get('exception', {}).get('description') or details['text']}")
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            texts = [str(a.get("value", a.get("description", ""))) for a in params.get("args", [])]
            self.problems.append(f"console.{params['type']}: {' '.join(texts)}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            self.problems.append(f"log: {entry['text']} {entry.get('url', '')}".strip())
