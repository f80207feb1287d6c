"""How the segment files are cut into tasks: one split per segment, and large segments into byte ranges.

A range boundary must be the position of a batch. The offset index (``.index``: 4-byte relative offset, 4-byte
position, each entry naming a batch's last offset and the position where it starts) gives candidates; each one is
checked on the driver by reading the batch header it points at (magic 2, a plausible length, and the indexed offset
within the batch). A Kafka index may be preallocated and zero-filled past its entries, and an index may be stale or
damaged: entries stop counting at the first one that does not move forward, and a candidate that fails the check
is not used (the range before it just grows).
"""

from __future__ import annotations

import heapq
import itertools
import os
import struct
from dataclasses import dataclass

from protocol.records import HEADER_SIZE, LOG_OVERHEAD, MAGIC
from verifier.layout import Replica, Segment

#: Segments larger than this are cut into ranges of about this size.
SPLIT_BYTES = 32 * 1024 * 1024
_ENTRY = struct.Struct(">ii")
_HEADER_START = struct.Struct(">qiib")  # baseOffset, batchLength, partitionLeaderEpoch, magic
_LAST_OFFSET_DELTA = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Split:
    """A byte range [start, end) of one segment file of one replica."""

    replica_id: int
    broker: int
    topic: str
    partition: int
    segment: int
    path: str
    start: int
    end: int
    #: The range ends where the replica's log ends (its active segment's end): a partial batch there is a torn tail.
    tail_may_tear: bool


def plan_splits(replicas: list[Replica], split_bytes: int = SPLIT_BYTES) -> list[Split]:
    splits = []
    for replica in replicas:
        for number, segment in enumerate(replica.segments):
            active = number == len(replica.segments) - 1
            bounds = [0, *_boundaries(segment, split_bytes), segment.size]
            for start, end in itertools.pairwise(bounds):
                if start < end:
                    splits.append(Split(replica.replica_id, replica.broker, replica.topic, replica.partition,
                                        segment.base_offset, segment.path, start, end,
                                        active and end == segment.size))
    return splits


def _boundaries(segment: Segment, split_bytes: int) -> list[int]:
    """Checked batch positions about every ``split_bytes`` inside the segment (none for a small one)."""
    if segment.size <= split_bytes or segment.index_path is None:
        return []
    try:
        with open(segment.index_path, "rb") as f:
            index = f.read()
    except OSError:
        return []
    chosen: list[int] = []
    last_offset = last_position = -1
    fd = os.open(segment.path, os.O_RDONLY)
    try:
        for relative, position in _ENTRY.iter_unpack(index[: len(index) - len(index) % _ENTRY.size]):
            if relative <= last_offset or position <= last_position or position >= segment.size:
                break  # the end of the entries (a preallocated index is zero-filled) or a damaged index
            last_offset, last_position = relative, position
            if position - (chosen[-1] if chosen else 0) >= split_bytes and segment.size - position >= split_bytes // 4 \
                    and _is_batch_of(fd, position, segment.base_offset + relative):
                chosen.append(position)
    finally:
        os.close(fd)
    return chosen


def _is_batch_of(fd: int, position: int, offset: int) -> bool:
    """Whether a batch holding ``offset`` starts at ``position``."""
    header = os.pread(fd, HEADER_SIZE, position)
    if len(header) < HEADER_SIZE:
        return False
    base_offset, batch_length, _epoch, magic = _HEADER_START.unpack_from(header)
    (last_delta,) = _LAST_OFFSET_DELTA.unpack_from(header, 23)
    return magic == MAGIC and batch_length >= HEADER_SIZE - LOG_OVERHEAD and base_offset <= offset <= \
        base_offset + last_delta


def group_splits(splits: list[Split], groups: int) -> list[list[Split]]:
    """The splits dealt into at most ``groups`` groups of about equal bytes (largest first, each to the lightest
    group): one group is one task, so a task's fixed cost is paid per group rather than per split."""
    heap = [(0, number, []) for number in range(max(1, min(groups, len(splits))))]
    for split in sorted(splits, key=lambda s: s.end - s.start, reverse=True):
        size, number, members = heapq.heappop(heap)
        members.append(split)
        heapq.heappush(heap, (size + split.end - split.start, number, members))
    return [members for _size, _number, members in sorted(heap, key=lambda entry: entry[1]) if members]
