"""`ControllerEventManager`: one queue, one consumer (Kafka's ControllerEventManager).

Every ZooKeeper watch, session event, timer and request the controller reacts to becomes an event on one queue,
consumed by one task, so the controller's state has a single writer and handlers never interleave.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("controller")


class ControllerMovedError(Exception):
    """This broker is no longer the controller: its epoch was fenced or /controller names another broker."""


@dataclass(slots=True)
class ControllerEvent:
    """A unit of controller work; `future`, if any, gets its result."""

    name: str
    run: Callable[[], Awaitable[Any]]
    future: asyncio.Future[Any] | None = None

    def fail(self, error: Exception) -> None:
        if self.future is not None and not self.future.done():
            self.future.set_exception(error)


FailureHandler = Callable[[ControllerEvent, Exception], Awaitable[None]]


class ControllerEventManager:
    """Runs events one at a time, in the order they were put. A failing event fails its future and is handed to
    `on_failure` (which decides whether the controller steps down); the loop goes on."""

    def __init__(self, name: str, on_failure: FailureHandler) -> None:
        self.name = name
        self._on_failure = on_failure
        self._queue: asyncio.Queue[ControllerEvent] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._process(), name=self.name)

    async def stop(self, reason: str) -> None:
        """Stop the loop; events still queued fail with ControllerMovedError(reason)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        while not self._queue.empty():
            self._queue.get_nowait().fail(ControllerMovedError(reason))

    def put(self, name: str, run: Callable[[], Awaitable[Any]]) -> None:
        """Queue an event nobody waits for."""
        self._queue.put_nowait(ControllerEvent(name, run))

    def request(self, name: str, run: Callable[[], Awaitable[Any]]) -> asyncio.Future[Any]:
        """Queue an event; the future gets what `run` returns (or raises). A future the requester cancels or
        completes before its turn skips the event."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(ControllerEvent(name, run, future))
        return future

    async def _process(self) -> None:
        while True:
            event = await self._queue.get()
            if event.future is not None and event.future.done():  # the requester gave up
                continue
            log.debug("%s processing %s", self.name, event.name)
            try:
                result = await event.run()
            except asyncio.CancelledError:
                event.fail(ControllerMovedError(f"{self.name} is shutting down"))
                raise
            except Exception as e:
                event.fail(e)
                await self._on_failure(event, e)
            else:
                if event.future is not None and not event.future.done():
                    event.future.set_result(result)
