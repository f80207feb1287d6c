"""Merging state-change.log files (protocol/state_change.py: one JSON object per line), as Kafka's
StateChangeLogMerger does: the entries of every file in time order, filtered by topic, partitions and time range,
so that one partition's story can be read across the cluster. Pure but for reading the files.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


class MergeError(ValueError):
    """A log that cannot be read, or a time that cannot be parsed."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One state change: when, from which file, and its fields."""

    time_ms: int
    log: str
    fields: dict[str, Any]


def parse_time(text: str) -> int:
    """An ISO 8601 time (2024-05-01T10:00:00, with optional fraction and offset; local time without one) in ms."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise MergeError(f"{text!r} is not an ISO 8601 time such as 2024-05-01T10:00:00.000") from None
    return int(moment.timestamp() * 1000)


def read_log(path: Path) -> tuple[list[Entry], int]:
    """The entries of one state-change.log in file order, and how many lines were not state changes."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as e:
        raise MergeError(f"cannot read {path}: {e.strerror}") from None
    parsed = [parse_entry(line, str(path)) for line in lines]
    entries = [entry for entry in parsed if entry is not None]
    return entries, len(parsed) - len(entries)


def parse_entry(line: str, log: str) -> Entry | None:
    """One line of the state-change log `log` as an entry; None if it is not a state change."""
    try:
        fields = json.loads(line)
    except ValueError:
        return None
    if not isinstance(fields, dict) or not isinstance(fields.get("time_ms"), int):
        return None
    return Entry(fields["time_ms"], log, fields)


def merge(logs: Iterable[tuple[str, list[Entry]]], *, topic: str | None = None,
          partitions: Collection[int] | None = None, start_ms: int | None = None,
          end_ms: int | None = None) -> Iterator[Entry]:
    """The entries of every log in time order (ties in the order of the logs, then of their lines), keeping
    those of `topic` and `partitions` within [start_ms, end_ms]."""

    def wanted(entry: Entry) -> bool:
        return ((topic is None or entry.fields.get("topic") == topic)
                and (partitions is None or entry.fields.get("partition") in partitions)
                and (start_ms is None or entry.time_ms >= start_ms)
                and (end_ms is None or entry.time_ms <= end_ms))

    keyed = [[(e.time_ms, index, line, e) for line, e in enumerate(sorted(entries, key=lambda e: e.time_ms))
              if wanted(e)] for index, (_, entries) in enumerate(logs)]
    for *_, entry in heapq.merge(*keyed):
        yield entry


@dataclass(frozen=True, slots=True)
class Described:
    """An entry in words: who made the change, to which partition, the state, and why."""

    who: str
    where: str
    what: str
    why: str


def describe_entry(entry: Entry) -> Described:
    """The parts of an entry a reader wants, in words."""
    f = entry.fields
    if "replica_state" in f:
        what = f"replica {f.get('replica')} {f.get('replica_state')}"
    else:
        what = (f"leader {f.get('leader')} leader_epoch {f.get('leader_epoch')} isr {f.get('isr')} "
                f"controller_epoch {f.get('controller_epoch')}")
    return Described(who=f"{f.get('source', '?')} {f.get('broker', '?')}",
                     where=f"{f.get('topic', '?')}-{f.get('partition', '?')}", what=what, why=str(f.get("reason", "")))


def format_entry(entry: Entry) -> str:
    """One readable line: time (UTC), who, which partition, the state and why."""
    when = datetime.fromtimestamp(entry.time_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    described = describe_entry(entry)
    return f"{when} {described.who:<14} {described.where}: {described.what}: {described.why}"
