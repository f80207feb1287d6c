"""The producer history: one JSON line per record outcome, written as each outcome arrives.

A line is ``{"topic", "partition", "offset", "key", "value", "status", "error"}``: ``status`` is ``ok`` (then
``offset`` is where the record was written), ``failed`` (the record was certainly not written) or ``unknown`` (it
may have been: a timeout, a lost connection, NOT_ENOUGH_REPLICAS_AFTER_APPEND); ``offset`` is null unless ok.
Keys and values are strings: bytes that are not UTF-8 are kept as lone surrogates (Python's ``surrogateescape``,
``\\udcXX`` in the JSON) and come back byte for byte.

Every line is flushed as it is written, so a producer killed half-way leaves a valid prefix; the reader tolerates
a torn last line (with a warning). The verifier reads this file, and the chaos runner writes the same one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

OK, FAILED, UNKNOWN = "ok", "failed", "unknown"
STATUSES = (OK, FAILED, UNKNOWN)
_FIELDS = ("topic", "partition", "offset", "key", "value", "status", "error")


class HistoryError(ValueError):
    """A history file that is not JSON lines of the history format; the message names the file and line."""


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "surrogateescape")


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8", "surrogateescape")


@dataclass(frozen=True, slots=True)
class Outcome:
    """One record's outcome, as a history line holds it."""

    topic: str
    partition: int | None
    offset: int | None
    key: bytes | None
    value: bytes | None
    status: str
    error: str | None = None

    def to_json(self) -> str:
        return json.dumps({"topic": self.topic, "partition": self.partition, "offset": self.offset,
                           "key": _text(self.key), "value": _text(self.value), "status": self.status,
                           "error": self.error})

    @classmethod
    def from_json(cls, data: Any) -> Outcome:
        """Raises ValueError saying what is wrong."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        missing = [name for name in _FIELDS if name not in data]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        topic, partition, offset, key, value, status, error = (data[name] for name in _FIELDS)
        if not isinstance(topic, str) or not topic:
            raise ValueError(f"topic {topic!r} is not a topic name")
        if status not in STATUSES:
            raise ValueError(f"status {status!r} is not one of {', '.join(STATUSES)}")
        for name, number in (("partition", partition), ("offset", offset)):
            if number is not None and (not isinstance(number, int) or isinstance(number, bool) or number < 0):
                raise ValueError(f"{name} {number!r} is not a non-negative integer")
        if status == OK and (partition is None or offset is None):
            raise ValueError("an ok record needs its partition and offset")
        if status != OK and offset is not None:
            raise ValueError(f"a {status} record has no offset")
        for name, text in (("key", key), ("value", value), ("error", error)):
            if text is not None and not isinstance(text, str):
                raise ValueError(f"{name} is not a string or null")
        return cls(topic, partition, offset, _bytes(key), _bytes(value), status, error)


class HistoryWriter:
    """Appends one line per outcome to a history file and flushes it at once (safe to share within one event
    loop: each line is written whole by one call)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._file: IO[str] = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed by close())

    def write(self, outcome: Outcome) -> None:
        self._file.write(outcome.to_json() + "\n")
        self._file.flush()

    def sync(self) -> None:
        """Make the lines written so far durable (fsync)."""
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class History:
    """The outcomes of a history file, and the warnings reading it gave (a torn last line)."""

    outcomes: tuple[Outcome, ...]
    warnings: tuple[str, ...] = ()


def read_history(path: Path | str) -> History:
    """Every outcome in the file. A last line that is incomplete (no newline) and does not parse is skipped with
    a warning (a producer killed while writing it); any other bad line raises HistoryError."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise HistoryError(f"{path}: cannot read: {e.strerror or e}") from None
    outcomes: list[Outcome] = []
    warnings: list[str] = []
    lines = data.split(b"\n")
    for number, line, last in _numbered(lines):
        if not line.strip():
            continue
        try:
            outcomes.append(Outcome.from_json(json.loads(line)))
        except (ValueError, UnicodeDecodeError) as e:
            if last:
                warnings.append(f"{path}: line {number} is torn (no newline, not a whole record): skipped")
                continue
            raise HistoryError(f"{path}: line {number} is not a history record: {e}") from None
    return History(tuple(outcomes), tuple(warnings))


def _numbered(lines: list[bytes]) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, line, whether it is an unterminated last line) of a file split at newlines."""
    for index, line in enumerate(lines):
        yield index + 1, line, index == len(lines) - 1
