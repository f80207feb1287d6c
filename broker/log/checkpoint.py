"""Kafka's checkpoint text files and meta.properties, written atomically.

A checkpoint file is line-oriented UTF-8 text::

    0            <- version
    2            <- number of entries
    tp1 0 1      <- one entry per line
    tp1 1 2

Every write goes to ``<file>.tmp``, is fsynced, renamed over the file, and the directory is fsynced,
so a crash leaves either the old or the new file, never a torn one.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from protocol.topic_partition import TopicPartition

REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
#: Per log dir: each compacted partition's first dirty offset, where its next cleaning starts (Kafka's LogCleaner).
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
META_PROPERTIES = "meta.properties"
PARTITION_METADATA = "partition.metadata"
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"

_INT = re.compile(r"[+-]?[0-9]+")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_T = TypeVar("_T")


class CheckpointError(ValueError):
    """A checkpoint or properties file that cannot be read; the message names the file and the line number."""


def _error(path: Path, line_number: int, problem: str) -> CheckpointError:
    return CheckpointError(f"{path}: line {line_number}: {problem}")


def _parse_int(text: str) -> int:
    """A strict decimal integer: optional sign and ASCII digits (int() would also take spaces and "_")."""
    if _INT.fullmatch(text) is None:
        raise ValueError(f"not an integer: {text!r}")
    return int(text)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str) -> None:
    """Durably replace ``path`` with ``text``: write ``path.tmp``, fsync, rename, fsync the directory."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def _read_text_lines(path: Path) -> list[str] | None:
    """The file's lines without terminators (\\n, \\r\\n or \\r), or None if the file does not exist."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _error(path, data[: e.start].count(b"\n") + 1, "not valid UTF-8") from e
    lines = _LINE_BREAK.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


class CheckpointFile:
    """Kafka's generic checkpoint file: line 1 the version, line 2 the entry count, then one entry a line."""

    def __init__(self, path: Path, version: int = 0) -> None:
        self.path = Path(path)
        self.version = version
        self._write_lock = threading.Lock()

    def write_lines(self, lines: Sequence[str]) -> None:
        """Atomically replace the file with ``lines`` as entries (each non-empty, without line breaks)."""
        text = self.text(lines)
        with self._write_lock:
            atomic_write_text(self.path, text)

    def text(self, lines: Sequence[str]) -> str:
        """The file's content with ``lines`` as entries."""
        for line in lines:
            if not line.strip() or "\n" in line or "\r" in line:
                raise ValueError(f"checkpoint entry must be a non-empty single line: {line!r}")
        return "".join(f"{line}\n" for line in (str(self.version), str(len(lines)), *lines))

    def read_lines(self) -> list[str]:
        """The entry lines; a missing or empty file reads as no entries."""
        return self.read_entries(str)

    def read_entries(self, parse: Callable[[str], _T]) -> list[_T]:
        """The entries, each converted by ``parse``; a ValueError from ``parse`` names the offending line.

        As in Kafka, a file holding only the version line reads as empty, and every entry is parsed
        before the count on line 2 is checked.
        """
        lines = _read_text_lines(self.path)
        if not lines:
            return []
        version = self._parse_line(1, lines[0], _parse_int)
        if version != self.version:
            raise _error(self.path, 1, f"unrecognised version {version} (expected {self.version})")
        if len(lines) == 1:
            return []
        expected = self._parse_line(2, lines[1], _parse_count)
        entries = [
            self._parse_line(line_number, line, parse) for line_number, line in enumerate(lines[2:], start=3)
        ]
        if len(entries) != expected:
            raise _error(self.path, 2, f"expected {expected} entries, found {len(entries)}")
        return entries

    def _parse_line(self, line_number: int, line: str, parse: Callable[[str], _T]) -> _T:
        if not line.strip():
            raise _error(self.path, line_number, "empty line")
        try:
            return parse(line)
        except ValueError as e:
            raise _error(self.path, line_number, f"malformed line {line!r}: {e}") from e


def _parse_count(text: str) -> int:
    count = _parse_int(text)
    if count < 0:
        raise ValueError(f"negative entry count {count}")
    return count


def _split_fields(line: str, expected: int) -> list[str]:
    fields = line.split()
    if len(fields) != expected:
        raise ValueError(f"expected {expected} fields, found {len(fields)}")
    return fields


class OffsetCheckpointFile:
    """A per-log-dir offset checkpoint (high watermarks, recovery points or log start offsets).

    Entries are ``topic partition offset``, version 0.
    """

    def __init__(self, path: Path) -> None:
        self._file = CheckpointFile(path, version=0)
        self.path = self._file.path

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Atomically replace the file with ``offsets``, sorted by topic and partition."""
        lines = []
        for (topic, partition), offset in sorted(offsets.items()):
            if not topic or any(c.isspace() for c in topic):
                raise ValueError(f"topic name {topic!r} cannot be written to a checkpoint file")
            lines.append(f"{topic} {partition} {offset}")
        self._file.write_lines(lines)

    def read(self) -> dict[TopicPartition, int]:
        """The offsets in the file; missing file -> {}."""
        return dict(self._file.read_entries(_parse_offset_entry))


def _parse_offset_entry(line: str) -> tuple[TopicPartition, int]:
    topic, partition, offset = _split_fields(line, 3)
    return TopicPartition(topic, _parse_int(partition)), _parse_int(offset)


@dataclass(frozen=True, slots=True, order=True)
class EpochEntry:
    """A leader epoch and the offset of the first record written in it."""

    epoch: int
    start_offset: int


class LeaderEpochCheckpointFile:
    """A partition's ``leader-epoch-checkpoint``: entries ``epoch startOffset``, version 0."""

    def __init__(self, path: Path) -> None:
        self._file = CheckpointFile(path, version=0)
        self.path = self._file.path

    def write(self, entries: Sequence[EpochEntry]) -> None:
        """Atomically replace the file with ``entries`` in the given order."""
        self._file.write_lines(_epoch_lines(entries))

    def text(self, entries: Sequence[EpochEntry]) -> str:
        """The file's content with ``entries`` in the given order."""
        return self._file.text(_epoch_lines(entries))

    def read(self) -> list[EpochEntry]:
        """The entries in file order; missing file -> []."""
        return self._file.read_entries(_parse_epoch_entry)

    def exists(self) -> bool:
        return self.path.exists()


def _epoch_lines(entries: Sequence[EpochEntry]) -> list[str]:
    return [f"{e.epoch} {e.start_offset}" for e in entries]


def _parse_epoch_entry(line: str) -> EpochEntry:
    epoch, start_offset = (_parse_int(field) for field in _split_fields(line, 2))
    if epoch < 0 or start_offset < 0:
        raise ValueError("epoch and start offset must be non-negative")
    return EpochEntry(epoch, start_offset)


def read_meta_properties(log_dir: Path) -> dict[str, str] | None:
    """``log_dir/meta.properties`` as a dict (``key=value`` lines; blank and ``#``/``!`` lines ignored).

    None if the file does not exist.
    """
    path = Path(log_dir) / META_PROPERTIES
    lines = _read_text_lines(path)
    if lines is None:
        return None
    properties: dict[str, str] = {}
    for line_number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise _error(path, line_number, f"malformed property line {raw!r} (expected key=value)")
        properties[key.strip()] = value.strip()
    return properties


def write_meta_properties(log_dir: Path, broker_id: int, cluster_id: str | None = None) -> None:
    """Atomically write ``log_dir/meta.properties`` identifying the broker that owns the directory and, when known,
    the cluster it belongs to (Kafka's version 0 file, whose cluster.id is optional)."""
    cluster = "" if cluster_id is None else f"cluster.id={cluster_id}\n"
    text = f"#minikafka broker metadata\nversion=0\nbroker.id={broker_id}\n{cluster}"
    atomic_write_text(Path(log_dir) / META_PROPERTIES, text)


def read_partition_metadata(partition_dir: Path) -> str | None:
    """The topic id in ``partition_dir/partition.metadata`` (Kafka's ``version: 0`` / ``topic_id: <id>``
    lines, KIP-516); None if the file does not exist."""
    path = Path(partition_dir) / PARTITION_METADATA
    lines = _read_text_lines(path)
    if lines is None:
        return None
    fields = {}
    for line_number, raw in enumerate(lines, start=1):
        key, sep, value = raw.partition(":")
        if not sep:
            raise _error(path, line_number, f"malformed line {raw!r} (expected key: value)")
        fields[key.strip()] = value.strip()
    if fields.get("version") != "0" or not fields.get("topic_id"):
        raise _error(path, len(lines), f"expected version 0 and a topic_id, got {fields}")
    return fields["topic_id"]


def write_partition_metadata(partition_dir: Path, topic_id: str) -> None:
    """Atomically write ``partition_dir/partition.metadata`` naming the topic id of the partition's log."""
    atomic_write_text(*partition_metadata_file(partition_dir, topic_id))


def partition_metadata_file(partition_dir: Path, topic_id: str) -> tuple[Path, str]:
    """The path and content of ``partition_dir``'s partition.metadata naming ``topic_id``."""
    return Path(partition_dir) / PARTITION_METADATA, f"version: 0\ntopic_id: {topic_id}\n"
