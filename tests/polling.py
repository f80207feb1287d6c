"""Waiting in tests: poll a condition until it holds or a deadline passes (never a bare sleep), in async tests
(`eventually`), in plain ones (`wait_for`), and for a consumer's records (`poll_records`).

A probe answers "not yet" with None, False or an empty collection; anything else (0 included) is its result,
which the wait returns. On timeout the test fails, saying what it waited for (`what`: a string, or a function
giving the last state seen).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Sized
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    from client.consumer import Consumer, ConsumerRecord

#: How long a wait lasts unless a test says otherwise.
WAIT_S = 30.0
#: How long a wait sleeps between two probes unless a test says otherwise.
POLL_S = 0.05

T = TypeVar("T")
What = str | Callable[[], str]


class _Deadline:
    """The deadline of one wait, and what to say when it passes."""

    def __init__(self, what: What, timeout_s: float) -> None:
        self.what = what
        self.timeout_s = timeout_s
        self.at = time.monotonic() + timeout_s

    def check(self) -> None:
        if time.monotonic() > self.at:
            what = self.what() if callable(self.what) else self.what
            pytest.fail(f"timed out after {self.timeout_s} s waiting for {what}")


def _answered(result: Any) -> bool:
    return not (result is None or result is False or (isinstance(result, Sized) and len(result) == 0))


async def eventually(probe: Callable[[], T | None] | Callable[[], Awaitable[T | None]], what: What, *,
                     timeout_s: float = WAIT_S, interval_s: float = POLL_S) -> T:
    """Call `probe` (a function or a coroutine function) every interval_s until it answers; return its answer."""
    deadline = _Deadline(what, timeout_s)
    while True:
        result = probe()
        if inspect.isawaitable(result):
            result = await result
        if _answered(result):
            return result
        deadline.check()
        await asyncio.sleep(interval_s)


def wait_for(probe: Callable[[], T | None], what: What, *, timeout_s: float = WAIT_S, interval_s: float = POLL_S) -> T:
    """`eventually` for tests that are not coroutines: blocks between probes."""
    deadline = _Deadline(what, timeout_s)
    while True:
        result = probe()
        if _answered(result):
            return result
        deadline.check()
        time.sleep(interval_s)


async def poll_records(consumer: Consumer, count: int, what: str | None = None, *, timeout_s: float = WAIT_S,
                       poll_ms: int = 200) -> list[ConsumerRecord]:
    """Poll `consumer` (each poll waits up to poll_ms for records) until it has returned at least `count` records;
    all it returned, in order."""
    records: list[ConsumerRecord] = []

    async def enough() -> list[ConsumerRecord] | None:
        records.extend(await consumer.poll(timeout_ms=poll_ms))
        return records if len(records) >= count else None

    return await eventually(enough, lambda: f"{what or f'{count} records'} (got offsets {[r.offset for r in records]})",
                            timeout_s=timeout_s, interval_s=0)
