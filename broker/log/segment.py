"""One log segment: a .log file of record batches with its .index and .timeindex."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

from broker.log.config import LogConfig
from broker.log.epoch_cache import LeaderEpochCache
from broker.log.index import CorruptIndexError, OffsetIndex, TimeIndex
from broker.log.open_files import SEGMENT_FILES, OpenFiles
from protocol.records import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    InvalidBatchLengthError,
    InvalidRecordError,
    RecordBatchError,
    TruncatedBatchError,
    decode_batch,
    read_header,
    validate_batch,
)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
#: The suffixes a segment's files take while the log cleaner replaces segments (Kafka's): a cleaned segment is
#: written as ``.cleaned`` files, renamed ``.swap`` once complete, and the segments it replaces are renamed
#: ``.deleted`` before it takes their place.
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
MAX_RELATIVE_OFFSET = 2**31 - 1
_BATCH_LENGTH = struct.Struct(">i")
_SCAN_CHUNK = 64 * 1024


def _whole_batches_length(data: bytes) -> int:
    """Length of the longest prefix of ``data`` made of whole batches."""
    position = 0
    while position + LOG_OVERHEAD <= len(data):
        size = _BATCH_LENGTH.unpack_from(data, position + 8)[0] + LOG_OVERHEAD
        if position + size > len(data):
            break
        position += size
    return position


def segment_path(directory: Path, base_offset: int, suffix: str) -> Path:
    """``<dir>/<20-digit zero-padded base offset><suffix>``, so ``ls`` sorts segments numerically."""
    return directory / f"{base_offset:020d}{suffix}"


def file_with_suffix(path: Path, old: str, new: str) -> Path:
    """``path`` with its name's trailing ``old`` suffix (maybe "") replaced by ``new`` (maybe "")."""
    name = path.name[:len(path.name) - len(old)] if old else path.name
    return path.with_name(name + new)


class LogSegment:
    """A contiguous run of batches starting at ``base_offset``.

    Positions are byte offsets in the .log file. The segment keeps its size, the offset after
    its last batch and its largest timestamp in memory; the indexes map offsets and timestamps
    to positions so a read never scans from the start of the file. Its files may carry a suffix
    (``suffix``, :meth:`rename_files`) while the log cleaner replaces segments.
    """

    def __init__(self, directory: Path, base_offset: int, config: LogConfig, now_ms: int,
                 files: OpenFiles = SEGMENT_FILES, suffix: str = "") -> None:
        self.base_offset = base_offset
        self.suffix = suffix
        self.log_path = segment_path(directory, base_offset, LOG_SUFFIX + suffix)
        self._path = str(self.log_path)
        self._files = files
        self._config = config
        self.configure(config)
        with self.pinned() as fd:
            self.size = os.fstat(fd).st_size
        self.created_ms = now_ms
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self._first_batch_timestamp: int | None = None
        self._bytes_since_last_index_entry = 0
        self._deleted = False
        index_path = segment_path(directory, base_offset, INDEX_SUFFIX + suffix)
        time_index_path = segment_path(directory, base_offset, TIME_INDEX_SUFFIX + suffix)
        #: False when an index was missing or unreadable: the segment must be recovered before use.
        self.indexes_trusted = self.size == 0 or (index_path.exists() and time_index_path.exists())
        self.offset_index = self._open_index(OffsetIndex, index_path)
        self.time_index = self._open_index(TimeIndex, time_index_path)
        if self.indexes_trusted:
            try:
                self.offset_index.check_within(self.size)
                with self.pinned():  # segments are opened on worker threads too
                    self._load_tail_state()
            except (CorruptIndexError, RecordBatchError):
                self.indexes_trusted = False

    def configure(self, config: LogConfig) -> None:
        """Roll and index by ``config`` from now on (a topic's config changed, or replaced the broker's defaults the
        log was loaded with)."""
        self._segment_bytes = config.segment_bytes
        self._segment_ms = config.segment_ms
        self._index_interval_bytes = config.index_interval_bytes

    def _fd(self) -> int:
        """The .log file's descriptor: fetch it right before each system call, never keep it."""
        return self._files.descriptor(self, self._path)

    def pinned(self, *, create: bool = True) -> AbstractContextManager[int]:
        """Keep the .log file's descriptor open inside the block: a thread other than the log's owner works on the
        segment only inside it (no other thread may close the descriptor under it); without ``create`` it raises
        FileNotFoundError for a segment whose file was removed."""
        return self._files.pinned(self, self._path, create=create)

    @property
    def first_batch_timestamp(self) -> int | None:
        """The maxTimestamp of the first batch (None while there is none): segment.ms and max.compaction.lag.ms
        count from it."""
        return self._first_batch_timestamp

    def _open_index(self, kind: type[OffsetIndex] | type[TimeIndex], path: Path) -> OffsetIndex | TimeIndex:
        max_bytes = self._config.segment_index_bytes
        try:
            return kind(path, self.base_offset, max_bytes)
        except CorruptIndexError:
            self.indexes_trusted = False
            path.unlink()
            return kind(path, self.base_offset, max_bytes)

    # -- state derived from the file --------------------------------------------------------

    def _load_tail_state(self) -> None:
        """Find the next offset and largest timestamp from the last index entries and the tail."""
        last_time = self.time_index.last_entry
        if last_time is not None:
            self.max_timestamp, self.offset_of_max_timestamp = last_time
        last_indexed = self.offset_index.last_entry
        start = last_indexed[1] if last_indexed else 0
        for position, buf, at, _size in self._scan(start, self.size, whole_batches=False):
            header = read_header(buf, at, require_body=False)
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = header.max_timestamp, header.last_offset
            self.next_offset = header.next_offset
            if position == 0:
                self._first_batch_timestamp = header.max_timestamp
        if self._first_batch_timestamp is None and self.size:
            self._first_batch_timestamp = read_header(os.pread(self._fd(), HEADER_SIZE, 0), 0,
                                                      require_body=False).max_timestamp

    def _scan(self, start: int, end: int, *, whole_batches: bool) -> Iterator[tuple[int, bytes, int, int]]:
        """Yield ``(position, buffer, index in buffer, batch size)`` for each batch in [start, end).

        The buffer holds the batch header, and the whole batch when ``whole_batches``. A batch
        that does not fit before ``end`` raises TruncatedBatchError (a torn tail).
        """
        buf = b""
        buf_start = position = start
        while position < end:
            at = position - buf_start
            if at + HEADER_SIZE > len(buf):
                buf, buf_start, at = os.pread(self._fd(), min(_SCAN_CHUNK, end - position), position), position, 0
            if len(buf) - at < HEADER_SIZE:
                raise TruncatedBatchError(f"{self.log_path}: {end - position} bytes at position {position} "
                                          "are less than a batch header")
            (batch_length,) = _BATCH_LENGTH.unpack_from(buf, at + 8)
            if batch_length < HEADER_SIZE - LOG_OVERHEAD:
                raise InvalidBatchLengthError(f"{self.log_path}: batch length {batch_length} at position {position}")
            size = batch_length + LOG_OVERHEAD
            if position + size > end:
                raise TruncatedBatchError(f"{self.log_path}: batch of {size} bytes at position {position} "
                                          f"runs past the end ({end})")
            if whole_batches and at + size > len(buf):
                buf, buf_start, at = os.pread(self._fd(), max(size, min(_SCAN_CHUNK, end - position)), position), \
                    position, 0
            yield position, buf, at, size
            position += size

    def _index_batch(self, position: int, header: BatchHeader) -> None:
        """Track the largest timestamp, and add index entries by Kafka's rule: one once more than
        index.interval.bytes were appended since the last entry. (On the append path: kept lean.)"""
        max_timestamp = header.max_timestamp
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = header.base_offset + header.last_offset_delta
        if self._bytes_since_last_index_entry > self._index_interval_bytes:
            self.offset_index.append(header.base_offset + header.last_offset_delta, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += header.batch_length + LOG_OVERHEAD
        if self._first_batch_timestamp is None:
            self._first_batch_timestamp = max_timestamp

    # -- writing ----------------------------------------------------------------------------

    def should_roll(self, append_bytes: int, last_offset: int, max_timestamp: int, now_ms: int) -> bool:
        """Whether an append of ``append_bytes`` ending at ``last_offset`` must go to a new segment.

        As in Kafka, segment.ms is measured from the first batch's timestamp to the incoming
        one's (so replicas roll at the same batches), or from creation when timestamps are absent.
        """
        if self.size == 0:
            return False
        first = self._first_batch_timestamp
        waited = max_timestamp - first if first is not None and first >= 0 else now_ms - self.created_ms
        return (
            self.size + append_bytes > self._segment_bytes
            or waited > self._segment_ms
            or len(self.offset_index) >= self.offset_index.max_entries
            or len(self.time_index) >= self.time_index.max_entries
            or last_offset - self.base_offset > MAX_RELATIVE_OFFSET
        )

    def append(self, data: bytes | bytearray | memoryview, batches: list[tuple[int, BatchHeader]]) -> None:
        """Append whole batches; ``batches`` gives each one's position within ``data`` and its header."""
        position = self.size
        written = os.pwrite(self._fd(), data, position)
        if written != len(data):
            raise OSError(f"{self.log_path}: short write ({written} of {len(data)} bytes)")
        for at, header in batches:
            self._index_batch(position + at, header)
        self.size += len(data)
        self.next_offset = batches[-1][1].next_offset

    def on_become_inactive(self) -> None:
        """Record the final largest timestamp in the time index (on roll and close)."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)

    # -- reading ----------------------------------------------------------------------------

    def batches(self, position: int = 0) -> Iterator[tuple[bytes, int]]:
        """(buffer, index in it) of each whole batch from ``position`` (a batch start) to the end, unchecked: the
        log cleaner's reads, inside :meth:`pinned` (TruncatedBatchError for a torn tail)."""
        for _position, buf, at, _size in self._scan(position, self.size, whole_batches=True):
            yield buf, at

    def headers(self) -> Iterator[BatchHeader]:
        """The header of every batch, in order (no CRC check)."""
        for _position, buf, at, _size in self._scan(0, self.size, whole_batches=False):
            yield read_header(buf, at, require_body=False)

    def position_of(self, offset: int) -> int | None:
        """Position of the first batch whose last offset is >= ``offset``; None if there is none."""
        for position, buf, at, _size in self._scan(self.offset_index.lookup(offset), self.size,
                                                     whole_batches=False):
            if read_header(buf, at, require_body=False).last_offset >= offset:
                return position
        return None

    def read(self, offset: int, max_bytes: int, max_position: int | None, min_one_batch: bool) -> bytes:
        """Whole batches from the one holding ``offset``, at most ``max_bytes`` (unless
        ``min_one_batch`` and the first batch alone is larger), ending before ``max_position``."""
        start = self.position_of(offset)
        end = self.size if max_position is None else min(self.size, max_position)
        if start is None or start >= end:
            return b""
        data = os.pread(self._fd(), min(max_bytes, end - start), start)
        whole = _whole_batches_length(data)
        if whole:
            return data if whole == len(data) else data[:whole]
        if not min_one_batch:
            return b""
        head = data if len(data) >= LOG_OVERHEAD else os.pread(self._fd(), LOG_OVERHEAD, start)
        first_size = _BATCH_LENGTH.unpack_from(head, 8)[0] + LOG_OVERHEAD
        return os.pread(self._fd(), first_size, start) if start + first_size <= end else b""

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the first record at or after ``starting_offset`` whose timestamp
        is >= ``timestamp``; None if this segment has none."""
        indexed = self.time_index.lookup(timestamp)
        start_offset = max(indexed if indexed is not None else self.base_offset, starting_offset)
        for _position, buf, at, _size in self._scan(self.offset_index.lookup(start_offset), self.size,
                                                     whole_batches=True):
            header = read_header(buf, at, require_body=False)
            if header.max_timestamp < timestamp or header.last_offset < starting_offset:
                continue
            _, records = decode_batch(buf, at)
            for record in records:
                if record.timestamp >= timestamp and record.offset >= starting_offset:
                    return record.timestamp, record.offset
        return None

    # -- recovery and truncation ------------------------------------------------------------

    def recover(self, epoch_cache: LeaderEpochCache | None) -> int:
        """Validate every batch, rebuild both indexes and cut the file after the last valid batch.

        A batch is invalid when it is torn, fails its CRC, or does not continue the offsets.
        Returns the number of bytes cut. Epochs of valid batches are assigned to ``epoch_cache``.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.max_timestamp, self.offset_of_max_timestamp = -1, self.base_offset
        self.next_offset = self.base_offset
        self._first_batch_timestamp = None
        self._bytes_since_last_index_entry = 0
        valid_end = 0
        try:
            for position, buf, at, size in self._scan(0, self.size, whole_batches=True):
                header = validate_batch(buf, at)
                if header.base_offset < self.next_offset or header.last_offset - self.base_offset > MAX_RELATIVE_OFFSET:
                    raise InvalidRecordError(f"{self.log_path}: batch at position {position} has offset "
                                             f"{header.base_offset}, expected at least {self.next_offset}")
                self._index_batch(position, header)
                if epoch_cache is not None and header.partition_leader_epoch >= 0:
                    epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
                self.next_offset = header.next_offset
                valid_end = position + size
        except RecordBatchError:
            pass
        cut = self.size - valid_end
        if cut:
            os.ftruncate(self._fd(), valid_end)
            self.size = valid_end
        self.indexes_trusted = True
        return cut

    def truncate_to(self, offset: int) -> int:
        """Remove the batch holding ``offset`` and everything after it; returns the bytes removed."""
        position = self.position_of(offset)
        if position is None:
            return 0
        removed = self.size - position
        self.offset_index.truncate_to_position(position)
        self.time_index.truncate_to_offset(offset)
        os.ftruncate(self._fd(), position)
        self.size = position
        self.next_offset = self.base_offset
        self.max_timestamp, self.offset_of_max_timestamp = -1, self.base_offset
        self._first_batch_timestamp = None
        self._bytes_since_last_index_entry = 0
        self._load_tail_state()
        return removed

    # -- files ------------------------------------------------------------------------------

    def flush(self) -> None:
        """fsync the log file and both indexes (nothing once the segment is deleted: a flush on another thread may
        still hold it)."""
        if self._deleted:
            return
        with self.pinned(create=False) as fd:
            os.fsync(fd)
        self.offset_index.flush()
        self.time_index.flush()

    def close(self) -> None:
        self.on_become_inactive()
        self._files.close(self)
        self.offset_index.close()
        self.time_index.close()

    def delete(self) -> None:
        """Close and remove the three files."""
        self._deleted = True
        self._files.close(self)
        self.log_path.unlink(missing_ok=True)
        self.offset_index.delete()
        self.time_index.delete()

    def rename_files(self, suffix: str) -> None:
        """Rename the segment's files (the indexes if they exist: they are written lazily) to carry ``suffix``
        instead of the one they have (Kafka's changeFileSuffixes); an open descriptor stays valid."""
        self.log_path = self._renamed(self.log_path, suffix)
        self._path = str(self.log_path)
        for index in (self.offset_index, self.time_index):
            index.rename(file_with_suffix(index.path, self.suffix, suffix))
        self.suffix = suffix

    def _renamed(self, path: Path, suffix: str) -> Path:
        renamed = file_with_suffix(path, self.suffix, suffix)
        os.rename(path, renamed)
        return renamed

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, next_offset={self.next_offset})"
