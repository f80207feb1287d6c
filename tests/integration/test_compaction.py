"""Compacted topics on a real cluster (a real ZooKeeper, three broker processes): 10,000 keys overwritten six times
are cleaned by every replica to each key's latest value, tombstones go once delete.retention.ms has passed, Kafka's
DumpLogSegments reads the cleaned segments, and the verifier finds the replicas consistent with every acknowledged
latest value; batches confluent-kafka compressed (lz4, zstd) are cleaned into batches of their codec; a leader killed
(-9) in the middle of a cleaning loses no acknowledged latest value."""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer as ConfluentProducer

from broker.log.checkpoint import REPLICATION_OFFSET_CHECKPOINT, OffsetCheckpointFile
from broker.log.cleaner.log_cleaner import HALT_AT, HALT_FILE
from client.cluster import ClusterState, kill_broker, start_broker
from protocol.compression import codec_of
from protocol.history import OK, HistoryWriter, Outcome, read_history
from protocol.records import decode_records, iter_batches
from protocol.topic_partition import TopicPartition
from tests.integration.clusterutil import (
    SMALL_TIMEOUTS,
    agreed_controller,
    cluster_fixture,
    consume_records,
    create_topic,
    restore,
    wait_converged,
    wait_gone,
)
from tests.integration.compactionutil import (
    cleaner_checkpoint,
    latest_acked,
    latest_of,
    lost_latest,
    produce_keyed,
    replica_records,
    swap_files,
)
from tests.integration.test_stock_kafka_clients import TIMEOUT_S
from tests.kafka_broker import kafka_tool
from tests.polling import eventually
from verifier import verify

cluster = cluster_fixture(configs={**SMALL_TIMEOUTS, "log.cleaner.backoff.ms": "100",
                                   "replica.high.watermark.checkpoint.interval.ms": "200",
                                   "log.flush.offset.checkpoint.interval.ms": "200"})
KEYS = 10_000
ROUNDS = 6
TOMBSTONED = 1_000
DELETE_RETENTION_MS = 4000
COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "65536", "min.cleanable.dirty.ratio": "0.1",
             "delete.retention.ms": str(DELETE_RETENTION_MS), "min.insync.replicas": "2"}


def key(i: int) -> bytes:
    return b"key-%05d" % i


def log_dirs(state: ClusterState) -> list[Path]:
    return [Path(b.log_dir) for b in state.brokers]


def rounds(count: int, start: int = 0) -> Iterator[tuple[bytes, bytes]]:
    return ((key(i), b"value-%d-%d" % (r, i)) for r in range(start, start + count) for i in range(KEYS))


async def wait_cleaned(state: ClusterState, tp: TopicPartition, past: int | None = None) -> None:
    """Wait until every replica's cleaner checkpoint is at its active segment (nothing left to clean: no cleaning
    starts until more records come), or past ``past``, with no replacement under way, and its HW checkpoint is at
    its log end."""
    def cleaned(directory: Path) -> bool:
        segments = sorted((directory / f"{tp.topic}-{tp.partition}").glob("*.log"))
        checkpoint = cleaner_checkpoint(directory, tp)
        target = int(segments[-1].stem) if past is None else past
        return checkpoint is not None and checkpoint >= target and not swap_files(directory, tp)

    await eventually(lambda: all(cleaned(d) for d in log_dirs(state)),
                     lambda: f"every replica of {tp} to be cleaned: " + ", ".join(
                         f"{d.parent.name} at {cleaner_checkpoint(d, tp)} {swap_files(d, tp)}"
                         for d in log_dirs(state)), timeout_s=60)


async def wait_hw_checkpointed(state: ClusterState, tp: TopicPartition, end: int) -> None:
    await eventually(lambda: all(OffsetCheckpointFile(d / REPLICATION_OFFSET_CHECKPOINT).read().get(tp) == end
                                 for d in log_dirs(state)), f"the HW checkpoints of {tp} at {end}")


async def test_a_compacted_topic_keeps_each_keys_latest_value_and_drops_old_tombstones(cluster: ClusterState,
                                                                                       spark: Any, tmp_path: Path):
    topic, tp = "compacted", TopicPartition("compacted", 0)
    await create_topic(cluster, topic, assignments={0: [1, 2, 3]}, configs=COMPACTED, in_sync=True)
    history = tmp_path / "history.jsonl"
    with HistoryWriter(history) as writer:
        await produce_keyed(cluster, topic, rounds(ROUNDS), writer)
        await produce_keyed(cluster, topic, ((key(i), None) for i in range(TOMBSTONED)), writer)
        await produce_keyed(cluster, topic, ((b"after-%d" % i, b"x" * 50) for i in range(2000)), writer)
    outcomes = read_history(history).outcomes
    assert {o.status for o in outcomes} == {OK}
    tombstones_end = max(o.offset for o in outcomes if o.value is None) + 1
    ends = await wait_converged(cluster, topic, [0], [1, 2, 3])
    assert ends == {0: len(outcomes)}
    await wait_cleaned(cluster, tp, past=tombstones_end)

    # Each key's latest value, and no other record of the cleaned part; the log is a fraction of what was written.
    records = await consume_records(cluster, topic)
    latest = latest_of(records)
    acked = latest_acked(outcomes)
    assert lost_latest(acked, latest) == []
    assert all(latest[(0, key(i))] == acked[(0, key(i))] for i in range(TOMBSTONED, KEYS))
    assert all(latest.get((0, key(i)), (0, None))[1] is None for i in range(TOMBSTONED))
    assert len(records) < len(outcomes) / 3
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets)) and offsets[-1] == len(outcomes) - 1
    for directory in log_dirs(cluster):
        assert sum(p.stat().st_size for p in (directory / f"{topic}-0").glob("*.log")) < 20 * 65536

    # Once delete.retention.ms has passed since a cleaning kept them, the next cleaning drops the tombstones.
    async def tombstones_gone() -> bool:
        with HistoryWriter(history) as writer:  # more records: something for the cleaner to do
            await produce_keyed(cluster, topic, ((b"later-%d" % i, b"y" * 50) for i in range(300)), writer)
        try:
            return all(not any(r.value is None for r in replica_records(d, tp)) for d in log_dirs(cluster))
        except OSError:  # a replacement renamed a segment under us
            return False

    await eventually(tombstones_gone, "every replica to drop the tombstones", timeout_s=DELETE_RETENTION_MS / 1000 + 60,
                     interval_s=1)
    outcomes = read_history(history).outcomes
    ends = await wait_converged(cluster, topic, [0], [1, 2, 3])
    await wait_cleaned(cluster, tp)
    await wait_hw_checkpointed(cluster, tp, ends[0])
    for directory in log_dirs(cluster):  # each replica cleans on its own; each keeps every latest value
        assert lost_latest(latest_acked(outcomes), latest_of(replica_records(directory, tp), 0)) == []

    report = await asyncio.to_thread(verify, log_dirs(cluster), history, spark=spark)
    assert report.violations == [], report.violations[:5]
    assert report.history is not None and report.history["lost"] == 0
    assert any("compacted partitions" in note for note in report.notes), report.notes

    # Kafka's own DumpLogSegments reads the cleaned segments as minikafka reads them.
    first = sorted((log_dirs(cluster)[0] / f"{topic}-0").glob("*.log"))[0]
    dumped = kafka_tool("kafka.tools.DumpLogSegments", "--deep-iteration", "--print-data-log", "--files", str(first))
    assert "isvalid: false" not in dumped and re.search(r"isvalid: true", dumped), dumped[-2000:]
    listed = [(int(offset), k) for offset, k in re.findall(r"\| offset: (\d+) .* key: (\S+)", dumped)]
    assert listed == [(r.offset, r.key.decode()) for r in decode_records(first.read_bytes())]
    assert listed, "the first cleaned segment should keep some records"


def produce_compressed(bootstrap: str, topic: str, partition: int, codec: str,
                       pairs: Iterator[tuple[bytes, bytes | None]]) -> list[Outcome]:
    """Send (key, value) records to one partition with confluent-kafka (acks=all, ``codec``); their acknowledgements."""
    acked: list[Outcome] = []

    def delivered(error: object, message: Any) -> None:
        assert error is None, error
        acked.append(Outcome(topic, message.partition(), message.offset(), message.key(), message.value(), OK))

    # Batches of at most 200 records: many segments, whatever the timing (librdkafka would batch up to 10,000).
    producer = ConfluentProducer({"bootstrap.servers": bootstrap, "acks": "all", "compression.type": codec,
                                  "linger.ms": 20, "batch.num.messages": 200})
    for k, value in pairs:
        producer.produce(topic, key=k, value=value, partition=partition, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0
    return acked


async def test_batches_a_client_compressed_are_cleaned_into_batches_of_their_codec(cluster: ClusterState) -> None:
    topic, codecs, keys = "compacted-compressed", ["lz4", "zstd"], 2000
    # Cleaned whenever a segment rolls (a dirty ratio of 1% at least): each replica's cleaner reaches the active
    # segment once the last records come, whenever it cleaned before.
    await create_topic(cluster, topic, assignments={0: [1, 2, 3], 1: [2, 3, 1]},
                       configs={**COMPACTED, "segment.bytes": "16384", "min.cleanable.dirty.ratio": "0.01"},
                       in_sync=True)
    rng = random.Random(7)

    def pairs() -> Iterator[tuple[bytes, bytes | None]]:
        # Every key in three rounds, then the odd keys (the first hundred as tombstones): the third round's batches
        # are kept in part. Then other keys, so that all of it leaves the active segment. Values that hardly compress.
        for r in range(4):
            yield from ((key(i), b"%x" % rng.getrandbits(160)) for i in range(keys) if r < 3 or i % 2)
        yield from ((key(i), None) for i in range(1, 200, 2))
        yield from ((b"after-%d" % i, b"%x" % rng.getrandbits(400)) for i in range(1000))

    outcomes = [o for partition, codec in enumerate(codecs) for o in await asyncio.to_thread(
        produce_compressed, cluster.bootstrap_servers, topic, partition, codec, pairs())]
    await wait_converged(cluster, topic, [0, 1], [1, 2, 3])
    for partition in (0, 1):
        await wait_cleaned(cluster, TopicPartition(topic, partition))

    latest, acked = latest_of(await consume_records(cluster, topic)), latest_acked(outcomes)
    assert lost_latest(acked, latest) == []
    assert all(latest[(p, key(i))] == acked[(p, key(i))] for p in (0, 1) for i in range(200, keys))
    assert all(latest.get((p, key(i)), (0, None))[1] is None for p in (0, 1) for i in range(1, 200, 2))
    assert len([v for _, v in latest.values() if v is not None]) == 2 * (keys - 100 + 1000)
    kept_in_part: list[Path] = []  # a cleaned segment of each partition with a batch kept in part
    for partition, codec in enumerate(codecs):
        tp, its_acked = TopicPartition(topic, partition), {k: v for k, v in acked.items() if k[0] == partition}
        for directory in log_dirs(cluster):
            assert lost_latest(its_acked, latest_of(replica_records(directory, tp), partition)) == []
            cleaned = sorted((directory / f"{topic}-{partition}").glob("*.log"))[:-1]
            batches = [(f, h) for f in cleaned for _, h in iter_batches(f.read_bytes())]
            # (librdkafka sends a batch its codec would not shrink uncompressed.)
            assert {h.compression for _, h in batches if h.record_count} <= {codec_of(codec), 0}
            in_part = [f for f, h in batches if h.compression == codec_of(codec)
                       and 0 < h.record_count < h.last_offset - h.base_offset + 1]
            assert in_part, f"no {codec} batch kept in part on {directory}"
        kept_in_part.append(in_part[0])

    # Kafka's own DumpLogSegments reads the cleaned, recompressed batches record for record.
    dumped = kafka_tool("kafka.tools.DumpLogSegments", "--deep-iteration", "--print-data-log", "--files",
                        ",".join(map(str, kept_in_part)))
    assert "isvalid: false" not in dumped and "compresscodec: lz4" in dumped and "compresscodec: zstd" in dumped
    listed = [(int(offset), k) for offset, k in re.findall(r"\| offset: (\d+) .* key: (\S+)", dumped)]
    assert listed == [(r.offset, r.key.decode()) for f in kept_in_part for r in decode_records(f.read_bytes())]
    assert listed


async def test_a_leader_killed_while_it_cleans_loses_no_acknowledged_latest_value(
        cluster: ClusterState, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    state = await restore(cluster.directory)
    topic, tp = "compacted-failover", TopicPartition("compacted-failover", 0)
    controller = await agreed_controller(state)
    victim, other = [b.id for b in state.brokers if b.id != controller]
    # The victim's cleaner stops in its next cleaning once the cleaned segment is written (the broker serves on).
    halted = tmp_path / "halted"
    kill_broker(state.directory, victim, "TERM")
    await wait_gone(state.broker(victim))
    with monkeypatch.context() as env:
        env.setenv(HALT_AT, "cleaned")
        env.setenv(HALT_FILE, str(halted))
        await start_broker(state.directory, victim)
    await create_topic(state, topic, assignments={0: [victim, other, controller]}, configs=COMPACTED, in_sync=True)
    history = tmp_path / "history.jsonl"
    settings = {"request_timeout_ms": 5000, "delivery_timeout_ms": 30_000, "retry_backoff_ms": 50}
    with HistoryWriter(history) as writer:
        written = 0
        while not halted.exists():
            assert written < 20, "the victim's cleaner should have begun a cleaning"
            await produce_keyed(state, topic, rounds(1, start=written), writer, **settings)
            written += 1
        kill_broker(state.directory, victim, "KILL")
        await produce_keyed(state, topic, rounds(2, start=written), writer, **settings)
    outcomes = read_history(history).outcomes
    assert sum(o.status == OK for o in outcomes) > len(outcomes) // 2

    state = await restore(state.directory)
    ends = await wait_converged(state, topic, [0], [victim, other, controller])
    await wait_cleaned(state, tp)
    await wait_hw_checkpointed(state, tp, ends[0])
    acked = latest_acked(outcomes)
    assert lost_latest(acked, latest_of(await consume_records(state, topic))) == []
    for directory in log_dirs(state):
        assert lost_latest(acked, latest_of(replica_records(directory, tp), 0)) == []
    report = await asyncio.to_thread(verify, log_dirs(state), history, spark=spark)
    assert [v for v in report.violations if v.topic == topic] == []
