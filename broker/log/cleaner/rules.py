"""The log cleaner's choices, as pure functions (Kafka 3.9's LogCleanerManager and Cleaner).

A compacted log is, from its start, a *clean* part (cleaned before: at most one record per key) and a *dirty* part,
from the *first dirty offset* (the cleaner-offset-checkpoint entry) on. The dirty part is *cleanable* up to the
*first uncleanable offset*; the rest waits. The rules:

- :func:`first_dirty_offset`: the checkpoint, or the log start when there is none or it is out of the log.
- :func:`first_uncleanable_offset`: never the active segment, never past the high watermark (Kafka's last stable
  offset, which is the HW without transactions), never a segment whose largest timestamp is within
  min.compaction.lag.ms of now.
- :func:`cleanable_bytes`: the cleaning covers whole segments only, up to the segment holding the first uncleanable
  offset.
- :func:`compaction_delay`: by how much max.compaction.lag.ms has passed for the oldest dirty segment.
- :func:`dirtiest`: the log cleaned next: of the logs whose dirty ratio is over min.cleanable.dirty.ratio, or
  that have cleanable bytes and a passed max.compaction.lag.ms, the one with the largest dirty ratio.
- :func:`group_segments`: the segments cleaned into one replacement, under segment.bytes and the index size.
- :func:`retained_records`, :func:`delete_horizon`, :func:`keeps_empty_batch`: what of a batch survives.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import compress, repeat
from operator import ge
from typing import NamedTuple, TypeVar

from protocol.records import BatchHeader

K = TypeVar("K")
#: The largest offset a segment's index can hold relative to its base offset (Int.MaxValue).
MAX_RELATIVE_OFFSET = 2**31 - 1
#: Bytes of one entry of the offset index and of the time index.
OFFSET_INDEX_ENTRY, TIME_INDEX_ENTRY = 8, 12


class SegmentInfo(NamedTuple):
    """What the rules read of one segment."""

    base_offset: int
    size: int
    #: The largest record timestamp (-1: none).
    max_timestamp: int
    #: The maxTimestamp of its first batch (None: no batch).
    first_batch_timestamp: int | None
    offset_index_entries: int = 0
    time_index_entries: int = 0


class LogState(NamedTuple):
    """What the rules read of one log: its segments (the last is the active one), offsets and compaction settings."""

    segments: tuple[SegmentInfo, ...]
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    min_cleanable_dirty_ratio: float
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int


class DirtyRange(NamedTuple):
    """Kafka's OffsetsToClean: where the dirty part starts, where cleaning must stop, and whether the checkpoint was
    wrong and should be rewritten with the first dirty offset."""

    first_dirty: int
    first_uncleanable: int
    reset_checkpoint: bool


class Candidate(NamedTuple):
    """Kafka's LogToClean: a log's clean bytes, cleanable bytes and how far past max.compaction.lag.ms it is."""

    first_dirty: int
    #: The base offset of the first segment not cleaned (cleaning stops at a segment boundary).
    first_uncleanable: int
    clean_bytes: int
    cleanable_bytes: int
    compaction_delay_ms: int

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def dirty_ratio(self) -> float:
        """Kafka's cleanableRatio: cleanable bytes over the bytes of the clean and cleanable parts."""
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def first_dirty_offset(checkpoint: int | None, log_start_offset: int, log_end_offset: int) -> tuple[int, bool]:
    """Where the dirty part starts, and whether the checkpoint must be reset to it: the checkpoint, or the log start
    offset when there is no checkpoint (False), when it is below the log start (retention or DeleteRecords moved the
    start past it) or above the log end (the log was truncated below it): both True."""
    if checkpoint is None:
        return log_start_offset, False
    if checkpoint < log_start_offset or checkpoint > log_end_offset:
        return log_start_offset, True
    return checkpoint, False


def _dirty_inactive(segments: Sequence[SegmentInfo], first_dirty: int) -> Sequence[SegmentInfo]:
    """The segments from the one holding ``first_dirty`` up to, not including, the active segment (Kafka's
    nonActiveLogSegmentsFrom): none if ``first_dirty`` is in the active segment."""
    if first_dirty >= segments[-1].base_offset:
        return ()
    return segments[_segment_holding(segments, first_dirty):-1]


def first_uncleanable_offset(log: LogState, first_dirty: int, now_ms: int) -> int:
    """The first offset the cleaner must not clean: the smallest of the high watermark, the active segment's base
    offset and (with min.compaction.lag.ms) the base offset of the first dirty segment whose largest timestamp is
    within that lag of ``now_ms``; never below ``first_dirty``."""
    bounds = [log.high_watermark, log.segments[-1].base_offset]
    if log.min_compaction_lag_ms > 0:
        recent = next((s.base_offset for s in _dirty_inactive(log.segments, first_dirty)
                       if s.max_timestamp > now_ms - log.min_compaction_lag_ms), None)
        if recent is not None:
            bounds.append(recent)
    return max(first_dirty, min(bounds))


def cleanable_range(log: LogState, checkpoint: int | None, now_ms: int) -> DirtyRange:
    """Kafka's cleanableOffsets: :func:`first_dirty_offset`, then :func:`first_uncleanable_offset` from it."""
    first_dirty, reset = first_dirty_offset(checkpoint, log.log_start_offset, log.log_end_offset)
    return DirtyRange(first_dirty, first_uncleanable_offset(log, first_dirty, now_ms), reset)


def _segment_holding(segments: Sequence[SegmentInfo], offset: int) -> int:
    """The index of the last segment whose base offset is <= ``offset`` (0 if none is)."""
    return next((i for i in range(len(segments) - 1, -1, -1) if segments[i].base_offset <= offset), 0)


def cleanable_bytes(segments: Sequence[SegmentInfo], first_dirty: int, uncleanable: int) -> tuple[int, int]:
    """Kafka's calculateCleanableBytes: the base offset of the segment holding ``uncleanable`` (the active segment at
    most), where cleaning stops, and the bytes of the segments from the one holding ``first_dirty`` up to it."""
    stop = min(_segment_holding(segments, uncleanable), len(segments) - 1)
    first_uncleanable = segments[stop].base_offset
    start = _segment_holding(segments, min(first_dirty, first_uncleanable))
    return first_uncleanable, sum(s.size for s in segments[start:stop])


def compaction_delay(log: LogState, first_dirty: int, now_ms: int) -> int:
    """Kafka's maxCompactionDelay: how long ago max.compaction.lag.ms passed for the earliest first batch timestamp
    of the dirty segments (the active one excluded, timestamps <= 0 ignored); 0 if it has not."""
    timestamps = [s.first_batch_timestamp for s in _dirty_inactive(log.segments, first_dirty)
                  if s.first_batch_timestamp is not None and s.first_batch_timestamp > 0]
    clean_until = now_ms - max(log.max_compaction_lag_ms, 0)
    earliest = min(timestamps, default=None)
    return clean_until - earliest if earliest is not None and earliest < clean_until else 0


def candidate(log: LogState, dirty: DirtyRange, now_ms: int) -> Candidate:
    """The log as a candidate for cleaning, with the clean part's bytes (the segments before the first dirty
    offset's)."""
    first_uncleanable, cleanable = cleanable_bytes(log.segments, dirty.first_dirty, dirty.first_uncleanable)
    clean = sum(s.size for s in log.segments if s.base_offset < dirty.first_dirty)
    return Candidate(dirty.first_dirty, first_uncleanable, clean, cleanable,
                     compaction_delay(log, dirty.first_dirty, now_ms))


def is_cleanable(found: Candidate, min_cleanable_dirty_ratio: float) -> bool:
    """A log is cleaned when it has cleanable bytes and max.compaction.lag.ms has passed, or when its dirty ratio
    is over min.cleanable.dirty.ratio; an empty log never is."""
    if found.total_bytes <= 0:
        return False
    return (found.compaction_delay_ms > 0 and found.cleanable_bytes > 0) or \
        found.dirty_ratio > min_cleanable_dirty_ratio


def dirtiest(candidates: Mapping[K, tuple[Candidate, float]]) -> K | None:
    """Kafka's grabFilthiestCompactedLog: of the candidates (each with its min.cleanable.dirty.ratio) that are
    cleanable, the one with the largest dirty ratio (the first of equals); None if none is."""
    cleanable = [(found.dirty_ratio, key) for key, (found, ratio) in candidates.items() if is_cleanable(found, ratio)]
    best = max(cleanable, key=lambda pair: pair[0], default=None)
    return None if best is None else best[1]


def group_segments(segments: Sequence[SegmentInfo], max_size: int, max_index_size: int,
                   first_uncleanable: int) -> list[range]:
    """Kafka's groupSegmentsBySize: runs of consecutive segments (as ranges of their indexes), each cleaned into one
    segment. A run grows while its log bytes stay within segment.bytes (``max_size``), its offset index and time
    index bytes each within segment.index.bytes (``max_index_size``), and its offsets within what one index can
    address from its base (the next segment's base offset, or ``first_uncleanable`` after the last, bounds a
    segment's last offset; an empty segment is not checked)."""
    groups: list[range] = []
    start = 0
    while start < len(segments):
        first = segments[start]
        size, index, time_index = first.size, first.offset_index_entries, first.time_index_entries
        stop = start + 1
        while stop < len(segments):
            head = segments[stop]
            last_offset = segments[stop + 1].base_offset - 1 if stop + 1 < len(segments) else first_uncleanable - 1
            if (size + head.size > max_size
                    or (index + head.offset_index_entries) * OFFSET_INDEX_ENTRY > max_index_size
                    or (time_index + head.time_index_entries) * TIME_INDEX_ENTRY > max_index_size
                    or (head.size and last_offset - first.base_offset > MAX_RELATIVE_OFFSET)):
                break
            size, index, time_index = (size + head.size, index + head.offset_index_entries,
                                       time_index + head.time_index_entries)
            stop += 1
        groups.append(range(start, stop))
        start = stop
    return groups


def retained_records(offsets: Sequence[int], keys: Sequence[bytes | None], tombstones: Sequence[bool],
                     latest: Mapping[bytes, int], map_end: int, keep_tombstones: bool) -> list[int]:
    """Kafka's shouldRetainRecord, for a batch's records at once: the indexes of those kept. A record past the
    offset map's last offset (``map_end``) is kept; a record without a key is dropped (a compacted topic refuses
    them at produce time); a keyed record is kept if it is its key's latest (its offset >= ``latest[key]``, -1 for
    a key the map lacks) and it is no tombstone, or ``keep_tombstones``."""
    get = latest.get
    if offsets and offsets[-1] <= map_end and None not in keys and (keep_tombstones or True not in tombstones):
        # The usual batch, decided without a Python step per record: every record keyed, none kept for being past
        # the map or dropped for being a tombstone.
        return list(compress(range(len(offsets)), map(ge, offsets, map(get, keys, repeat(-1)))))
    return [i for i, (offset, key, tombstone) in enumerate(zip(offsets, keys, tombstones, strict=True))
            if offset > map_end or (key is not None and offset >= get(key, -1) and (keep_tombstones or not tombstone))]


def retained_of_mapped_batch(offsets: Sequence[int], latest: Sequence[int], tombstones: Sequence[bool],
                             keep_tombstones: bool) -> list[int] | None:
    """retained_records for a batch whose every record the offset map was built from, given the batch's offsets that
    are some key's latest (``latest``, in order): there a record is kept if it is its key's latest, so the keys need
    no look-up. None unless the batch's offsets are consecutive (a batch a cleaning already thinned: use
    retained_records)."""
    if not offsets or offsets[-1] - offsets[0] != len(offsets) - 1:
        return None
    base = offsets[0]
    if keep_tombstones:
        return [offset - base for offset in latest]
    return [i for i in (offset - base for offset in latest) if not tombstones[i]]


def keeps_tombstones(header: BatchHeader, now_ms: int) -> bool:
    """Whether a batch's tombstones survive this cleaning: until the delete horizon the cleaner set on its first
    pass over them has come."""
    horizon = header.delete_horizon_ms
    return horizon is None or now_ms < horizon


def delete_horizon(header: BatchHeader, retained_tombstones: Iterable[bool], now_ms: int,
                   delete_retention_ms: int) -> int | None:
    """The delete horizon a rewritten batch carries: the one it had, or, for the first cleaning to keep a tombstone
    of it, now + delete.retention.ms (after which a later cleaning drops its tombstones); None when it keeps no
    tombstone and had none."""
    if header.delete_horizon_ms is not None:
        return header.delete_horizon_ms
    if any(retained_tombstones):
        return now_ms + delete_retention_ms
    return None


def keeps_empty_batch(header: BatchHeader, producer_last_offsets: Mapping[int, int], round_end: int) -> bool:
    """Kafka's BatchRetention.RETAIN_EMPTY: a batch none of whose records survive is still written, empty, if it is
    its producer's last batch (so the producer's sequence numbers and epoch survive), or if it is the last batch of
    the cleaning round (it ends at ``round_end``, so the log's last offset before the uncleaned part survives)."""
    if header.producer_id >= 0 and producer_last_offsets.get(header.producer_id) == header.last_offset:
        return True
    return header.next_offset == round_end
