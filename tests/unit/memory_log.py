"""An in-memory partition log for the replication rules' unit tests: the rules of ``broker.log.log.Log`` that
``Partition`` relies on (``PartitionLog``), with the batches in a list and no file.

Offsets are assigned on a leader's append and each batch is stamped with the leader epoch; a follower's append must
continue the offsets; epochs go to a leader-epoch cache without a checkpoint; the HW stays within [log start, LEO];
reads return whole batches from the one holding the offset, at most ``max_bytes`` (at least one batch) and only
batches ending before ``max_offset``; the log start moves up to at most the HW, dropping the batches below it."""

from __future__ import annotations

from broker.log.epoch_cache import LeaderEpochCache
from broker.log.log import EmptyAppendError, OffsetOutOfRangeError, UnexpectedAppendOffsetError
from broker.log.results import AppendInfo
from protocol.records import BatchHeader, decode_batch, iter_batches, set_base_offset, set_partition_leader_epoch
from protocol.topic_partition import TopicPartition


class MemoryLog:
    """A partition's batches in memory, with its offsets (log start, LEO, HW) and leader epochs."""

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.epoch_cache = LeaderEpochCache()
        self.log_start_offset = 0
        self.high_watermark = 0
        self._batches: list[tuple[BatchHeader, bytes]] = []
        self._end = 0

    @property
    def log_end_offset(self) -> int:
        return self._end

    def assign_epoch_start_offset(self, leader_epoch: int) -> bool:
        return self.epoch_cache.assign(leader_epoch, self._end)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        return self.epoch_cache.end_offset_for(leader_epoch, self._end)

    def update_high_watermark(self, offset: int) -> int:
        self.high_watermark = min(max(offset, self.log_start_offset), self._end)
        return self.high_watermark

    def append_as_leader(self, records: bytes, leader_epoch: int) -> AppendInfo:
        data = bytearray(records)
        next_offset = self._end
        for position, header in self._batches_of(data):
            set_base_offset(data, position, next_offset)
            set_partition_leader_epoch(data, position, leader_epoch)
            next_offset += header.last_offset_delta + 1
        self.epoch_cache.assign(leader_epoch, self._end)
        return self._append(data)

    def append_as_follower(self, records: bytes) -> AppendInfo:
        expected = self._end
        for _position, header in self._batches_of(records):
            if header.base_offset < expected:
                raise UnexpectedAppendOffsetError(
                    f"{self.tp}: batch at offset {header.base_offset} does not follow offset {expected - 1}")
            expected = header.next_offset
            if header.partition_leader_epoch >= 0:
                self.epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
        return self._append(records)

    def _batches_of(self, records: bytes | bytearray) -> list[tuple[int, BatchHeader]]:
        batches = list(iter_batches(records))
        if not batches:
            raise EmptyAppendError(f"{self.tp}: no record batches to append")
        return batches

    def _append(self, data: bytes | bytearray) -> AppendInfo:
        appended = [(header, bytes(data[position:position + header.size_in_bytes]))
                    for position, header in iter_batches(data)]
        self._batches += appended
        first, last = appended[0][0], appended[-1][0]
        self._end = last.next_offset
        return AppendInfo(first.base_offset, last.last_offset, max(header.max_timestamp for header, _ in appended),
                          len(appended), len(data), False, False)

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None) -> bytes:
        if offset < self.log_start_offset or offset > self._end:
            raise OffsetOutOfRangeError(f"{self.tp}: offset {offset} is outside [{self.log_start_offset}, {self._end}]")
        limit = self._end if max_offset is None else min(max_offset, self._end)
        read: list[bytes] = []
        size = 0
        for header, data in self._batches:
            if header.last_offset < offset:
                continue
            if header.last_offset >= limit or (read and size + len(data) > max_bytes):
                break
            read.append(data)
            size += len(data)
            if size >= max_bytes:
                break
        return b"".join(read)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        for header, data in self._batches:
            if header.max_timestamp >= timestamp and header.last_offset >= self.log_start_offset:
                for record in decode_batch(data)[1]:
                    if record.timestamp >= timestamp and record.offset >= self.log_start_offset:
                        return record.timestamp, record.offset
        return None

    def max_timestamp_and_offset(self) -> tuple[int, int] | None:
        largest = max((header.max_timestamp for header, _ in self._batches), default=-1)
        return self.offset_for_timestamp(largest) if largest >= 0 else None

    def delete_records(self, offset: int) -> None:
        if offset > self.high_watermark:
            raise OffsetOutOfRangeError(f"{self.tp}: log start {offset} above the HW {self.high_watermark}")
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            self.epoch_cache.truncate_from_start(offset)
            self._batches = [(header, data) for header, data in self._batches if header.next_offset > offset]
