"""`ControllerActivity`: whether this broker acts as the controller now, and the requests waiting for it.

A broker acts as the controller from the moment it is elected (or resumes a suspended term) until it resigns, or
until its ZooKeeper session is suspended or lost, when it stops at once. Every room checks `is_active` before it
acts; the requests of brokers and clients are answered through `answer`, as controller events.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from controller.event_manager import ControllerEventManager, ControllerMovedError

log = logging.getLogger("controller")

T = TypeVar("T")


class ControllerActivity:
    """This broker's acting as the controller: on or off, counted in stints (each time it starts acting), with the
    requests waiting for a controller event's answer."""

    def __init__(self, broker_id: int, events: ControllerEventManager) -> None:
        self.broker_id = broker_id
        self._events = events
        self._active = False
        self._stint = 0
        self._answering: set[asyncio.Future[Any]] = set()  # requests waiting for their event's answer

    @property
    def is_active(self) -> bool:
        """True while this broker is the controller (false from the moment its session is suspended)."""
        return self._active

    @property
    def stint(self) -> int:
        """Goes up each time this broker starts acting as the controller: what an earlier stint started (requests
        to brokers whose answers come later) is not this one's to finish."""
        return self._stint

    def acts_in(self, stint: int) -> bool:
        """True while this broker acts as the controller in that stint (not stopped, nor started again since)."""
        return self._active and self._stint == stint

    def start(self) -> None:
        """Elected, or a suspended term resumed: a new stint begins."""
        self._active = True
        self._stint += 1

    def stop(self) -> None:
        """Resigned."""
        self._active = False

    def cut_off(self, why: str) -> None:
        """Stop acting at once, before the resignation's turn in the queue: the requests waiting for an event
        (which may itself wait for ZooKeeper up to zookeeper.connection.timeout.ms) are refused now, so that their
        senders retry with the next controller instead of timing out."""
        self._active = False
        for answer in list(self._answering):
            if not answer.done():
                answer.set_exception(ControllerMovedError(f"broker {self.broker_id} stopped acting: {why}"))

    async def answer(self, name: str, run: Callable[[], Awaitable[T]], refuse: Callable[[str], T]) -> T:
        """Run a request as a controller event and return its answer; `refuse(why)` answers instead when this
        broker is not the controller, or stops being it before the event is done (the client retries elsewhere)."""
        if not self._events.running or not self._active:
            return refuse(f"broker {self.broker_id} is not the controller")
        answer = self._events.request(name, run)
        self._answering.add(answer)
        try:
            return await answer
        except Exception as e:  # fenced, failed and stepped down, or stopped acting meanwhile
            log.info("Controller %d: %s not done: %s", self.broker_id, name, e)
            return refuse(f"broker {self.broker_id} is no longer the controller")
        finally:
            self._answering.discard(answer)
