"""A cluster of `cluster up --security ssl` (a listener requiring client certificates beside the plaintext one)
whose brokers replicate over TLS (inter.broker.listener.name=SSL): stock clients produce and consume over TLS
with the settings the cluster directory holds, and what is not TLS on a TLS port (or TLS on a plaintext port) is
refused connection by connection while the brokers go on serving."""

from __future__ import annotations

import socket
import ssl
import struct
import uuid

import aiokafka
import aiokafka.helpers
import confluent_kafka
import kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from broker.config import parse_properties
from client.cluster import ClusterState
from client.cluster_security import CA_FILE, CLIENT_KEYSTORE, CLIENT_PROPERTIES, LIBRDKAFKA_PROPERTIES
from tests.integration.clusterutil import cli, cluster_fixture, established_ports, server_log, status_json
from tests.integration.test_stock_kafka_clients import kcat_round_trip
from tests.kafka_broker import kafka_tool
from tests.polling import wait_for
from tests.stock_consumers import aiokafka_values, confluent_values

HANDSHAKE_TIMEOUT_MS = 1500
cluster = cluster_fixture(brokers=2, security="ssl", configs={
    "inter.broker.listener.name": "SSL", "ssl.handshake.timeout.ms": str(HANDSHAKE_TIMEOUT_MS)})


@pytest.fixture
def topic(cluster: ClusterState) -> str:
    """A new topic with 2 partitions on both brokers, created over TLS."""
    name = f"tls-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(_librdkafka(cluster))  # kept until the answer: its handle must outlive the future
    admin.create_topics([NewTopic(name, 2, 2)])[name].result(timeout=30)
    return name


def _secured(cluster: ClusterState) -> str:
    return cluster.kafka_bootstrap_servers


def _librdkafka(cluster: ClusterState) -> dict[str, str]:
    return {"bootstrap.servers": _secured(cluster),
            **parse_properties((cluster.directory / LIBRDKAFKA_PROPERTIES).read_text())}


def _assert_serving(cluster: ClusterState) -> None:
    """Both brokers still answer Metadata over TLS."""
    metadata = AdminClient(_librdkafka(cluster)).list_topics(timeout=20)
    assert sorted(metadata.brokers) == [b.id for b in cluster.brokers]


def _logs(cluster: ClusterState) -> str:
    return "".join(b.server_log.read_text() for b in cluster.brokers)


def test_status_gives_the_secured_listeners_and_the_directory_the_client_settings(cluster):
    addresses = [b["kafka_address"] for b in status_json(cluster.directory)["brokers"]]
    assert ",".join(addresses) == _secured(cluster)
    assert addresses == [f"{b.host}:{b.secure_port}" for b in cluster.brokers]
    assert all(b.secure_port and b.secure_port != b.port for b in cluster.brokers)
    for name in (CLIENT_PROPERTIES, LIBRDKAFKA_PROPERTIES, CA_FILE, CLIENT_KEYSTORE):
        assert (cluster.directory / name).exists()


def test_confluent_kafka_produces_and_consumes_with_a_client_certificate(cluster, topic):
    settings = _librdkafka(cluster)
    producer = confluent_kafka.Producer({**settings, "acks": "all"})
    for i in range(20):
        producer.produce(topic, f"rd-{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    consumer = confluent_kafka.Consumer({**settings, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen = set(confluent_values(consumer, 20, "over TLS"))
    assert seen == {f"rd-{i}".encode() for i in range(20)}


def test_kcat_produces_consumes_and_lists_with_a_client_certificate(cluster, topic):
    read, listing = kcat_round_trip(cluster, topic)
    assert read == ["k1", "k2", "k3"]
    assert f'topic "{topic}" with 2 partitions' in listing and "2 brokers" in listing


def test_a_client_without_a_certificate_is_refused_by_a_listener_that_requires_one(cluster):
    producer = confluent_kafka.Producer({"bootstrap.servers": _secured(cluster), "security.protocol": "ssl",
                                         "ssl.ca.location": str(cluster.directory / CA_FILE)})
    with pytest.raises(confluent_kafka.KafkaException):
        producer.list_topics(timeout=3)
    wait_for(lambda: "PEER_DID_NOT_RETURN_A_CERTIFICATE" in _logs(cluster), "a log line on the missing certificate")


def test_kafka_python_produces_and_consumes_with_a_client_certificate(cluster, topic):
    ssl_settings = {"security_protocol": "SSL", "ssl_cafile": str(cluster.directory / CA_FILE),
                    "ssl_certfile": str(cluster.directory / CLIENT_KEYSTORE),
                    "ssl_keyfile": str(cluster.directory / CLIENT_KEYSTORE)}
    producer = kafka.KafkaProducer(bootstrap_servers=_secured(cluster), acks="all", **ssl_settings)
    for i in range(10):
        producer.send(topic, f"kp-{i}".encode(), partition=0).get(timeout=30)
    producer.close()
    consumer = kafka.KafkaConsumer(bootstrap_servers=_secured(cluster), auto_offset_reset="earliest",
                                   **ssl_settings)
    consumer.assign([kafka.TopicPartition(topic, 0)])
    values: list[bytes] = []

    def read() -> bool:
        for records in consumer.poll(timeout_ms=500).values():
            values.extend(record.value for record in records)
        return len(values) >= 10

    try:
        wait_for(read, lambda: f"10 records read back over TLS, got {len(values)}")
    finally:
        consumer.close()
    assert values == [f"kp-{i}".encode() for i in range(10)]


async def test_aiokafka_produces_and_consumes_with_a_client_certificate(cluster, topic):
    context = aiokafka.helpers.create_ssl_context(cafile=str(cluster.directory / CA_FILE),
                                                  certfile=str(cluster.directory / CLIENT_KEYSTORE),
                                                  keyfile=str(cluster.directory / CLIENT_KEYSTORE))
    settings = {"bootstrap_servers": _secured(cluster), "security_protocol": "SSL", "ssl_context": context}
    async with aiokafka.AIOKafkaProducer(acks="all", **settings) as producer:
        for i in range(10):
            await producer.send_and_wait(topic, f"ak-{i}".encode(), partition=1)
    async with aiokafka.AIOKafkaConsumer(auto_offset_reset="earliest", **settings) as consumer:
        consumer.assign([aiokafka.TopicPartition(topic, 1)])
        values = await aiokafka_values(consumer, 10, timeout_s=30)
    assert values == [f"ak-{i}".encode() for i in range(10)]


def test_kafkas_console_tools_and_minikafkas_cli_work_with_client_properties(cluster):
    topic = f"tls-java-{uuid.uuid4().hex[:8]}"  # created by minikafka's CLI over TLS, client.properties from --dir
    cli("topic", "create", topic, "--partitions", "1", "--replication-factor", "2", "--dir", str(cluster.directory))
    config = str(cluster.directory / CLIENT_PROPERTIES)
    bootstrap = ("--bootstrap-server", _secured(cluster))
    kafka_tool("kafka.tools.ConsoleProducer", *bootstrap, "--producer.config", config, "--topic", topic,
               stdin="j1\nj2\nj3\n")
    out = kafka_tool("org.apache.kafka.tools.consumer.ConsoleConsumer", *bootstrap, "--consumer.config", config,
                     "--topic", topic, "--from-beginning", "--max-messages", "3")
    assert out.split() == ["j1", "j2", "j3"]
    consumed = cli("consume", topic, "--from-beginning", "--max-messages", "3", *bootstrap, "--command-config",
                   config).stdout.split()
    assert consumed == ["j1", "j2", "j3"]


def test_replicas_follow_over_the_tls_inter_broker_listener(cluster, topic):
    producer = confluent_kafka.Producer({**_librdkafka(cluster), "acks": "all"})
    for i in range(50):
        producer.produce(topic, f"r{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0  # acks=all: each record is on both replicas
    partitions = AdminClient(_librdkafka(cluster)).list_topics(topic, timeout=20).topics[topic].partitions
    assert {p: sorted(m.isrs) for p, m in partitions.items()} == {0: [1, 2], 1: [1, 2]}
    secure_ports = {b.secure_port for b in cluster.brokers}
    plaintext_ports = {b.port for b in cluster.brokers}
    for broker in cluster.brokers:
        peers = set(established_ports(broker.pid))
        assert peers & secure_ports, f"broker {broker.id} has no connection to a TLS listener"
        assert not peers & plaintext_ports, f"broker {broker.id} talks to a plaintext listener"


def _closed_within(connection: socket.socket, timeout_s: float) -> bytes:
    connection.settimeout(timeout_s)
    try:
        return connection.recv(1024)
    except ConnectionResetError:
        return b""


def test_a_plaintext_client_on_the_tls_port_is_closed_and_the_broker_serves_on(cluster, topic):
    broker = cluster.brokers[0]
    header = struct.pack(">hhih", 18, 0, 1, len(b"client")) + b"client"  # an ApiVersions v0 request
    api_versions = struct.pack(">i", len(header)) + header
    with socket.create_connection((broker.host, broker.secure_port)) as plain:
        plain.sendall(api_versions)
        assert _closed_within(plain, 10) == b""
    wait_for(lambda: "(a plaintext client on a TLS listener?)" in broker.server_log.read_text(),
             lambda: f"a log line on the plaintext client\n{server_log(broker)}")
    _assert_serving(cluster)


def test_a_tls_client_on_the_plaintext_port_is_closed_and_the_broker_serves_on(cluster, topic):
    broker = cluster.brokers[1]
    context = ssl.create_default_context(cafile=str(cluster.directory / CA_FILE))
    with socket.create_connection((broker.host, broker.port)) as raw, pytest.raises((ssl.SSLError, OSError)):
        raw.settimeout(10)
        context.wrap_socket(raw, server_hostname=broker.host)
    wait_for(lambda: "a TLS client on a plaintext listener?" in broker.server_log.read_text(),
             lambda: f"a log line on the TLS client\n{server_log(broker)}")
    _assert_serving(cluster)


def test_a_handshake_that_never_finishes_is_ended_by_its_timeout(cluster, topic):
    broker = cluster.brokers[0]
    with socket.create_connection((broker.host, broker.secure_port)) as silent:
        assert _closed_within(silent, 10 * HANDSHAKE_TIMEOUT_MS / 1000) == b""
    wait_for(lambda: "SSL handshake is taking longer than" in broker.server_log.read_text(),
             lambda: f"a log line on the unfinished handshake\n{server_log(broker)}")
    _assert_serving(cluster)
