"""Apache Kafka's own Java tools (3.9.1's jars in build/kafka/libs, fetched by `make setup`) against a real cluster:
kafka-topics (AdminClient: create, describe), the console producer (idempotent, acks=all by default) and console
consumer, and kafka-dump-log reading minikafka's segment files with --deep-iteration."""

from __future__ import annotations

import re
import subprocess
import uuid
from pathlib import Path

import pytest

from client.cluster import ClusterState
from tests.integration.clusterutil import PROJECT_ROOT, cluster_fixture

cluster = cluster_fixture(brokers=3)
KAFKA_LIBS = PROJECT_ROOT / "build" / "kafka" / "libs"
TIMEOUT_S = 90


def kafka_tool(main_class: str, *args: str, stdin: str | None = None) -> str:
    """Run one of Kafka's tools from its jars; its stdout, after checking it exited 0."""
    if not any(KAFKA_LIBS.glob("kafka-tools-*.jar")):
        pytest.fail(f"Apache Kafka's jars are not in {KAFKA_LIBS}: run make setup")
    result = subprocess.run(["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", f"{KAFKA_LIBS}/*", main_class,
                             *args], input=stdin, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert result.returncode == 0, f"{main_class} {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_kafkas_tools_create_describe_produce_consume_and_dump_minikafkas_segments(cluster: ClusterState) -> None:
    topic = f"java-{uuid.uuid4().hex[:8]}"
    bootstrap = ("--bootstrap-server", cluster.bootstrap_servers)
    kafka_tool("org.apache.kafka.tools.TopicCommand", *bootstrap, "--create", "--topic", topic,
               "--partitions", "1", "--replication-factor", "3", "--config", "min.insync.replicas=2")
    described = kafka_tool("org.apache.kafka.tools.TopicCommand", *bootstrap, "--describe", "--topic", topic)
    assert re.search(rf"Topic: {topic}\s+PartitionCount: 1\s+ReplicationFactor: 3\s+Configs: min.insync.replicas=2",
                     described), described
    assert re.search(r"Partition: 0\s+Leader: [123]\s+Replicas: [123],[123],[123]\s+Isr: [123],[123],[123]",
                     described), described

    lines = [f"key-{i}:value-{i}" for i in range(5)]
    kafka_tool("kafka.tools.ConsoleProducer", *bootstrap, "--topic", topic, "--property", "parse.key=true",
               "--property", "key.separator=:", stdin="".join(f"{line}\n" for line in lines))
    consumed = kafka_tool("org.apache.kafka.tools.consumer.ConsoleConsumer", *bootstrap, "--topic", topic,
                          "--partition", "0", "--offset", "earliest", "--max-messages", "5",
                          "--property", "print.key=true", "--property", "print.offset=true",
                          "--property", "key.separator=:")
    assert consumed.splitlines() == [f"Offset:{i}:key-{i}:value-{i}" for i in range(5)]

    for broker in cluster.brokers:
        segment = Path(broker.log_dir) / f"{topic}-0" / "00000000000000000000.log"
        dumped = kafka_tool("kafka.tools.DumpLogSegments", "--deep-iteration", "--print-data-log",
                            "--files", str(segment))
        batches = re.findall(r"baseOffset: (\d+) lastOffset: (\d+) .* producerId: (\d+) .* isvalid: true", dumped)
        assert batches and int(batches[-1][1]) == 4, dumped
        assert all(int(producer_id) >= 0 for _base, _last, producer_id in batches)  # idempotent by default
        records = re.findall(r"\| offset: (\d+) .* key: (\S+) payload: (\S+)", dumped)
        assert records == [(str(i), f"key-{i}", f"value-{i}") for i in range(5)], dumped
