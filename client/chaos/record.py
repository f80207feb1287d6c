"""What a soak remembers for its report, pure: each fault as the nemesis injected and healed it, each change of a
partition's leadership as ZooKeeper held it, and when writes were acknowledged or failed. Times are
``time.monotonic()`` seconds; the report counts them from the start of the faults."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(slots=True)
class InjectedFault:
    """One fault: when it was injected, what the nemesis said of it, when it was healed (every cut removed, every
    broker continued or started) and when the cluster was back (every broker ready)."""

    number: int
    kind: str
    started: float
    said: list[str] = field(default_factory=list)
    healed: float | None = None
    recovered: float | None = None


@dataclass(frozen=True, slots=True)
class StateChange:
    """A partition's state znode as it was from `at` on: leader (-1: none), leader epoch and ISR."""

    at: float
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]


@dataclass
class WriteTimes:
    """When records were acknowledged (by partition), failed, or got no answer (unknown)."""

    acked: dict[int, list[float]] = field(default_factory=dict)
    failed: list[float] = field(default_factory=list)
    unknown: list[float] = field(default_factory=list)


def gaps(times: Sequence[float], start: float, end: float) -> list[tuple[float, float]]:
    """The intervals between consecutive times within (start, end), the bounds included as the first and last."""
    inner = sorted(t for t in times if start < t < end)
    return list(itertools.pairwise([start, *inner, end]))
