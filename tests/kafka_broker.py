"""A real Apache Kafka 3.9 broker (ZooKeeper mode) on 127.0.0.1, and Kafka's command-line tools, from the jars
`make setup` puts in build/kafka/libs: an oracle no one here wrote. Small heap; the broker's output goes to kafka.log
in its directory."""

from __future__ import annotations

import signal
import socket
import subprocess
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka import KafkaProducer

from protocol.history import OK, HistoryWriter, Outcome
from tests.polling import wait_for
from zk.server import free_port

PROJECT_ROOT = Path(__file__).resolve().parents[1]
KAFKA_LIBS = PROJECT_ROOT / "build" / "kafka" / "libs"
LOG4J = PROJECT_ROOT / "tools" / "kafka" / "log4j.properties"
START_TIMEOUT_S = 90.0
TOOL_TIMEOUT_S = 90
GROUP_TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"  # kafka-consumer-groups


@dataclass(frozen=True)
class KafkaBroker:
    broker_id: int
    port: int
    log_dir: Path
    process: subprocess.Popen[bytes]
    output: Path

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout_s: float = 60.0) -> int:
        """Signal the broker (SIGTERM: a clean shutdown) and wait for it to exit; returns its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def kafka_available() -> bool:
    return (KAFKA_LIBS / ".pom-digest").exists()


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


@contextmanager
def kafka_broker(directory: Path, zookeeper_connect: str, broker_id: int = 0,
                 overrides: dict[str, str] | None = None) -> Iterator[KafkaBroker]:
    """Start a Kafka broker under a ZooKeeper chroot of its own, wait until it listens, stop it afterwards."""
    if not kafka_available():
        pytest.fail(f"Apache Kafka's jars are not in {KAFKA_LIBS}: run make setup")
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_dir = directory / "kafka-logs"
    settings = {
        "broker.id": str(broker_id),
        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "log.dirs": str(log_dir),
        "zookeeper.connect": f"{zookeeper_connect}/kafka-{uuid.uuid4().hex[:8]}",
        "zookeeper.session.timeout.ms": "6000",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
        **(overrides or {}),
    }
    config = directory / "server.properties"
    config.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    output = directory / "kafka.log"
    command = ["java", "-Xmx256m", "-XX:+UseSerialGC", f"-Dlog4j.configuration=file:{LOG4J}",
               "-cp", f"{KAFKA_LIBS}/*", "kafka.Kafka", str(config)]
    with open(output, "ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   cwd=directory, start_new_session=True)
    broker = KafkaBroker(broker_id, port, log_dir, process, output)
    try:
        _wait_listening(broker)
        yield broker
    finally:
        broker.stop()


def _wait_listening(broker: KafkaBroker) -> None:
    def listening() -> bool:
        if broker.process.poll() is not None:
            pytest.fail(f"Kafka exited with {broker.process.returncode}:\n{broker.output.read_text()[-3000:]}")
        try:
            socket.create_connection(("127.0.0.1", broker.port), timeout=1).close()
        except OSError:
            return False
        return True

    wait_for(listening, lambda: f"Kafka to listen on port {broker.port}:\n{broker.output.read_text()[-3000:]}",
             timeout_s=START_TIMEOUT_S, interval_s=0.2)


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
