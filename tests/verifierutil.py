"""Broker log directories written by minikafka's own log code, for the verifier's tests: replicas of partitions
with chosen batches (values and leader epochs), high watermarks and recovery points."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from broker.log.checkpoint import (
    CLEANER_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
    write_meta_properties,
)
from broker.log.config import LogConfig
from broker.log.log import Log
from protocol.records import BatchBuilder
from protocol.topic_partition import TopicPartition
from tests.unit.logutil import ManualClock, clean_log

#: One batch: (leader epoch, values), each value a record (keyed by nothing).
Batches = Sequence[tuple[int, Sequence[bytes]]]
#: One batch of keyed records: (leader epoch, [(key, value)]); a None value is a tombstone.
KeyedBatches = Sequence[tuple[int, Sequence[tuple[bytes, bytes | None]]]]


def log_dir(root: Path, broker: int) -> Path:
    """``root/broker-N``, a log directory of broker N (meta.properties written)."""
    directory = root / f"broker-{broker}"
    directory.mkdir(parents=True, exist_ok=True)
    write_meta_properties(directory, broker)
    return directory


def write_replica(directory: Path, topic: str, partition: int, batches: Batches, *, hw: int | None = None,
                  recovery_point: int | None = None, segment_bytes: int = 1024 * 1024,
                  keys: bool = False) -> Path:
    """Append the batches as a leader would (offsets from 0, each batch's epoch stamped and put in the epoch cache),
    close the log, and set the partition's checkpoint entries: HW (default: the LEO) and recovery point (default:
    the LEO). Returns the partition directory."""
    tp = TopicPartition(topic, partition)
    log = Log(directory / f"{topic}-{partition}", tp, LogConfig(segment_bytes=segment_bytes), clock=ManualClock())
    for epoch, values in batches:
        builder = BatchBuilder()
        for value in values:
            builder.append(value, key=value if keys else None, timestamp=1_700_000_000_000)
        log.append_as_leader(builder.build(), epoch)
    leo = log.log_end_offset
    log.flush()
    log.close()
    set_checkpoint(directory, REPLICATION_OFFSET_CHECKPOINT, tp, leo if hw is None else hw)
    set_checkpoint(directory, RECOVERY_POINT_CHECKPOINT, tp, leo if recovery_point is None else recovery_point)
    return directory / f"{topic}-{partition}"


def write_compacted_replica(directory: Path, topic: str, partition: int, batches: KeyedBatches, *,
                            cleanings: Sequence[tuple[int, int]] = (), skip: Collection[int] = (),
                            segment_bytes: int = 400, delete_retention_ms: int = 1000,
                            named: bool = True) -> Path:
    """A replica of a compacted partition: the batches at the offsets a leader gave them (those whose index is in
    ``skip`` left out), then cleaned by the log cleaner once per ``(high watermark, ms later)`` of ``cleanings``,
    its high watermark set to each, the clock moved on by the other. HW and recovery point checkpoints at the LEO;
    with ``named``, the cleaner-offset-checkpoint entry the cleaner left. Returns the partition directory."""
    tp = TopicPartition(topic, partition)
    clock = ManualClock()
    config = LogConfig(segment_bytes=segment_bytes, cleanup_policy=("compact",),
                       delete_retention_ms=delete_retention_ms, min_cleanable_dirty_ratio=0.0)
    log = Log(directory / f"{topic}-{partition}", tp, config, clock=clock)
    offset = 0
    for number, (epoch, pairs) in enumerate(batches):
        builder = BatchBuilder(base_offset=offset, partition_leader_epoch=epoch)
        for key, value in pairs:
            builder.append(value, key=key, timestamp=1_700_000_000_000)
        if number not in skip:
            log.append_as_follower(builder.build())
        offset += len(pairs)
    end = None
    for hw, later_ms in cleanings:
        log.update_high_watermark(hw)
        end = clean_log(log, clock) or end
        clock.advance(later_ms)
    leo = log.log_end_offset
    log.flush()
    log.close()
    set_checkpoint(directory, REPLICATION_OFFSET_CHECKPOINT, tp, leo)
    set_checkpoint(directory, RECOVERY_POINT_CHECKPOINT, tp, leo)
    if named and end is not None:
        set_checkpoint(directory, CLEANER_OFFSET_CHECKPOINT, tp, end)
    return directory / f"{topic}-{partition}"


def set_checkpoint(directory: Path, name: str, tp: TopicPartition, offset: int | None) -> None:
    """Set (or, with None, remove) one partition's entry in a log directory's offset checkpoint file."""
    file = OffsetCheckpointFile(directory / name)
    entries = file.read()
    if offset is None:
        entries.pop(tp, None)
    else:
        entries[tp] = offset
    file.write(entries)


def flip_byte(path: Path, position: int) -> None:
    """Invert every bit of one byte of a file."""
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0xFF]))
