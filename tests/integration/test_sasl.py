"""SASL_PLAINTEXT on real brokers, as stock clients configure it: three brokers whose inter-broker listener is a
SASL_PLAINTEXT one (they replicate and the controller reaches them authenticated with PLAIN; PLAIN users in the
listener's JAAS config, SCRAM credentials in ZooKeeper), and a PLAINTEXT one. Kafka's kafka-configs adds a SCRAM
user over the wire, who then produces and consumes with confluent-kafka, kafka-python and aiokafka; `minikafka
users` adds and deletes one whom minikafka's own clients authenticate as; PLAIN works too; a wrong password, an
unknown mechanism, an oversized token, a request before authentication and a handshake that never finishes each end
the connection; no password reaches a broker's log."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiokafka
import kafka
import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import KafkaError as ConfluentError
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka.admin import AdminClient, NewTopic

from client.admin import Admin
from client.cluster import log_tail
from client.consumer import Consumer
from client.producer import Producer
from protocol.sasl import SaslCredentials
from protocol.topic_partition import TopicPartition
from tests.integration.clusterutil import broker_process, cli, terminate
from tests.kafka_broker import kafka_tool
from tests.polling import poll_records, wait_for
from transport.connection import AuthenticationFailedError
from zk.server import ZooKeeperServer, free_port

BROKER_IDS = (1, 2, 3)
ADMIN_PASSWORD = "admin-secret-6c1f"
ALICE_PASSWORD = "alice-secret-9d2e"
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              f'password="{ADMIN_PASSWORD}" user_admin="{ADMIN_PASSWORD}";')
RECORDS = 20


@dataclass(frozen=True)
class SaslBroker:
    id: int
    internal_port: int
    sasl_port: int
    process: subprocess.Popen[bytes]
    log: Path


@dataclass(frozen=True)
class SaslCluster:
    brokers: list[SaslBroker]
    directory: Path

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{b.sasl_port}" for b in self.brokers)

    def logs(self) -> str:
        return "\n".join(f"broker {b.id} (exit {b.process.poll()}):\n{log_tail(b.log, 15)}" for b in self.brokers)


def _environment(broker_id: int, internal: int, sasl: int) -> dict[str, str]:
    return {
        "MINIKAFKA_CFG_BROKER_ID": str(broker_id),
        "MINIKAFKA_CFG_LISTENERS": f"INTERNAL://127.0.0.1:{internal},SASL://127.0.0.1:{sasl}",
        "MINIKAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP": "INTERNAL:PLAINTEXT,SASL:SASL_PLAINTEXT",
        "MINIKAFKA_CFG_INTER_BROKER_LISTENER_NAME": "SASL",
        "MINIKAFKA_CFG_SASL_MECHANISM_INTER_BROKER_PROTOCOL": "PLAIN",
    }


@pytest.fixture(scope="module")
def sasl_cluster(zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslCluster]:
    directory = tmp_path_factory.mktemp("sasl")
    chroot = f"/test-{uuid.uuid4().hex[:12]}"
    started: list[SaslBroker] = []
    try:
        for broker_id in BROKER_IDS:
            broker_dir = directory / f"broker-{broker_id}"
            broker_dir.mkdir()
            config = broker_dir / "server.properties"
            config.write_text(f"log.dirs={broker_dir / 'data'}\nzookeeper.connect={zookeeper.connect_string}{chroot}\n"
                              "zookeeper.session.timeout.ms=4000\noffsets.topic.replication.factor=3\n"
                              "group.initial.rebalance.delay.ms=0\nsasl.server.authentication.timeout.ms=3000\n"
                              f"listener.name.sasl.plain.sasl.jaas.config={PLAIN_JAAS}\n")
            internal, sasl = free_port(), free_port()
            log = broker_dir / "server.log"
            process = broker_process(config, log, _environment(broker_id, internal, sasl))
            started.append(SaslBroker(broker_id, internal, sasl, process, log))
        cluster = SaslCluster(started, directory)
        wait_for(lambda: _ready(cluster), lambda: f"three brokers answering on their SASL listeners\n{cluster.logs()}",
                 timeout_s=60)
        yield cluster
    finally:
        terminate([broker.process for broker in started])


def _plain_admin_config() -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "admin",
            "sasl.password": ADMIN_PASSWORD}


def _ready(cluster: SaslCluster) -> bool:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, **_plain_admin_config()})
    try:
        metadata = admin.list_topics(timeout=2)
    except Exception:
        return False
    return len(metadata.brokers) == 3 and metadata.controller_id != -1


def _new_topic(cluster: SaslCluster) -> str:
    name = f"sasl-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, **_plain_admin_config()})
    admin.create_topics([NewTopic(name, 1, 3, config={"min.insync.replicas": "3"})])[name].result(timeout=30)
    return name


def _command_config(cluster: SaslCluster) -> Path:
    path = cluster.directory / "admin.properties"
    path.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={PLAIN_JAAS}\n")
    return path


def _confluent_round_trip(cluster: SaslCluster, topic: str, settings: dict[str, str]) -> list[bytes]:
    producer = ConfluentProducer({"bootstrap.servers": cluster.bootstrap, "acks": "all", **settings})
    for i in range(RECORDS):
        producer.produce(topic, f"confluent-{i}".encode())
    assert producer.flush(30) == 0
    consumer = ConfluentConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"g-{topic}",
                                  "auto.offset.reset": "earliest", **settings})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        def read() -> bool:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
            return len(values) >= RECORDS

        wait_for(read, f"{RECORDS} records read with confluent-kafka\n{cluster.logs()}", timeout_s=60)
    finally:
        consumer.close()
    return values


def test_kafka_configs_adds_a_scram_user_who_then_produces_and_consumes(sasl_cluster: SaslCluster) -> None:
    command_config = str(_command_config(sasl_cluster))
    kafka_tool("kafka.admin.ConfigCommand", "--bootstrap-server", sasl_cluster.bootstrap, "--command-config",
               command_config, "--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config",
               f"SCRAM-SHA-512=[iterations=8192,password={ALICE_PASSWORD}],SCRAM-SHA-256=[password={ALICE_PASSWORD}]")
    described = kafka_tool("kafka.admin.ConfigCommand", "--bootstrap-server", sasl_cluster.bootstrap,
                           "--command-config", command_config, "--describe", "--entity-type", "users",
                           "--entity-name", "alice")
    assert "SCRAM-SHA-512=iterations=8192" in described and "SCRAM-SHA-256=iterations=4096" in described

    topic = _new_topic(sasl_cluster)
    scram = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
             "sasl.password": ALICE_PASSWORD}
    assert _confluent_round_trip(sasl_cluster, topic, scram) == [f"confluent-{i}".encode() for i in range(RECORDS)]

    kafka_settings = {"bootstrap_servers": sasl_cluster.bootstrap.split(","), "security_protocol": "SASL_PLAINTEXT",
                      "sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": "alice",
                      "sasl_plain_password": ALICE_PASSWORD}
    producer = kafka.KafkaProducer(acks="all", **kafka_settings)
    for i in range(RECORDS):
        producer.send(topic, f"kafka-python-{i}".encode())
    producer.flush(30)
    producer.close()
    consumer = kafka.KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=20000, **kafka_settings)
    values = [m.value for m, _ in zip(consumer, range(2 * RECORDS), strict=False)]
    consumer.close()
    assert values[RECORDS:] == [f"kafka-python-{i}".encode() for i in range(RECORDS)]

    async def aiokafka_round_trip() -> list[bytes]:
        settings = {"bootstrap_servers": sasl_cluster.bootstrap, "security_protocol": "SASL_PLAINTEXT",
                    "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "alice",
                    "sasl_plain_password": ALICE_PASSWORD}
        async with aiokafka.AIOKafkaProducer(acks="all", **settings) as aio_producer:
            for i in range(RECORDS):
                await aio_producer.send_and_wait(topic, f"aiokafka-{i}".encode())
        async with aiokafka.AIOKafkaConsumer(topic, auto_offset_reset="earliest", **settings) as aio_consumer:
            got: list[bytes] = []
            async with asyncio.timeout(30):
                while len(got) < 3 * RECORDS:
                    got += [r.value for records in (await aio_consumer.getmany(timeout_ms=500)).values()
                            for r in records]
            return got

    assert asyncio.run(aiokafka_round_trip())[2 * RECORDS:] == [f"aiokafka-{i}".encode() for i in range(RECORDS)]


def test_plain_users_of_the_listener_produce_and_consume(sasl_cluster: SaslCluster) -> None:
    topic = _new_topic(sasl_cluster)
    values = _confluent_round_trip(sasl_cluster, topic, _plain_admin_config())
    assert values == [f"confluent-{i}".encode() for i in range(RECORDS)]


def test_a_wrong_password_is_refused_and_never_logged(sasl_cluster: SaslCluster) -> None:
    errors: list[ConfluentError] = []
    producer = ConfluentProducer({"bootstrap.servers": sasl_cluster.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                                  "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
                                  "sasl.password": "wrong-password-77", "error_cb": errors.append})

    def refused() -> bool:
        producer.poll(0.2)
        return any(e.code() == ConfluentError._AUTHENTICATION for e in errors)

    wait_for(refused, "an authentication error from librdkafka")
    assert any("failed authentication" in b.log.read_text() for b in sasl_cluster.brokers)
    _assert_no_secret_in_logs(sasl_cluster)


def _assert_no_secret_in_logs(cluster: SaslCluster) -> None:
    logs = [b.log.read_text() for b in cluster.brokers]
    for secret in (ADMIN_PASSWORD, ALICE_PASSWORD, "wrong-password-77", "carol-secret-41a7"):
        assert not any(secret in log for log in logs), f"{secret} is in a broker log"


def _frame(api_key: int, version: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", api_key, version, 1, 4) + b"test"
    return struct.pack(">i", len(header) + len(body)) + header + body


def _closed(sock: socket.socket) -> bool:
    """Read what the broker sends until it closes the connection (a timeout fails the test); True once it has."""
    sock.settimeout(10)
    with contextlib.suppress(ConnectionResetError):
        while sock.recv(65536):
            pass
    return True


def test_bad_input_ends_the_connection_and_the_broker_goes_on(sasl_cluster: SaslCluster) -> None:
    port = sasl_cluster.brokers[0].sasl_port
    metadata_v1 = _frame(3, 1, struct.pack(">i", -1))
    handshake = _frame(17, 1, struct.pack(">h", 6) + b"GSSAPI")
    for first in (metadata_v1, handshake):  # a request before authentication; an unknown mechanism
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(first)
            assert _closed(sock)
    with socket.create_connection(("127.0.0.1", port)) as sock:  # an oversized token
        sock.sendall(struct.pack(">i", 10 * 1024 * 1024) + b"\0" * 1024)
        assert _closed(sock)
    with socket.create_connection(("127.0.0.1", port)) as sock:  # a handshake that never finishes
        sock.sendall(_frame(17, 1, struct.pack(">h", 5) + b"PLAIN"))
        assert _closed(sock)
    logs = sasl_cluster.brokers[0].log.read_text()
    assert "before its SASL authentication completed" in logs and "unsupported SASL mechanism" in logs
    assert "authentication not complete within 3000 ms" in logs
    assert "exceeds the 528384 bytes allowed before SASL authentication" in logs
    assert _ready(sasl_cluster)


def _read_frame(sock: socket.socket) -> bytes:
    sock.settimeout(10)
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        chunk = sock.recv(65536)
        assert chunk, "the broker closed the connection"
        data += chunk
    return data[4:]


def test_a_handshake_v0_takes_a_raw_plain_token_then_serves_requests(sasl_cluster: SaslCluster) -> None:
    port = sasl_cluster.brokers[0].sasl_port
    handshake_v0 = _frame(17, 0, struct.pack(">h", 5) + b"PLAIN")
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(handshake_v0)
        assert _read_frame(sock)[4:6] == b"\0\0"  # after the correlation id: NONE
        token = f"\0admin\0{ADMIN_PASSWORD}".encode()
        sock.sendall(struct.pack(">i", len(token)) + token)  # raw: no header, no SaslAuthenticate
        assert _read_frame(sock) == b""  # PLAIN's empty answer, raw too
        sock.sendall(_frame(3, 1, struct.pack(">i", -1)))  # Metadata v1 of every topic
        metadata = _read_frame(sock)
        assert struct.unpack(">i", metadata[:4])[0] == 1 and struct.unpack(">i", metadata[4:8])[0] == len(BROKER_IDS)
    with socket.create_connection(("127.0.0.1", port)) as sock:  # a wrong password: closed without an answer
        sock.sendall(handshake_v0)
        _read_frame(sock)
        token = b"\0admin\0wrong-password-77"
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert _closed(sock)
    _assert_no_secret_in_logs(sasl_cluster)


def test_minikafka_users_adds_a_user_its_clients_authenticate_as_and_deletes_it(sasl_cluster: SaslCluster) -> None:
    internal = f"127.0.0.1:{sasl_cluster.brokers[0].internal_port}"
    cli("users", "--add", "carol", "--password", "carol-secret-41a7", "--mechanism", "SCRAM-SHA-256",
        "--iterations", "8192", "--bootstrap-server", internal)
    assert "carol\tSCRAM-SHA-256(iterations=8192)" in cli("users", "--list", "--bootstrap-server", internal).stdout
    topic = _new_topic(sasl_cluster)
    carol = SaslCredentials("SCRAM-SHA-256", "carol", "carol-secret-41a7")

    async def round_trip() -> list[bytes]:
        async with Producer(sasl_cluster.bootstrap, acks="all", sasl=carol) as producer:
            futures = [await producer.send(topic, f"minikafka-{i}".encode()) for i in range(RECORDS)]
            await asyncio.gather(*futures)
        async with Consumer(sasl_cluster.bootstrap, sasl=carol, auto_offset_reset="earliest") as consumer:
            consumer.assign([TopicPartition(topic, 0)])
            return [r.value for r in await poll_records(consumer, RECORDS)]

    assert asyncio.run(round_trip()) == [f"minikafka-{i}".encode() for i in range(RECORDS)]
    cli("users", "--delete", "carol", "--bootstrap-server", internal)
    assert "carol" not in cli("users", "--list", "--bootstrap-server", internal).stdout

    async def refused() -> None:
        async with Admin(sasl_cluster.bootstrap, sasl=carol) as admin:
            await admin.list_topics()

    with pytest.raises(AuthenticationFailedError, match="invalid credentials"):
        asyncio.run(refused())
    _assert_no_secret_in_logs(sasl_cluster)
