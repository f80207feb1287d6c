"""The console's web server (aiohttp): the page and its two files, the cluster's state as JSON, and a stream of
server-sent events: the whole state and the timeline when a page connects, then a patch each time the state changes
and the timeline's new entries as they are written."""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from importlib import resources
from typing import Any

from aiohttp import web

from client.console import model
from client.console.groups import GroupWatch
from client.console.timeline import StateChangeTail, entry_json
from client.console.watch import ClusterWatch

#: The timeline entries a page gets when it connects (and keeps).
TIMELINE_LENGTH = 1000
_KEEPALIVE_S = 15.0
_STATIC = {"/": ("index.html", "text/html"), "/console.js": ("console.js", "text/javascript"),
           "/console.css": ("console.css", "text/css")}


class Console:
    """Keeps the latest state of the cluster and the timeline, and pushes what changes to every connected page.

    `source` says what is watched (shown on the page); `timeline_note` says why there is no timeline when `tail` is
    None."""

    def __init__(self, watch: ClusterWatch, tail: StateChangeTail | None, *, source: str,
                 timeline_note: str = "", groups: GroupWatch | None = None) -> None:
        self.watch = watch
        self.tail = tail
        self.groups = groups
        self.source = source
        self.timeline_note = timeline_note
        self.state: model.Json = self._state()
        self.timeline: deque[dict[str, Any]] = deque(maxlen=TIMELINE_LENGTH)
        self._pages: set[asyncio.Queue[bytes | None]] = set()

    async def run(self) -> None:
        """Refresh the state and the timeline every poll interval, pushing changes, until cancelled."""
        while True:
            started = time.monotonic()
            await self.refresh()
            await asyncio.sleep(max(0.0, self.watch.interval_s - (time.monotonic() - started)))  # the cadence

    async def refresh(self) -> None:
        """One round: the state's patch and the timeline's new entries, pushed if there are any."""
        await self.watch.discover()
        state = self._state()
        patch = model.diff(self.state, state)
        self.state = state
        if patch:
            self._push("patch", patch)
        if self.tail is not None:
            entries = [entry_json(e) for e in await asyncio.to_thread(self.tail.read_new)]
            if entries:
                self.timeline.extend(entries)
                self._push("timeline", entries)

    def app(self) -> web.Application:
        """The web application: `/` (the page, its script and style), `/state.json`, `/events`."""
        app = web.Application()
        for path in _STATIC:
            app.router.add_get(path, self._static)
        app.router.add_get("/state.json", self._state_json)
        app.router.add_get("/events", self._events)
        app.on_shutdown.append(self._close_pages)
        return app

    def _state(self) -> model.Json:
        timeline = {"available": self.tail is not None, "note": self.timeline_note}
        groups = {"groups": self.groups.groups} if self.groups is not None else {}
        return {"source": self.source, "timeline": timeline, **self.watch.snapshot(), **groups}

    def _push(self, event: str, data: object) -> None:
        message = _event(event, data)
        for page in self._pages:
            page.put_nowait(message)

    async def _static(self, request: web.Request) -> web.Response:
        name, content_type = _STATIC[request.path]
        body = resources.files("client.console").joinpath("static", name).read_bytes()
        return web.Response(body=body, content_type=content_type, charset="utf-8",
                            headers={"Cache-Control": "no-cache"})

    async def _state_json(self, _request: web.Request) -> web.Response:
        return web.json_response({**self.state, "timeline_entries": list(self.timeline)})

    async def _events(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        page: asyncio.Queue[bytes | None] = asyncio.Queue()
        page.put_nowait(_event("state", self.state))
        page.put_nowait(_event("timeline", list(self.timeline)))
        self._pages.add(page)
        try:
            while True:
                try:
                    async with asyncio.timeout(_KEEPALIVE_S):
                        message = await page.get()
                except TimeoutError:
                    message = b": keep-alive\n\n"
                if message is None:
                    break
                await response.write(message)
        except ConnectionResetError:  # the page went away
            pass
        finally:
            self._pages.discard(page)
        return response

    async def _close_pages(self, _app: web.Application) -> None:
        for page in self._pages:
            page.put_nowait(None)


def _event(event: str, data: object) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def serve(console: Console, host: str, port: int) -> tuple[web.AppRunner, str]:
    """Start serving the console on host:port (0: a free port); the runner (to clean up) and the page's URL."""
    runner = web.AppRunner(console.app(), access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    bound_host, bound_port = runner.addresses[0][:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    return runner, f"http://{shown}:{bound_port}/"
