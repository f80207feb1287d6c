"""Kafka's command-line tools from the jars `make setup` puts in build/kafka/libs (an oracle no one here wrote), and
records sent with Kafka's Python client into a history. Kafka's broker itself is in bench/kafka_brokers.py."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable

import pytest
from kafka import KafkaProducer

from bench.kafka_brokers import KAFKA_LIBS
from protocol.history import OK, HistoryWriter, Outcome

TOOL_TIMEOUT_S = 90
GROUP_TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"  # kafka-consumer-groups


def run_kafka_tool(main_class: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's tools from its jars; how it ended, with its output."""
    if not any(KAFKA_LIBS.glob("kafka-tools-*.jar")):
        pytest.fail(f"Apache Kafka's jars are not in {KAFKA_LIBS}: run make setup")
    return subprocess.run(["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", f"{KAFKA_LIBS}/*", main_class,
                           *args], input=stdin, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)


def kafka_tool(main_class: str, *args: str, stdin: str | None = None) -> str:
    """Run one of Kafka's tools from its jars; its stdout, after checking it exited 0."""
    result = run_kafka_tool(main_class, *args, stdin=stdin)
    assert result.returncode == 0, f"{main_class} {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def send_recorded(bootstrap: str, history: HistoryWriter, topic: str,
                  records: Iterable[tuple[int, bytes, bytes | None]], **producer_options: object) -> list[Outcome]:
    """Send (partition, key, value) records with Kafka's Python client (acks=all, linger.ms 5, ``producer_options``),
    wait for every acknowledgement and write each to the history; the acknowledgements, in the records' order."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, request_timeout_ms=30_000,
                             **producer_options)
    try:
        sent = [(key, value, producer.send(topic, key=key, value=value, partition=partition))
                for partition, key, value in records]
        producer.flush(timeout=60)
        outcomes = []
        for key, value, future in sent:
            metadata = future.get(timeout=60)
            outcomes.append(Outcome(topic, metadata.partition, metadata.offset, key, value, OK))
            history.write(outcomes[-1])
        return outcomes
    finally:
        producer.close()
