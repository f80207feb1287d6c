"""minikafka reads Apache Kafka's own compressed log directories: a real Kafka 3.9 broker (the jars from `make setup`)
stores batches that Kafka's Python client compressed with gzip, snappy, lz4 and zstd, and batches Kafka's broker
compressed itself (topics whose compression.type is a codec, the producer's batches uncompressed). `minikafka
dump-log --print-data` reads every segment, and the verifier reads the directory clean, every acknowledged record
found by the history check."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from bench.kafka_brokers import kafka_broker
from protocol.history import HistoryWriter
from tests.integration.clusterutil import cli
from tests.kafka_broker import send_recorded
from verifier import verify
from zk.server import ZooKeeperServer

CODEC_NAMES = ["gzip", "snappy", "lz4", "zstd"]
CLIENT_TOPIC = "client-compressed"  # partition i: kafka-python's batches in CODEC_NAMES[i]
RECORDS = 400  # a partition


def broker_topic(codec: str) -> str:
    """The topic whose batches Kafka's broker compresses with ``codec``."""
    return f"broker-{codec}"


def _value(topic: str, partition: int, i: int) -> bytes:
    return f"{topic}-{partition} record {i} ".encode() + b"compressible " * (i % 20)


def _produce(bootstrap: str, history: Path) -> None:
    """Every topic, small segments; records with acks=all, each acknowledgement in the history."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(CLIENT_TOPIC, len(CODEC_NAMES), 1, topic_configs={"segment.bytes": "4096"})] + [
            NewTopic(broker_topic(codec), 1, 1, topic_configs={"segment.bytes": "4096", "compression.type": codec})
            for codec in CODEC_NAMES])
    finally:
        admin.close()
    targets = [(CLIENT_TOPIC, partition, codec) for partition, codec in enumerate(CODEC_NAMES)]
    targets += [(broker_topic(codec), 0, None) for codec in CODEC_NAMES]
    with HistoryWriter(history) as writer:
        for topic, partition, codec in targets:
            send_recorded(bootstrap, writer, topic, ((partition, b"k%d" % i, _value(topic, partition, i))
                                                     for i in range(RECORDS)), compression_type=codec)


async def test_dump_log_and_the_verifier_read_kafkas_compressed_directories(zookeeper: ZooKeeperServer, spark: Any,
                                                                           tmp_path: Path):
    history = tmp_path / "history.jsonl"
    with kafka_broker(tmp_path / "kafka", zookeeper.connect_string, broker_id=7) as broker:
        await asyncio.to_thread(_produce, broker.bootstrap, history)
        assert broker.stop() in (0, 143)

    expected = {(CLIENT_TOPIC, p): codec for p, codec in enumerate(CODEC_NAMES)}
    expected |= {(broker_topic(codec), 0): codec for codec in CODEC_NAMES}
    for (topic, partition), codec in expected.items():
        segments = sorted((broker.log_dir / f"{topic}-{partition}").glob("*.log"))
        assert len(segments) > 1, f"{topic}-{partition} should have rolled segments"
        batches, values = [], []
        for segment in segments:
            lines = [json.loads(line) for line in cli("dump-log", "--print-data", "--json", str(segment)).stdout
                     .splitlines()]
            batches += [line for line in lines if "baseOffset" in line]
            values += [line["value"] for line in lines if "value" in line]
        assert {batch["compressCodec"] for batch in batches} == {codec}, f"{topic}-{partition}"
        assert values == [_value(topic, partition, i).decode() for i in range(RECORDS)], f"{topic}-{partition}"

    report = await asyncio.to_thread(verify, [broker.log_dir], history, spark=spark)
    assert report.violations == [], report.violations[:5]
    summary = report.to_json()
    assert (summary["consistent"], summary["partitions"], summary["replicas"]) == (True, 8, 8)
    assert (summary["records"], summary["acked"], summary["lost"]) == (8 * RECORDS, 8 * RECORDS, 0)
