"""Sparse segment indexes: the offset index (.index) and the time index (.timeindex).

Both are files of fixed-width big-endian entries relative to the segment's base offset, in
Kafka's layout, mirrored in memory so look-ups are a binary search. New entries reach the file
when the index is flushed, truncated or closed; after a crash, recovery rebuilds the indexes of
unflushed segments anyway. They carry no checksum: a segment whose index looks wrong is rebuilt
from its log file.

The file is created lazily, by the first write that needs it (a flush, or entries to write), as
Kafka's LazyIndex: a new partition's empty segment costs one file, not three, and a segment without
index files is only trusted while its log is empty.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import struct
import threading
from abc import ABC, abstractmethod
from pathlib import Path


class CorruptIndexError(ValueError):
    """An index file whose size or entries cannot be right; the segment rebuilds it."""


class _IndexFile(ABC):
    """Entries (key, value) with strictly increasing keys, appended to a file of fixed-width records."""

    ENTRY: struct.Struct

    def __init__(self, path: Path, base_offset: int, max_bytes: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_bytes // self.ENTRY.size)
        self._keys: list[int] = []
        self._values: list[int] = []
        self._unwritten = bytearray()  # entries appended since the last write to the file
        # The owner appends, renames and deletes on its thread while a flush may write the buffer on a worker thread:
        # the buffer is changed and written, and the file opened, renamed and removed, under this lock (a write holds
        # the buffer, which may not grow meanwhile; a flush never recreates a file under an old or removed name).
        self._lock = threading.Lock()
        self._deleted = False
        self._load()

    def _open(self) -> int:
        """Index files hold no descriptor between writes: they are read once and written rarely."""
        return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)

    def _load(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return  # created by the first write
        try:
            data = os.pread(fd, os.fstat(fd).st_size, 0)
        finally:
            os.close(fd)
        if len(data) % self.ENTRY.size:
            raise CorruptIndexError(f"{self.path}: size {len(data)} is not a multiple of {self.ENTRY.size}")
        for fields in self.ENTRY.iter_unpack(data):
            key, value = self._decode(*fields)
            if self._keys and key <= self._keys[-1]:
                raise CorruptIndexError(f"{self.path}: entries out of order at entry {len(self._keys)}")
            self._keys.append(key)
            self._values.append(value)

    @abstractmethod
    def _decode(self, *fields: int) -> tuple[int, int]:
        """(key, value) in memory from one file entry; raises CorruptIndexError."""

    @abstractmethod
    def _encode(self, key: int, value: int) -> bytes:
        """One file entry for (key, value)."""

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def last_entry(self) -> tuple[int, int] | None:
        return (self._keys[-1], self._values[-1]) if self._keys else None

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._keys, self._values, strict=True))

    def _append(self, key: int, value: int) -> None:
        entry = self._encode(key, value)
        with self._lock:
            self._unwritten += entry
            self._keys.append(key)
            self._values.append(value)

    def _floor(self, key: int) -> int:
        """Index of the last entry whose key is <= key, or -1."""
        return bisect.bisect_right(self._keys, key) - 1

    def _write_unwritten(self, fd: int) -> None:
        """Write buffered entries to the file (the in-memory entries are always complete); hold the lock."""
        if self._unwritten:
            os.pwrite(fd, self._unwritten, len(self._keys) * self.ENTRY.size - len(self._unwritten))
            self._unwritten.clear()

    def _keep_first(self, count: int) -> None:
        if count >= len(self._keys):
            return  # nothing to cut (and no file to create)
        with self._lock:
            fd = self._open()
            try:
                self._write_unwritten(fd)
                del self._keys[count:]
                del self._values[count:]
                os.ftruncate(fd, count * self.ENTRY.size)
            finally:
                os.close(fd)

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self._keep_first(0)

    def flush(self) -> None:
        with self._lock:
            if self._deleted:
                return
            fd = self._open()
            try:
                self._write_unwritten(fd)
            except BaseException:
                os.close(fd)
                raise
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Write the buffered entries (the index stays usable: it holds no descriptor)."""
        with self._lock:
            if self._unwritten and not self._deleted:
                fd = self._open()
                try:
                    self._write_unwritten(fd)
                finally:
                    os.close(fd)

    def rename(self, path: Path) -> None:
        """Give the index the name ``path``, renaming its file if it has one yet."""
        with self._lock:
            with contextlib.suppress(FileNotFoundError):  # not created yet: the first write creates it so named
                os.rename(self.path, path)
            self.path = path

    def delete(self) -> None:
        with self._lock:
            self._deleted = True
            self._unwritten.clear()
            self.path.unlink(missing_ok=True)


class OffsetIndex(_IndexFile):
    """Maps offsets to file positions: 4-byte relative offset, 4-byte position.

    Each entry names the last offset of a batch and the position where that batch starts, so
    the batch holding any offset >= the entry's offset is at or after that position.
    """

    ENTRY = struct.Struct(">ii")

    def _decode(self, relative_offset: int, position: int) -> tuple[int, int]:
        if relative_offset < 0 or position < 0:
            raise CorruptIndexError(f"{self.path}: negative entry ({relative_offset}, {position})")
        return self.base_offset + relative_offset, position

    def _encode(self, offset: int, position: int) -> bytes:
        return self.ENTRY.pack(offset - self.base_offset, position)

    def append(self, offset: int, position: int) -> None:
        if self._keys and (offset <= self._keys[-1] or position <= self._values[-1]):
            raise ValueError(f"index entry ({offset}, {position}) is not after {self.last_entry}")
        self._append(offset, position)

    def lookup(self, offset: int) -> int:
        """The position to start scanning from for the batch holding ``offset``."""
        i = self._floor(offset)
        return self._values[i] if i >= 0 else 0

    def truncate_to_position(self, position: int) -> None:
        """Remove entries pointing at or beyond ``position`` (the log was cut there)."""
        self._keep_first(bisect.bisect_left(self._values, position))

    def check_within(self, log_size: int) -> None:
        """Raise CorruptIndexError if an entry points past the end of the log file."""
        if self._values and self._values[-1] >= log_size:
            raise CorruptIndexError(f"{self.path}: entry points at {self._values[-1]}, log is {log_size} bytes")


class TimeIndex(_IndexFile):
    """Maps timestamps to offsets: 8-byte timestamp, 4-byte relative offset.

    Timestamps only grow: an entry is added when a batch raises the segment's largest timestamp.
    """

    ENTRY = struct.Struct(">qi")

    def _decode(self, timestamp: int, relative_offset: int) -> tuple[int, int]:
        if relative_offset < 0:
            raise CorruptIndexError(f"{self.path}: negative relative offset {relative_offset}")
        return timestamp, self.base_offset + relative_offset

    def _encode(self, timestamp: int, offset: int) -> bytes:
        return self.ENTRY.pack(timestamp, offset - self.base_offset)

    def maybe_append(self, timestamp: int, offset: int) -> None:
        if not self._keys or timestamp > self._keys[-1]:
            self._append(timestamp, offset)

    def lookup(self, timestamp: int) -> int | None:
        """Offset of the last entry with a timestamp <= ``timestamp``; None if every entry is later."""
        i = self._floor(timestamp)
        return self._values[i] if i >= 0 else None

    def truncate_to_offset(self, offset: int) -> None:
        """Remove entries for offsets >= ``offset``."""
        keep = len(self._values)
        while keep and self._values[keep - 1] >= offset:
            keep -= 1
        self._keep_first(keep)
