"""A real Apache Kafka 3.9 broker (ZooKeeper mode) on 127.0.0.1 from the jars `make setup` puts in build/kafka/libs,
for the benchmarks that compare minikafka with Kafka and for the tests that use Kafka as an oracle. Small heap; the
broker's output goes to kafka.log in its directory."""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from zk.server import free_port, listening

PROJECT_ROOT = Path(__file__).resolve().parents[1]
KAFKA_LIBS = PROJECT_ROOT / "build" / "kafka" / "libs"
LOG4J = PROJECT_ROOT / "tools" / "kafka" / "log4j.properties"
START_TIMEOUT_S = 90.0


class KafkaUnavailableError(RuntimeError):
    """Kafka's jars are missing, or its broker exited or did not listen in time."""


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


@contextmanager
def kafka_broker(directory: Path, zookeeper_connect: str, broker_id: int = 0,
                 overrides: dict[str, str] | None = None) -> Iterator[KafkaBroker]:
    """Start a Kafka broker under a ZooKeeper chroot of its own, wait until it listens, stop it afterwards."""
    if not kafka_available():
        raise KafkaUnavailableError(f"Apache Kafka's jars are not in {KAFKA_LIBS}: run make setup")
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
    deadline = time.monotonic() + START_TIMEOUT_S
    while not listening("127.0.0.1", broker.port):
        if broker.process.poll() is not None:
            raise KafkaUnavailableError(
                f"Kafka exited with {broker.process.returncode}:\n{broker.output.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise KafkaUnavailableError(f"Kafka did not listen on port {broker.port} within {START_TIMEOUT_S:g} "
                                        f"s:\n{broker.output.read_text()[-3000:]}")
        time.sleep(0.2)
