"""The producer history: one JSON line per record, written as each outcome arrives.

Each line is ``{"topic", "partition", "offset", "key", "value", "status", "error"}`` with status ``ok`` (offset
set), ``failed`` (the producer got an error) or ``unknown`` (no answer: the record may or may not be written);
the replica verifier reads it to count acknowledged records that are missing. Lines are flushed one by one, so a
producer killed half-way leaves a valid prefix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Literal

Status = Literal["ok", "failed", "unknown"]


class HistoryWriter:
    """Appends records' outcomes to a history file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = path.open("a", encoding="utf-8")

    def write(self, topic: str, partition: int, key: str | None, value: str | None, status: Status,
              offset: int | None = None, error: str | None = None) -> None:
        if self._file is None:
            raise ValueError(f"the history {self.path} is closed")
        line = {"topic": topic, "partition": partition, "offset": offset if status == "ok" else None,
                "key": key, "value": value, "status": status, "error": error}
        self._file.write(json.dumps(line) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
