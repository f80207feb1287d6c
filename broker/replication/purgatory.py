"""Delayed operations: requests parked until a condition holds or a timeout passes (Kafka's purgatory).

An operation watches one or more keys (topic-partitions). Whoever changes the state behind a key
(an append, an HW move, a leader change) calls :meth:`Purgatory.check_and_complete` with it, and
every operation watching that key tries to complete. Everything runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class DelayedOperation(ABC, Generic[T]):
    """A parked request: completes once (when :meth:`try_complete` says so, or at its timeout)."""

    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        self.future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._timer: asyncio.TimerHandle | None = None

    @property
    def completed(self) -> bool:
        return self.future.done()

    @abstractmethod
    def try_complete(self) -> bool:
        """Complete now (via :meth:`force_complete`) if the condition holds; returns whether it did."""

    @abstractmethod
    def result(self) -> T:
        """The response to send, computed at completion time."""

    def force_complete(self) -> bool:
        if self.future.done():
            return False
        if self._timer is not None:
            self._timer.cancel()
        self.future.set_result(self.result())
        return True


class Purgatory:
    """Operations waiting on keys, each completed by the first of its condition or its timeout."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._watchers: dict[Hashable, list[DelayedOperation]] = {}

    def try_complete_else_watch(self, operation: DelayedOperation[T], keys: Iterable[Hashable]) -> asyncio.Future[T]:
        """Complete at once if possible; otherwise watch ``keys`` and arm the timeout."""
        if operation.try_complete():
            return operation.future
        keys = list(keys)
        for key in keys:
            self._watchers.setdefault(key, []).append(operation)
        loop = asyncio.get_running_loop()
        operation._timer = loop.call_later(operation.timeout_ms / 1000, operation.force_complete)
        operation.future.add_done_callback(lambda _f: self._unwatch(operation, keys))
        return operation.future

    def check_and_complete(self, key: Hashable) -> int:
        """Let every operation watching ``key`` try to complete; returns how many did."""
        return self.check_and_complete_all((key,))

    def check_and_complete_all(self, keys: Iterable[Hashable]) -> int:
        """Let every operation watching any of ``keys`` try to complete, once however many of its keys changed
        (a follower's fetch watches thousands); returns how many did."""
        operations = {id(operation): operation for key in keys for operation in self._watchers.get(key, ())}
        return sum(1 for operation in operations.values() if not operation.completed and operation.try_complete())

    def _unwatch(self, operation: DelayedOperation, keys: list[Hashable]) -> None:
        for key in keys:
            watching = self._watchers.get(key)
            if watching is None:
                continue
            if operation in watching:
                watching.remove(operation)
            if not watching:
                del self._watchers[key]

    def watched(self) -> int:
        """Operations still waiting (for tests and metrics)."""
        return len({id(op) for ops in self._watchers.values() for op in ops})

    def complete_all(self) -> None:
        """Complete everything now (at shutdown)."""
        for operation in {id(op): op for ops in self._watchers.values() for op in ops}.values():
            operation.force_complete()
