"""Helpers of the compaction tests: keyed records produced with a history, read back from a replica's files, each
key's latest record, and what the cleaner left in a log dir."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from broker.log.checkpoint import CLEANER_OFFSET_CHECKPOINT, OffsetCheckpointFile
from client.cluster import ClusterState
from client.consumer import ConsumerRecord
from client.outcomes import track_outcome
from client.producer import Producer
from protocol.history import OK, HistoryWriter, Outcome
from protocol.records import Record, decode_records
from protocol.topic_partition import TopicPartition

#: (partition, key) -> (offset, value) of the key's latest record.
Latest = dict[tuple[int, bytes], tuple[int, bytes | None]]
#: The suffixes of the files a replacement of segments leaves while it is under way.
SWAP_FILES = (".cleaned", ".swap", ".deleted")


async def produce_keyed(cluster: ClusterState, topic: str, pairs: Iterable[tuple[bytes, bytes | None]],
                        history: HistoryWriter, **settings: object) -> None:
    """Produce (key, value) records with acks=all, each outcome to the history."""
    async with Producer(cluster.bootstrap_servers, acks="all", linger_ms=5, **settings) as producer:
        for key, value in pairs:
            track_outcome(history, topic, key, value, await producer.send(topic, value, key=key))
        await producer.flush()


def latest_of(records: Iterable[ConsumerRecord | Record], partition: int | None = None) -> Latest:
    """Each key's latest record (``partition`` for records that do not carry theirs)."""
    latest: Latest = {}
    for record in records:
        where = (getattr(record, "partition", partition), record.key)
        if where not in latest or latest[where][0] < record.offset:
            latest[where] = (record.offset, record.value)
    return latest


def latest_acked(outcomes: Iterable[Outcome]) -> Latest:
    """Each key's latest acknowledged record."""
    latest: Latest = {}
    for o in outcomes:
        if o.status == OK and o.key is not None and ((o.partition, o.key) not in latest
                                                     or latest[(o.partition, o.key)][0] < o.offset):
            latest[(o.partition, o.key)] = (o.offset, o.value)
    return latest


def lost_latest(acked: Latest, found: Latest) -> list[str]:
    """The keys whose latest acknowledged record the log lacks: it must hold that record, or a later one of its key
    (whose outcome the producer may not have known); an acknowledged tombstone may be gone with its key."""
    lost = []
    for where, (offset, value) in acked.items():
        there = found.get(where)
        if there is None and value is None:
            continue
        if there is None or there[0] < offset or (there[0] == offset and there[1] != value):
            lost.append(f"{where}: acknowledged {offset}={value!r}, the log has {there}")
    return lost


def replica_records(log_dir: Path, tp: TopicPartition) -> list[Record]:
    """Every record of a replica's segment files, read from the files; OSError while the cleaner replaces some."""
    directory = log_dir / f"{tp.topic}-{tp.partition}"
    return [record for segment in sorted(directory.glob("*.log")) for record in decode_records(segment.read_bytes())]


def cleaner_checkpoint(log_dir: Path, tp: TopicPartition) -> int | None:
    """The partition's entry in the log dir's cleaner-offset-checkpoint."""
    return OffsetCheckpointFile(log_dir / CLEANER_OFFSET_CHECKPOINT).read().get(tp)


def swap_files(log_dir: Path, tp: TopicPartition) -> list[str]:
    return [p.name for p in (log_dir / f"{tp.topic}-{tp.partition}").iterdir() if p.name.endswith(SWAP_FILES)]
