"""A partition's log: an ordered list of segments with offsets, epochs, retention and truncation.

The log never fsyncs on the append path. Appends report when a flush is due (a segment rolled,
or ``flush.messages`` was reached) and the owner runs :meth:`Log.flush` where blocking is
allowed; :meth:`flush` may run on another thread while appends continue.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from broker.log.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    CheckpointError,
    LeaderEpochCheckpointFile,
    fsync_dir,
    partition_metadata_file,
    read_partition_metadata,
    write_partition_metadata,
)
from broker.log.config import LogConfig
from broker.log.durable_writer import DURABLE_WRITER
from broker.log.epoch_cache import LeaderEpochCache
from broker.log.open_files import SEGMENT_FILES, OpenFiles
from broker.log.producer_state import ProducerStateManager
from broker.log.results import AppendInfo
from broker.log.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    segment_path,
)
from broker.log.swap import complete_interrupted_swaps
from broker.log.validator import needs_validation, validate_for_leader
from protocol.errors import ErrorCode, KafkaError
from protocol.records import (
    LOG_OVERHEAD,
    BatchHeader,
    RecordBatchError,
    decode_batch_columns,
    iter_batches,
    set_base_offset,
    set_partition_leader_epoch,
)
from protocol.topic_partition import TopicPartition

Clock = Callable[[], int]
_log = logging.getLogger(__name__)


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class LogError(Exception):
    """Base of the errors a log operation reports to its caller."""


class OffsetOutOfRangeError(LogError):
    """A read or log-start move outside [log start offset, log end offset] (Kafka's OFFSET_OUT_OF_RANGE)."""


class UnexpectedAppendOffsetError(LogError):
    """A follower append whose offsets do not continue the log."""


class RecordTooLargeError(LogError):
    """A batch larger than max.message.bytes (Kafka's MESSAGE_TOO_LARGE)."""


class EmptyAppendError(RecordBatchError):
    """An append with no batches in it."""


class ReplacementRefusedError(LogError):
    """The log cleaner's replacement of segments that are no longer the log's (truncated, deleted, or the log
    closed since the cleaning began): nothing was replaced."""


def _no_step(_step: str) -> None:
    """Where :meth:`Log.replace_segments` reports its steps by default: nowhere."""


def parse_log_dir_name(name: str) -> TopicPartition:
    """``"my-topic-3"`` -> ``TopicPartition("my-topic", 3)``; ValueError if the name has no partition."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise ValueError(f"{name!r} is not a partition directory (expected <topic>-<partition>)")
    return TopicPartition(topic, int(partition))


def log_dir_name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


class Log:
    """The segments of one partition plus its offsets: log start, log end (LEO), high watermark
    and recovery point, and the partition's leader-epoch cache."""

    def __init__(self, directory: Path, tp: TopicPartition, config: LogConfig, *,
                 recovery_point: int = 0, log_start_offset: int = 0, high_watermark: int = 0,
                 needs_recovery: bool = False, clock: Clock = wall_clock_ms,
                 files: OpenFiles = SEGMENT_FILES) -> None:
        self.dir = directory
        self.tp = tp
        self._config = config
        self._clock = clock
        self._files = files
        self._flush_lock = threading.Lock()
        self._truncations = 0
        self._closed = False
        self._topic_id_unwritten = False
        self._topic_id_lock = threading.Lock()  # a closed log's partition.metadata is never written
        checkpoint = LeaderEpochCheckpointFile(directory / LEADER_EPOCH_CHECKPOINT)
        self._segments: list[LogSegment] = []
        #: The id of the topic incarnation this log belongs to (partition.metadata, KIP-516); None if unknown.
        self.topic_id: str | None = None
        try:
            directory.mkdir(parents=True)
        except FileExistsError:
            self._load_directory(checkpoint, recovery_point, needs_recovery)
        else:  # a new log (a broker creates thousands at once): an empty directory has nothing to read
            self.epoch_cache = LeaderEpochCache(checkpoint, entries=[])
            self._segments = [self._segment(0, clock())]
            self.bytes_truncated_by_recovery = 0
        self.log_start_offset = max(log_start_offset, self._segments[0].base_offset)
        self.recovery_point = min(max(recovery_point, self.log_start_offset), self.log_end_offset)
        self.high_watermark = self.log_start_offset
        self.update_high_watermark(high_watermark)
        self.epoch_cache.truncate_from_end(self.log_end_offset)
        self.epoch_cache.truncate_from_start(self.log_start_offset)
        self._unflushed_messages = 0
        self._last_flush_ms = clock()
        #: Idempotent producers' state: built from the batch headers when first needed, then kept by appends;
        #: dropped when the log end moves back.
        self._producer_state: ProducerStateManager | None = None

    # -- loading ----------------------------------------------------------------------------

    def _segment(self, base_offset: int, now: int) -> LogSegment:
        """The segment of this log's directory starting at ``base_offset`` (opened, or created empty)."""
        return LogSegment(self.dir, base_offset, self.config, now, self._files)

    def _load_directory(self, checkpoint: LeaderEpochCheckpointFile, recovery_point: int,
                        needs_recovery: bool) -> None:
        """Read what an existing directory holds: its topic id, its leader epochs and its segments."""
        try:
            self.topic_id = read_partition_metadata(self.dir)
        except CheckpointError as e:
            _log.warning("%s: ignoring its partition.metadata: %s", self.tp, e)
        rebuild_epochs = not checkpoint.exists()
        self.epoch_cache = LeaderEpochCache(checkpoint, entries=[] if rebuild_epochs else None)
        self.bytes_truncated_by_recovery = self._load_segments(recovery_point, needs_recovery, rebuild_epochs)

    def _load_segments(self, recovery_point: int, needs_recovery: bool, rebuild_epochs: bool) -> int:
        """Open every segment; recover those past the recovery point (after an unclean shutdown)
        or with bad indexes. A damaged segment loses its tail and every later segment."""
        now = self._clock()
        swapped = complete_interrupted_swaps(self.dir, self._end_of_swap_segment)
        bases = sorted(int(p.stem) for p in self.dir.glob(f"*{LOG_SUFFIX}") if p.stem.isdigit())
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            for orphan in self.dir.glob(f"*{suffix}"):
                if not orphan.stem.isdigit() or int(orphan.stem) not in bases:
                    orphan.unlink()
        self._segments = [self._segment(base, now) for base in bases]
        truncated = 0
        for i, segment in enumerate(self._segments):
            unflushed = needs_recovery and (i + 1 == len(self._segments)
                                             or self._segments[i + 1].base_offset > recovery_point)
            if unflushed or not segment.indexes_trusted or segment.base_offset in swapped:
                cut = segment.recover(self.epoch_cache)
                truncated += cut
                if cut:
                    for later in self._segments[i + 1:]:
                        truncated += later.size
                        later.delete()
                    del self._segments[i + 1:]
                    break
            elif rebuild_epochs:
                self._assign_epochs_from(segment)
        if not self._segments:
            self._segments = [self._segment(0, now)]
        return truncated

    def _end_of_swap_segment(self, base_offset: int) -> int:
        """The offset after the last batch of the ``.swap`` segment at ``base_offset``."""
        segment = LogSegment(self.dir, base_offset, self.config, self._clock(), self._files, SWAP_SUFFIX)
        try:
            if not segment.indexes_trusted:
                segment.recover(None)
            return segment.next_offset
        finally:
            segment.close()

    def _assign_epochs_from(self, segment: LogSegment) -> None:
        for header in segment.headers():
            if header.partition_leader_epoch >= 0:
                self.epoch_cache.assign(header.partition_leader_epoch, header.base_offset)

    # -- offsets ----------------------------------------------------------------------------

    @property
    def config(self) -> LogConfig:
        return self._config

    @config.setter
    def config(self, config: LogConfig) -> None:
        """A new config (the topic's, read when a LeaderAndIsr names the log): the active segment rolls by it too."""
        self._config = config
        self.active_segment.configure(config)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def truncations(self) -> int:
        """How many times the log end moved back: a cleaning that began before a truncation must not replace
        segments after it (:meth:`replace_segments`)."""
        return self._truncations

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    def assign_epoch_start_offset(self, leader_epoch: int, *, flush: bool = True) -> bool:
        """Record that ``leader_epoch`` starts at the current LEO (a replica becoming leader); True if that is new.
        With ``flush=False`` the caller writes the checkpoint (``epoch_cache.flush``) before acting on it."""
        return self.epoch_cache.assign(leader_epoch, self.log_end_offset, flush=flush)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """``(epoch, end offset)`` as OffsetsForLeaderEpoch answers: the largest epoch <= the one
        asked for, and where it ends on this log (the LEO for the latest epoch)."""
        return self.epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)

    def update_high_watermark(self, offset: int) -> int:
        """Set the HW, bounded to [log start offset, log end offset]; returns the value set."""
        self.high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)
        return self.high_watermark

    # -- appending --------------------------------------------------------------------------

    def producer_state(self) -> ProducerStateManager:
        """The idempotent producers' state of this log (rebuilt from every batch header the first time)."""
        if self._producer_state is None:
            self._producer_state = ProducerStateManager.from_headers(
                header for segment in self._segments for header in segment.headers())
        return self._producer_state

    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int) -> AppendInfo:
        """Validate the batches (compressed ones as broker.log.validator says, which may recompress them into the
        topic's compression.type), check idempotent producers' sequences, assign offsets from the LEO, stamp
        ``leader_epoch`` and append. A single batch its producer wrote already is not written again: the
        AppendInfo of its first write is returned (batch_count 0). Raises KafkaError for a fenced producer epoch
        or a sequence out of order. A writable memoryview (a slice of the request frame, which no one reads after)
        is stamped in place; anything else is copied first."""
        data = records if isinstance(records, memoryview) and not records.readonly else bytearray(records)
        batches = self._validate(data)
        if needs_validation(batches, self.config.compression_type):
            data, batches = validate_for_leader(data, batches, self.config.compression_type)
            self._check_sizes(batches)
        if self.config.compact:
            self._check_keys(data, batches)
        if any(header.producer_id >= 0 for _position, header in batches):
            duplicate = self.producer_state().check_append([header for _position, header in batches])
            if duplicate is not None:
                return AppendInfo(duplicate.first_offset, duplicate.last_offset, -1, 0, 0, False, False)
        next_offset = self.log_end_offset
        for i, (position, header) in enumerate(batches):
            set_base_offset(data, position, next_offset)
            set_partition_leader_epoch(data, position, leader_epoch)
            batches[i] = (position, BatchHeader(next_offset, header[1], leader_epoch, *header[3:]))
            next_offset += header.last_offset_delta + 1
        self.epoch_cache.assign(leader_epoch, batches[0][1].base_offset)
        return self._append(data, batches)

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> AppendInfo:
        """Append batches that carry the leader's offsets and epochs; offsets must continue the log."""
        batches = self._validate(records)
        expected = self.log_end_offset
        for _position, header in batches:
            if header.base_offset < expected:
                raise UnexpectedAppendOffsetError(
                    f"{self.tp}: batch at offset {header.base_offset} does not follow offset {expected - 1}")
            expected = header.next_offset
        for _position, header in batches:
            if header.partition_leader_epoch >= 0:
                self.epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
        return self._append(records, batches)

    def _validate(self, records: bytes | bytearray | memoryview) -> list[tuple[int, BatchHeader]]:
        batches = list(iter_batches(records))
        if not batches:
            raise EmptyAppendError(f"{self.tp}: no record batches to append")
        self._check_sizes(batches)
        return batches

    def _check_sizes(self, batches: list[tuple[int, BatchHeader]]) -> None:
        limit = self.config.max_message_bytes
        for _position, header in batches:
            if header.batch_length + LOG_OVERHEAD > limit:
                raise RecordTooLargeError(f"{self.tp}: batch of {header.size_in_bytes} bytes is larger than "
                                          f"max.message.bytes={limit}")

    def _check_keys(self, data: bytes | bytearray | memoryview, batches: list[tuple[int, BatchHeader]]) -> None:
        """Kafka's LogValidator.validateKey: a compacted log takes no record without a key (INVALID_RECORD)."""
        for position, _header in batches:
            keys = decode_batch_columns(data, position)[1].keys
            if None in keys:
                raise KafkaError(ErrorCode.INVALID_RECORD, f"Compacted topic cannot accept message without key in "
                                 f"topic partition {self.tp} (record {keys.index(None)} of its batch)")

    def _append(self, data: bytes | bytearray | memoryview, batches: list[tuple[int, BatchHeader]]) -> AppendInfo:
        """Write batches to the active segment, rolling first whenever the next batch would not fit,
        so that replicas that append the same batches get the same segment files."""
        now = self._clock()
        last_position, last = batches[-1]
        end = last_position + last.batch_length + LOG_OVERHEAD
        last_offset = last.base_offset + last.last_offset_delta
        if len(batches) == 1:
            records, max_timestamp = last.record_count, last.max_timestamp
        else:
            records = sum(header.record_count for _position, header in batches)
            max_timestamp = max(header.max_timestamp for _position, header in batches)
        segment = self._segments[-1]
        # One check for the whole append: if no batch of it would roll a non-empty segment, write it at once.
        if (segment.size == 0 and len(batches) > 1) or segment.should_roll(end, last_offset, max_timestamp, now):
            segments_before = len(self._segments)
            self._append_rolling(memoryview(data), batches, now)
            rolled = len(self._segments) > segments_before
        else:
            segment.append(data if end == len(data) else memoryview(data)[:end], batches)
            rolled = False
        if self._producer_state is not None:
            for _position, header in batches:
                self._producer_state.update(header)
        self._unflushed_messages += records
        return AppendInfo(batches[0][1].base_offset, last_offset, max_timestamp, len(batches), end, rolled,
                          rolled or self._unflushed_messages >= self.config.flush_messages)

    def _append_rolling(self, view: memoryview, batches: list[tuple[int, BatchHeader]], now: int) -> None:
        """Append batch by batch runs, rolling before each batch that would not fit."""
        run_start = 0
        run: list[tuple[int, BatchHeader]] = []
        for position, header in batches:
            size = header.batch_length + LOG_OVERHEAD
            last_offset = header.base_offset + header.last_offset_delta
            segment = self._segments[-1]
            if segment.should_roll(position + size - run_start, last_offset, header.max_timestamp, now):
                if run:
                    segment.append(view[run_start:position], run)
                    run, run_start = [], position
                if segment.should_roll(size, last_offset, header.max_timestamp, now):
                    self._roll(header.base_offset, now)
            run.append((position - run_start, header))
        last_position, last = batches[-1]
        self._segments[-1].append(view[run_start:last_position + last.batch_length + LOG_OVERHEAD], run)

    def _roll(self, base_offset: int, now: int) -> None:
        self.active_segment.on_become_inactive()
        self._segments.append(self._segment(base_offset, now))

    # -- reading ----------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> bytes:
        """Whole batches starting with the one that holds ``offset``.

        At most ``max_bytes`` (but at least one batch when ``min_one_batch``), and only batches
        that end before ``max_offset`` (exclusive; consumers pass the high watermark).
        Raises OffsetOutOfRangeError outside [log start offset, log end offset].
        """
        leo = self.log_end_offset
        if offset < self.log_start_offset or offset > leo:
            raise OffsetOutOfRangeError(f"{self.tp}: offset {offset} is outside [{self.log_start_offset}, {leo}]")
        limit = leo if max_offset is None else min(max_offset, leo)
        if offset >= limit:
            return b""
        bound_segment, bound_position = self._position_bound(limit)
        for i in range(self._segment_index(offset), len(self._segments)):
            segment = self._segments[i]
            max_position = bound_position if segment is bound_segment else None
            data = segment.read(offset, max_bytes, max_position, min_one_batch)
            if data or segment is bound_segment:
                return data
        return b""

    def _position_bound(self, limit: int) -> tuple[LogSegment | None, int | None]:
        """The segment and position before which batches end below ``limit``."""
        if limit >= self.log_end_offset:
            return None, None
        segment = self._segments[self._segment_index(limit)]
        return segment, segment.position_of(limit)

    def _segment_index(self, offset: int) -> int:
        bases = [segment.base_offset for segment in self._segments]
        return max(0, bisect.bisect_right(bases, offset) - 1)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the first record with a timestamp >= ``timestamp``, using the
        time indexes; None if every record is older."""
        for segment in self._segments:
            if segment.max_timestamp >= timestamp:
                found = segment.find_offset_by_timestamp(timestamp, self.log_start_offset)
                if found is not None:
                    return found
        return None

    def max_timestamp_and_offset(self) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the first record with the log's largest timestamp (KIP-734); None if the
        log holds no record."""
        segment = max(self._segments, key=lambda s: s.max_timestamp)  # the first segment holding it
        if segment.max_timestamp < 0:
            return None
        return segment.find_offset_by_timestamp(segment.max_timestamp, self.log_start_offset)

    # -- truncation, retention, deletion -----------------------------------------------------

    def truncate_to(self, offset: int, *, flush_epochs: bool = True) -> bool:
        """Remove every batch that holds an offset >= ``offset``; returns whether anything went. With
        ``flush_epochs=False`` a changed leader-epoch checkpoint is left to the caller (``epoch_cache.unflushed``)."""
        if offset < 0:
            raise ValueError(f"cannot truncate {self.tp} to negative offset {offset}")
        if offset >= self.log_end_offset:
            # Nothing to cut, but an epoch opened at the LEO with no batch (a deposed leader's) must go.
            self.epoch_cache.truncate_from_end(self.log_end_offset, flush=flush_epochs)
            return False
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset, flush_epochs=flush_epochs)
            return True
        self._truncations += 1
        keep = self._segment_index(offset)
        for segment in self._segments[keep + 1:]:
            segment.delete()
        del self._segments[keep + 1:]
        self.active_segment.truncate_to(offset)
        self._after_end_moved_back(flush_epochs)
        return True

    def truncate_fully_and_start_at(self, offset: int, *, flush_epochs: bool = True) -> None:
        """Delete every segment and restart empty at ``offset`` (a follower behind the leader's log start)."""
        self._truncations += 1
        for segment in self._segments:
            segment.delete()
        self._segments = [self._segment(offset, self._clock())]
        self.log_start_offset = offset
        self.epoch_cache.clear(flush=flush_epochs)
        self._after_end_moved_back(flush_epochs)

    def _after_end_moved_back(self, flush_epochs: bool) -> None:
        self._producer_state = None  # rebuilt from what is left when next needed
        leo = self.log_end_offset
        self.epoch_cache.truncate_from_end(leo, flush=flush_epochs)
        self.recovery_point = min(self.recovery_point, leo)
        self.log_start_offset = min(self.log_start_offset, leo)
        self.update_high_watermark(self.high_watermark)

    def delete_records(self, offset: int) -> None:
        """Advance the log start offset to ``offset`` (at most the HW) and drop whole segments below it."""
        if offset > self.high_watermark:
            raise OffsetOutOfRangeError(f"{self.tp}: cannot move the log start offset to {offset}, "
                                        f"above the high watermark {self.high_watermark}")
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        self.epoch_cache.truncate_from_start(offset)
        self._delete_leading_segments(lambda segment, next_base: next_base <= offset)

    def delete_retained_segments(self) -> int:
        """Apply retention.ms and retention.bytes where cleanup.policy includes delete: delete whole old segments
        (never the active one, never one reaching past the HW) and advance the log start offset. Returns segments
        deleted."""
        if not self.config.delete:
            return 0
        now = self._clock()
        retention_ms, retention_bytes = self.config.retention_ms, self.config.retention_bytes
        excess = self.size_in_bytes - retention_bytes

        def expired(segment: LogSegment, next_base: int) -> bool:
            nonlocal excess
            if next_base > self.high_watermark:
                return False
            if retention_ms >= 0 and segment.max_timestamp >= 0 and now - segment.max_timestamp > retention_ms:
                excess -= segment.size
                return True
            if retention_bytes >= 0 and excess - segment.size >= 0:
                excess -= segment.size
                return True
            return False

        deleted = self._delete_leading_segments(expired)
        if deleted:
            self.log_start_offset = max(self.log_start_offset, self._segments[0].base_offset)
            self.epoch_cache.truncate_from_start(self.log_start_offset)
        return deleted

    def new_cleaned_segment(self, base_offset: int) -> LogSegment:
        """An empty segment at ``base_offset`` whose files are named ``.cleaned``, for the log cleaner to write (on
        its own thread, inside the segment's :meth:`LogSegment.pinned`) and :meth:`replace_segments` to put in
        place; what an earlier cleaning left under those names goes first."""
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            segment_path(self.dir, base_offset, suffix + CLEANED_SUFFIX).unlink(missing_ok=True)
        return LogSegment(self.dir, base_offset, self.config, self._clock(), self._files, CLEANED_SUFFIX)

    def replace_segments(self, cleaned: LogSegment, old: Sequence[LogSegment], truncations: int,
                         step: Callable[[str], None] = _no_step) -> None:
        """Put the log cleaner's ``cleaned`` segment (its files complete, flushed and named ``.cleaned``) in the place
        of the consecutive segments ``old``, with Kafka's renames (broker/log/swap.py says how a crash between two
        is resolved): ``cleaned`` to ``.swap`` (``step("swap")`` then), ``old`` to ``.deleted`` (``step("deleted")``),
        ``cleaned`` to its final names. The old segments' files are left for the caller to remove. Offsets, epochs,
        the HW and the LEO do not change. On the thread that owns the log. ReplacementRefusedError, with nothing
        changed, if the log was closed or truncated since the cleaning began (``truncations``) or ``old`` are not
        consecutive segments of it before the active one any more."""
        if self._closed or truncations != self._truncations:
            raise ReplacementRefusedError(f"{self.tp}: the log was closed or truncated while it was cleaned")
        start = next((i for i, segment in enumerate(self._segments) if segment is old[0]), None)
        stop = None if start is None else start + len(old)
        if start is None or stop >= len(self._segments) or self._segments[start:stop] != list(old):
            raise ReplacementRefusedError(f"{self.tp}: segments {[s.base_offset for s in old]} changed while they "
                                          "were cleaned")
        renamed: list[LogSegment] = []
        try:
            cleaned.rename_files(SWAP_SUFFIX)
            step("swap")
            for segment in old:
                segment.rename_files(DELETED_SUFFIX)
                renamed.append(segment)
            step("deleted")
            cleaned.rename_files("")
        except OSError:
            for segment in renamed:  # put the old segments back: the log stays what it was
                segment.rename_files("")
            raise
        self._segments[start:stop] = [cleaned]

    def _delete_leading_segments(self, predicate: Callable[[LogSegment, int], bool]) -> int:
        count = 0
        while len(self._segments) > 1 and predicate(self._segments[0], self._segments[1].base_offset):
            self._segments.pop(0).delete()
            count += 1
        return count

    # -- durability -------------------------------------------------------------------------

    def flush_due(self, now_ms: int) -> bool:
        """Whether flush.messages or flush.ms asks for a flush now."""
        return self._unflushed_messages >= self.config.flush_messages or (
            self._unflushed_messages > 0 and now_ms - self._last_flush_ms >= self.config.flush_ms)

    def flush(self) -> None:
        """fsync every segment holding data past the recovery point, then move the recovery point.

        Safe to run on another thread while the owner appends; a truncation that happens meanwhile
        keeps the recovery point where the truncation put it.
        """
        with self._flush_lock:
            truncations = self._truncations
            end = self.log_end_offset
            pending = self._unflushed_messages
            for segment in list(self._segments):
                if segment.next_offset > self.recovery_point or segment.size:
                    try:
                        segment.flush()
                    except OSError:
                        continue  # deleted by a concurrent truncation
            fsync_dir(self.dir)
            if truncations == self._truncations:
                self.recovery_point = max(self.recovery_point, end)
            self._unflushed_messages = max(0, self._unflushed_messages - pending)
            self._last_flush_ms = self._clock()

    def close(self) -> None:
        self._closed = True
        with self._topic_id_lock:  # waits for a partition.metadata write under way; none starts after
            self._topic_id_unwritten = False
        self.epoch_cache.close()  # the same for the leader-epoch-checkpoint
        for segment in self._segments:
            segment.close()

    def assign_topic_id(self, topic_id: str) -> None:
        """Record the topic id of this log's incarnation in partition.metadata (blocking: a durable write)."""
        if topic_id != self.topic_id:
            write_partition_metadata(self.dir, topic_id)
            self.topic_id = topic_id

    def record_topic_id(self, topic_id: str) -> None:
        """Take the topic id of a new log at once and leave partition.metadata to :func:`flush_topic_ids`, as Kafka
        flushes it from a scheduled task: a thousand new partitions then cost no thousand fsyncs before the broker
        answers LeaderAndIsr. A broker that crashes first finds no partition.metadata and adopts the id the next
        LeaderAndIsr carries, as for a log from before topic ids."""
        self.topic_id = topic_id
        self._topic_id_unwritten = True

    @contextlib.contextmanager
    def locked_topic_id_file(self) -> Iterator[tuple[Path, str] | None]:
        """The partition.metadata :meth:`record_topic_id` left unwritten (its path and content), with the log held
        meanwhile (no close) until the block ends; None if there is none to write. The caller writes it, and
        calls :meth:`topic_id_written` if that succeeded."""
        with self._topic_id_lock:
            unwritten = self._topic_id_unwritten and self.topic_id is not None
            yield partition_metadata_file(self.dir, self.topic_id) if unwritten else None

    def topic_id_written(self) -> None:
        """The partition.metadata :meth:`locked_topic_id_file` gave is on disk."""
        self._topic_id_unwritten = False

    def __repr__(self) -> str:
        return (f"Log({self.tp}, start={self.log_start_offset}, hw={self.high_watermark}, "
                f"leo={self.log_end_offset}, segments={len(self._segments)})")


def flush_topic_ids(logs: Sequence[Log]) -> None:
    """Write the partition.metadata :meth:`Log.record_topic_id` left unwritten, of every log together (blocking:
    call it from a worker thread); a failure is logged (a broker restarted without the file adopts the id the
    next LeaderAndIsr carries)."""
    def settle(each: Log, error: OSError | None) -> None:
        if error is None:
            each.topic_id_written()
        else:
            _log.error("%s: cannot write partition.metadata: %s", each.tp, error)

    _write_together(logs, Log.locked_topic_id_file, settle)


def flush_epoch_caches(logs: Sequence[Log]) -> list[tuple[Log, OSError]]:
    """Write the leader-epoch checkpoints of ``logs`` together (blocking: call it from a worker thread); the logs
    whose write failed (their caches stay unflushed)."""
    failed = []

    def settle(each: Log, error: OSError | None) -> None:
        each.epoch_cache.unflushed = error is not None
        if error is not None:
            failed.append((each, error))

    _write_together(logs, lambda each: each.epoch_cache.locked_checkpoint(), settle)
    return failed


def _write_together(logs: Sequence[Log], locked_file: Callable[[Log], AbstractContextManager[tuple[Path, str] | None]],
                    settle: Callable[[Log, OSError | None], None]) -> None:
    """Hold every log's file (`locked_file`, taken in directory order so that two batches cannot deadlock), write
    the files in one batch (DURABLE_WRITER), and `settle` each log with its outcome while the files are held."""
    with contextlib.ExitStack() as held:
        files = [(each, held.enter_context(locked_file(each))) for each in sorted(logs, key=lambda each: each.dir)]
        wanted = [(each, file) for each, file in files if file is not None]
        errors = DURABLE_WRITER.write([file for _each, file in wanted])
        outcomes = {id(each): error for (each, _file), error in zip(wanted, errors, strict=True)}
        for each, _file in files:
            settle(each, outcomes.get(id(each)))
