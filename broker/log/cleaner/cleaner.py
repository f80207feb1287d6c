"""Cleaning one log (Kafka's Cleaner): the offset map of its dirty part, then each group of segments copied into one
cleaned segment with only the records that survive, put in the place of the group as soon as it is written.

It runs on a cleaner thread. It reads segments through its own pinned descriptors and writes the cleaned segment's
``.cleaned`` files, both without the log's owner; the replacement itself (renames and the segment list) runs on the
thread that owns the log (``owner``), which refuses it if the log was truncated, closed or lost those segments in
the meantime. Offsets, leader epochs, the HW and the LEO never change: a batch keeps its base offset and last
offset, and a batch emptied of records is kept (empty) where Kafka keeps one.

Records are read and batches written by ``protocol.records`` (``read_stored_records``, ``build_retained_batch``,
``build_empty_batch``). A compressed batch is read decompressed; kept whole it is copied as it is, kept in part its
surviving records are compressed again with its codec (Kafka's MemoryRecords.filterTo); emptied, it becomes Kafka's
uncompressed empty batch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from broker.log.checkpoint import fsync_dir
from broker.log.cleaner import rules
from broker.log.cleaner.offset_map import OffsetMap
from broker.log.config import LogConfig
from broker.log.log import Log, ReplacementRefusedError
from broker.log.segment import LogSegment
from protocol.records import (
    BatchHeader,
    StoredRecords,
    TruncatedBatchError,
    build_empty_batch,
    build_retained_batch,
    read_header,
    read_record_keys,
    read_stored_records,
)
from protocol.topic_partition import TopicPartition

log = logging.getLogger(__name__)

T = TypeVar("T")
#: Runs a function on the thread that owns the logs and returns what it returns (or raises what it raises).
Owner = Callable[[Callable[[], T]], T]
#: Called at each step of a replacement with its name ("cleaned", "swap", "deleted", "replaced"): a test's hook.
StepHook = Callable[[str], None]
#: Bytes of cleaned batches gathered before they are written to the cleaned segment.
WRITE_BYTES = 1024 * 1024


class CleaningAbortedError(Exception):
    """The cleaning of a log stopped: the log changed under it, or the cleaner is stopping."""


def no_step(_step: str) -> None:
    """The default step hook: nothing."""


@dataclass(frozen=True, slots=True)
class CleaningJob:
    """Kafka's LogToClean: a log and what the rules chose to clean of it, with its segments and truncation count
    as they were then."""

    tp: TopicPartition
    log: Log
    segments: tuple[LogSegment, ...]
    first_dirty: int
    first_uncleanable: int
    truncations: int
    config: LogConfig


@dataclass(slots=True)
class CleanerStats:
    """What a cleaning read and wrote (Kafka's CleanerStats), for its log line."""

    started: float = field(default_factory=time.monotonic)
    map_done: float = 0.0
    ended: float = 0.0
    map_bytes_read: int = 0
    map_records_read: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_written: int = 0

    def summary(self) -> str:
        elapsed = max(self.ended - self.started, 1e-9)
        mb = 1024 * 1024
        return (f"{self.bytes_read / mb:.1f} MB of log processed in {elapsed:.1f} s "
                f"({self.bytes_read / mb / elapsed:.1f} MB/s; the offset map of {self.map_bytes_read / mb:.1f} MB "
                f"took {self.map_done - self.started:.1f} s); {self.records_read} records to {self.records_written}, "
                f"{self.bytes_read} bytes to {self.bytes_written}")


class Cleaner:
    """Cleans one log at a time with one offset map (one per cleaner thread)."""

    def __init__(self, offset_map: OffsetMap, owner: Owner, check_done: Callable[[CleaningJob], None],
                 clock: Callable[[], int], step: StepHook = no_step) -> None:
        self.offset_map = offset_map
        self._owner = owner
        self._check_done = check_done
        self._clock = clock
        self._step = step

    def clean(self, job: CleaningJob) -> tuple[int, CleanerStats]:
        """Clean the job's log from its start up to where the offset map reaches (at most its first uncleanable
        offset); returns the offset after that (the next first dirty offset) and what was done. Raises
        CleaningAbortedError if the log changed meanwhile (the groups replaced so far stay replaced)."""
        now = self._clock()
        stats = CleanerStats()
        producers: dict[int, int] = {}
        self._build_offset_map(job, stats, producers)
        end = max(self.offset_map.latest_offset + 1, job.first_dirty)
        stats.map_done = time.monotonic()
        inactive = [segment for segment in job.segments[:-1] if segment.base_offset < end]
        self._producers_of_clean_part(job, inactive, producers)
        groups = rules.group_segments([_info(segment) for segment in inactive], job.config.segment_bytes,
                                      job.config.segment_index_bytes, job.first_uncleanable)
        for group in groups:
            self._clean_group(job, [inactive[i] for i in group], now, producers, stats)
        stats.ended = time.monotonic()
        return end, stats

    # -- the offset map -----------------------------------------------------------------------------------------------

    def _build_offset_map(self, job: CleaningJob, stats: CleanerStats, producers: dict[int, int]) -> None:
        """Kafka's buildOffsetMap: every keyed record from the first dirty offset to the first uncleanable one, until
        the map is full; the map's last offset is where it stopped. Each idempotent producer's last batch is noted on
        the way."""
        offset_map = self.offset_map
        offset_map.clear()
        dirty = [(segment, following) for segment, following in _with_next_base(job.segments, job.first_uncleanable)
                 if segment.base_offset < job.first_uncleanable and following > job.first_dirty]
        for segment, following in dirty:
            if self._map_segment(job, segment, following, stats, producers):
                return
            offset_map.update_latest_offset(following - 1)

    def _map_segment(self, job: CleaningJob, segment: LogSegment, following: int, stats: CleanerStats,
                     producers: dict[int, int]) -> bool:
        """Map one segment's records from the first dirty offset on; True if the map filled up in it."""
        start, offset_map = job.first_dirty, self.offset_map
        with _reading(job, segment):
            for buf, at in segment.batches(segment.offset_index.lookup(start)):
                self._check_done(job)
                header, offsets, keys = read_record_keys(buf, at)
                stats.map_bytes_read += header.size_in_bytes
                stats.map_records_read += header.record_count
                if header.last_offset < start:
                    continue
                if header.producer_id >= 0 and not header.is_control:
                    producers[header.producer_id] = header.last_offset
                if not header.is_control:
                    if header.base_offset < start or None in keys:
                        keyed = [(k, o) for k, o in zip(keys, offsets, strict=True) if k is not None and o >= start]
                        keys, offsets = [k for k, _ in keyed], [o for _, o in keyed]
                    recorded = offset_map.put_all(keys, offsets)
                    if recorded < len(keys):
                        if recorded:
                            offset_map.update_latest_offset(offsets[recorded - 1])
                        return True
                offset_map.update_latest_offset(header.last_offset)
        return False

    def _producers_of_clean_part(self, job: CleaningJob, segments: Sequence[LogSegment],
                                 producers: dict[int, int]) -> None:
        """Note the last batch of each idempotent producer of the clean part (before the first dirty offset) that
        has none in the dirty part: its last batch there is its last in the part cleaned."""
        seen = dict(producers)
        for segment in segments:
            if segment.base_offset >= job.first_dirty:
                break
            with _reading(job, segment):
                for buf, at in segment.batches():
                    self._check_done(job)
                    header = read_header(buf, at)
                    if header.base_offset >= job.first_dirty:
                        break
                    if header.producer_id >= 0 and header.producer_id not in seen and not header.is_control:
                        producers[header.producer_id] = header.last_offset

    # -- cleaning ---------------------------------------------------------------------------------------------------

    def _clean_group(self, job: CleaningJob, group: list[LogSegment], now: int, producers: dict[int, int],
                     stats: CleanerStats) -> None:
        """Kafka's cleanSegments: the group's surviving batches into one cleaned segment, flushed, then put in the
        group's place by the log's owner; the group's files are removed after."""
        cleaned = job.log.new_cleaned_segment(group[0].base_offset)
        try:
            with cleaned.pinned():
                for segment in group:
                    self._clean_into(job, segment, cleaned, now, producers, stats)
                cleaned.on_become_inactive()
                cleaned.flush()
            self._step("cleaned")
            self._owner(lambda: job.log.replace_segments(cleaned, group, job.truncations, self._step))
        except ReplacementRefusedError as e:
            cleaned.delete()
            raise CleaningAbortedError(str(e)) from None
        except BaseException:
            cleaned.delete()
            raise
        fsync_dir(job.log.dir)
        self._step("replaced")
        for segment in group:
            segment.delete()

    def _clean_into(self, job: CleaningJob, segment: LogSegment, cleaned: LogSegment, now: int,
                    producers: dict[int, int], stats: CleanerStats) -> None:
        """Kafka's cleanInto: the batches of ``segment`` that survive, whole or in part, appended to ``cleaned``."""
        out = bytearray()
        placed: list[tuple[int, BatchHeader]] = []
        with _reading(job, segment):
            for buf, at in segment.batches():
                self._check_done(job)
                header, kept = self._surviving(job, buf, at, now, producers, stats)
                if kept is not None:
                    placed.append((len(out), header))
                    out += kept
                    if len(out) >= WRITE_BYTES:
                        cleaned.append(out, placed)
                        stats.bytes_written += len(out)
                        out, placed = bytearray(), []
        if placed:
            cleaned.append(out, placed)
            stats.bytes_written += len(out)

    def _surviving(self, job: CleaningJob, buf: bytes, at: int, now: int, producers: dict[int, int],
                   stats: CleanerStats) -> tuple[BatchHeader, bytes | memoryview | None]:
        """What survives of the batch at buf[at:]: its header and bytes (itself, a copy of it with fewer records or a
        delete horizon, or an empty batch), or None."""
        header = read_header(buf, at)
        original = memoryview(buf)[at:at + header.size_in_bytes]
        stats.bytes_read += header.size_in_bytes
        stats.records_read += header.record_count
        if header.is_control:
            stats.records_written += header.record_count
            return header, original
        offset_map, keep_tombstones = self.offset_map, rules.keeps_tombstones(header, now)
        mapped = job.first_dirty <= header.base_offset and header.last_offset <= offset_map.latest_offset
        latest = offset_map.latest_offsets_between(header.base_offset, header.last_offset) if mapped else None
        if latest == []:  # a batch the map covers and none of whose records is its key's latest is not even read
            records, retained = None, []
        else:
            header, records = read_stored_records(buf, at, with_keys=latest is None)  # validated too
            retained = self._retained(records, latest, keep_tombstones)
        stats.records_written += len(retained)
        if records is not None and retained:
            horizon = rules.delete_horizon(header, (records.tombstones[i] for i in retained), now,
                                           job.config.delete_retention_ms)
            if len(retained) == header.record_count and horizon == header.delete_horizon_ms:
                return header, original
            rebuilt = build_retained_batch(header, records, retained, horizon)
            return read_header(rebuilt), rebuilt
        if rules.keeps_empty_batch(header, producers, job.first_uncleanable):
            empty = build_empty_batch(header)
            return read_header(empty), empty
        return header, None


    def _retained(self, records: StoredRecords, latest: list[int] | None, keep_tombstones: bool) -> list[int]:
        """The indexes of the records kept, by the offsets in ``latest`` if the map covers the batch (not None),
        else by looking up each record's key."""
        if latest is not None:
            retained = rules.retained_of_mapped_batch(records.offsets, latest, records.tombstones, keep_tombstones)
            if retained is not None:
                return retained
        assert records.keys is not None, "records whose keys were not read have consecutive offsets"
        return rules.retained_records(records.offsets, records.keys, records.tombstones, self.offset_map.offsets,
                                      self.offset_map.latest_offset, keep_tombstones)


@contextmanager
def _reading(job: CleaningJob, segment: LogSegment) -> Iterator[None]:
    """Read a segment of the job's log (its descriptor pinned); CleaningAbortedError if its owner removed or cut it
    meanwhile (retention, DeleteRecords or a truncation: the replacement would be refused anyway)."""
    try:
        with segment.pinned(create=False):
            yield
    except (FileNotFoundError, TruncatedBatchError) as e:
        raise CleaningAbortedError(f"{job.tp}: segment {segment.base_offset} changed while it was read: {e}") from e


def _with_next_base(segments: Sequence[LogSegment], last_end: int) -> Iterator[tuple[LogSegment, int]]:
    """Each segment with the base offset of the one after it (``last_end`` after the last)."""
    following = [segment.base_offset for segment in segments[1:]] + [last_end]
    return zip(segments, following, strict=True)


def _info(segment: LogSegment) -> rules.SegmentInfo:
    return rules.SegmentInfo(segment.base_offset, segment.size, segment.max_timestamp, segment.first_batch_timestamp,
                             len(segment.offset_index), len(segment.time_index))
