"""Helpers shared by the log tests: batches, a settable clock, and offsets read back from bytes."""

from __future__ import annotations

from pathlib import Path

from broker.log.cleaner.cleaner import Cleaner, StepHook, no_step
from broker.log.cleaner.manager import LogCleanerManager
from broker.log.cleaner.offset_map import OffsetMap
from broker.log.config import LogConfig
from broker.log.log import Log
from protocol.records import BatchBuilder, Record, decode_records, iter_batches
from protocol.topic_partition import TopicPartition

TP = TopicPartition("events", 0)


class ManualClock:
    """A millisecond clock that only moves when told to."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


def batch(*values: bytes, timestamp: int = 1_700_000_000_000, key: bytes | None = None) -> bytes:
    """One batch of records with the given values, all stamped ``timestamp`` (+1 ms per record)."""
    builder = BatchBuilder()
    for i, value in enumerate(values):
        builder.append(value, key=key, timestamp=timestamp + i)
    return builder.build()


def values_of(data: bytes) -> list[bytes | None]:
    return [record.value for record in decode_records(data)]


def offsets_of(data: bytes) -> list[int]:
    return [record.offset for record in decode_records(data)]


def open_log(directory: Path, clock: ManualClock | None = None, **config: int) -> Log:
    return Log(directory / f"{TP.topic}-{TP.partition}", TP, LogConfig(**config), clock=clock or ManualClock())


def clean_log(log: Log, clock: ManualClock, manager: LogCleanerManager | None = None, step: StepHook = no_step,
              capacity: int = 1 << 20) -> int | None:
    """One pass of the log cleaner as a cleaner thread makes it, the calling thread owning the log (the manager's
    checkpoint files are not written); the new first dirty offset, or None if the log needed no cleaning."""
    manager = manager or LogCleanerManager([log.dir.parent], {log.tp: log})
    job = manager.grab_dirtiest(clock())
    if job is None:
        return None
    cleaner = Cleaner(OffsetMap(capacity), lambda work: work(), lambda _job: None, clock, step)
    end = None
    try:
        end, _stats = cleaner.clean(job)
    finally:
        manager.done_cleaning(job, end)
    return end


def every_record(log: Log) -> list[Record]:
    """Every record of the log, read as a consumer reads it: from the log start, fetch after fetch."""
    found: list[Record] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset and (data := log.read(offset, 1 << 30)):
        found += decode_records(data)
        offset = [header for _position, header in iter_batches(data)][-1].next_offset
    return found
