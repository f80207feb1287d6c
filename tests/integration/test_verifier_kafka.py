"""The verifier reads Apache Kafka's own log directories: a real Kafka 3.9 broker (ZooKeeper mode, the jars from
`make setup`) takes records from Kafka's Python client, stops cleanly, and its log directory verifies clean with
exact counts and every acknowledged record found; what Kafka writes and the verifier does not need (producer
state snapshots, partition.metadata) is skipped with a note. A compacted topic Kafka's own log cleaner has cleaned
verifies clean too, by the compaction contract, and minikafka's dump-log reads its segments."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from bench.kafka_brokers import kafka_broker
from client.cli import main
from protocol.history import HistoryWriter, Outcome
from protocol.topic_partition import TopicPartition
from tests.integration.compactionutil import cleaner_checkpoint, latest_acked, latest_of, lost_latest, replica_records
from tests.kafka_broker import send_recorded
from tests.polling import wait_for
from verifier import verify
from zk.server import ZooKeeperServer

TOPIC = "kafka-written"
RECORDS = 2000


def _produce(bootstrap: str, history: Path) -> dict[int, int]:
    """Create the topic (two partitions, small segments) and send keyed records with acks=all; returns the count
    per partition. Each acknowledgement goes to the history."""
    _create(bootstrap, NewTopic(TOPIC, 2, 1, topic_configs={"segment.bytes": "16384"}))
    records = [(i % 2, f"k{i}".encode(), f"value-{i}".encode() * 3) for i in range(RECORDS)]
    return Counter(outcome.partition for outcome in _send(bootstrap, TOPIC, records, history))


def _create(bootstrap: str, topic: NewTopic) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([topic])
    finally:
        admin.close()


def _send(bootstrap: str, topic: str, records: list[tuple[int, bytes, bytes | None]], history: Path) -> list[Outcome]:
    """Send (partition, key, value) records with acks=all; each acknowledgement goes to the history."""
    with HistoryWriter(history) as writer:
        return send_recorded(bootstrap, writer, topic, records)


async def test_a_real_kafka_brokers_log_directory_verifies_clean(zookeeper: ZooKeeperServer, spark: Any,
                                                                  tmp_path: Path):
    history = tmp_path / "history.jsonl"
    with kafka_broker(tmp_path / "kafka", zookeeper.connect_string, broker_id=7) as broker:
        counts = await asyncio.to_thread(_produce, broker.bootstrap, history)
        assert broker.stop() in (0, 143)  # SIGTERM: the JVM runs Kafka's shutdown hook, then exits 128 + 15
    names = {p.name for p in broker.log_dir.iterdir()}
    assert {"meta.properties", "replication-offset-checkpoint", ".kafka_cleanshutdown"} <= names, names
    segments = sorted((broker.log_dir / f"{TOPIC}-0").glob("*.log"))
    assert len(segments) > 1, "the topic should have rolled segments"

    report = await asyncio.to_thread(verify, [broker.log_dir], history, spark=spark)
    assert report.violations == [], report.violations[:5]
    summary = report.to_json()
    assert (summary["consistent"], summary["partitions"], summary["replicas"]) == (True, 2, 2)
    assert (summary["records"], summary["acked"], summary["lost"]) == (RECORDS, RECORDS, 0)
    assert {(r.broker, r.partition, r.leo, r.hw) for r in report.replicas} == {
        (7, p, counts[p], counts[p]) for p in (0, 1)}
    assert all(r.epochs == ((0, 0),) for r in report.replicas)
    notes = " | ".join(report.notes)
    assert ".snapshot" in notes and "partition.metadata" in notes, report.notes


COMPACTED = "kafka-compacted"


async def test_a_compacted_topic_kafka_has_cleaned_verifies_clean_and_dump_log_reads_it(
        zookeeper: ZooKeeperServer, spark: Any, tmp_path: Path):
    history = tmp_path / "history.jsonl"
    tp = TopicPartition(COMPACTED, 0)
    rounds = [(0, b"k%d" % i, b"value-%d-%d" % (r, i)) for r in range(10) for i in range(200)]
    tombstones = [(0, b"k%d" % i, None) for i in range(20)]
    later = [(0, b"later-%d" % i, b"x" * 100) for i in range(300)]
    settings = {"log.cleaner.backoff.ms": "100"}
    with kafka_broker(tmp_path / "kafka", zookeeper.connect_string, broker_id=9, overrides=settings) as broker:
        _create(broker.bootstrap, NewTopic(COMPACTED, 1, 1, topic_configs={
            "cleanup.policy": "compact", "segment.bytes": "16384", "min.cleanable.dirty.ratio": "0.01"}))
        outcomes = await asyncio.to_thread(_send, broker.bootstrap, COMPACTED, rounds + tombstones + later, history)
        tombstones_end = max(o.offset for o in outcomes if o.value is None) + 1
        wait_for(lambda: (cleaner_checkpoint(broker.log_dir, tp) or 0) >= tombstones_end,
                 lambda: f"Kafka's cleaner to pass offset {tombstones_end}: {cleaner_checkpoint(broker.log_dir, tp)}",
                 timeout_s=60, interval_s=0.2)
        assert broker.stop() in (0, 143)
    kept = replica_records(broker.log_dir, tp)
    assert len(kept) < len(outcomes) / 3  # Kafka's cleaner did clean
    assert lost_latest(latest_acked(outcomes), latest_of(kept, 0)) == []

    report = await asyncio.to_thread(verify, [broker.log_dir], history, spark=spark)
    assert report.violations == [], report.violations[:5]
    assert report.history is not None and (report.history["acked"], report.history["lost"]) == (len(outcomes), 0)
    assert any("compacted partitions" in note and f"{COMPACTED}-0" in note for note in report.notes), report.notes

    segments = sorted(str(p) for p in (broker.log_dir / f"{COMPACTED}-0").glob("*.log"))
    dumped = CliRunner().invoke(main, ["dump-log", "--print-data", *segments])
    assert dumped.exit_code == 0, dumped.output[-2000:]
    assert dumped.output.count("| offset: ") == len(kept)
