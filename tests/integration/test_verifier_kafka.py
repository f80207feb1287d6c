"""The verifier reads Apache Kafka's own log directories: a real Kafka 3.9 broker (ZooKeeper mode, the jars from
`make setup`) takes records from Kafka's Python client, stops cleanly, and its log directory verifies clean with
exact counts and every acknowledged record found; what Kafka writes and the verifier does not need (producer
state snapshots, partition.metadata, cleaner-offset-checkpoint) is skipped with a note."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from protocol.history import HistoryWriter
from tests.kafka_broker import kafka_broker, send_recorded
from verifier import verify
from zk.server import ZooKeeperServer

TOPIC = "kafka-written"
RECORDS = 2000


def _produce(bootstrap: str, history: Path) -> dict[int, int]:
    """Create the topic (two partitions, small segments) and send keyed records with acks=all; returns the count
    per partition. Each acknowledgement goes to the history."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(TOPIC, 2, 1, topic_configs={"segment.bytes": "16384"})])
    finally:
        admin.close()
    with HistoryWriter(history) as writer:
        return send_recorded(bootstrap, writer, TOPIC, ((i % 2, f"k{i}".encode(), f"value-{i}".encode() * 3)
                                                        for i in range(RECORDS)))


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
