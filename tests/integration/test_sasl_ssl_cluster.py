"""A cluster of `cluster up --security sasl_ssl` whose brokers replicate over that listener too
(inter.broker.listener.name=SASL_SSL, SCRAM-SHA-512 inside TLS): stock clients (confluent-kafka, kafka-python,
aiokafka, kcat) and Kafka's own tools run with only the settings the cluster directory holds, an idempotent stream
through a leader killed -9 loses no acknowledged record, and no broker log holds the admin's password."""

from __future__ import annotations

import asyncio
import itertools
import uuid

import aiokafka
import aiokafka.helpers
import confluent_kafka
import kafka
from confluent_kafka.admin import AdminClient, NewTopic

from broker.config import parse_properties
from client.cluster import ClusterState, kill_broker, start_broker
from client.cluster_security import CA_FILE, CLIENT_PROPERTIES, LIBRDKAFKA_PROPERTIES
from tests.integration.clusterutil import SMALL_TIMEOUTS, cli, cluster_fixture, describe_topic
from tests.integration.test_stock_kafka_clients import kcat_round_trip
from tests.kafka_broker import kafka_tool
from tests.stock_consumers import aiokafka_values, confluent_values

cluster = cluster_fixture(brokers=3, security="sasl_ssl",
                          configs={**SMALL_TIMEOUTS, "inter.broker.listener.name": "SASL_SSL"})


def _librdkafka(cluster: ClusterState) -> dict[str, str]:
    return {"bootstrap.servers": cluster.kafka_bootstrap_servers,
            **parse_properties((cluster.directory / LIBRDKAFKA_PROPERTIES).read_text())}


def _new_topic(cluster: ClusterState, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(_librdkafka(cluster))  # kept until the answer: its handle must outlive the future
    admin.create_topics([NewTopic(name, 1, 3, config={"min.insync.replicas": "2"})])[name].result(timeout=30)
    return name


def _read_all(cluster: ClusterState, topic: str, count: int) -> list[bytes]:
    consumer = confluent_kafka.Consumer({**_librdkafka(cluster), "group.id": f"g-{topic}",
                                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    return confluent_values(consumer, count, "over SASL_SSL", timeout_s=60)


def test_kafkas_tools_kafka_python_and_minikafkas_cli_run_with_the_directorys_settings(cluster):
    topic = _new_topic(cluster, "tools")
    config = str(cluster.directory / CLIENT_PROPERTIES)
    bootstrap = ("--bootstrap-server", cluster.kafka_bootstrap_servers)
    kafka_tool("kafka.tools.ConsoleProducer", *bootstrap, "--producer.config", config, "--topic", topic,
               stdin="j1\nj2\nj3\n")
    java = kafka_tool("org.apache.kafka.tools.consumer.ConsoleConsumer", *bootstrap, "--consumer.config", config,
                      "--topic", topic, "--from-beginning", "--max-messages", "3")
    assert java.split() == ["j1", "j2", "j3"]
    settings = parse_properties((cluster.directory / LIBRDKAFKA_PROPERTIES).read_text())
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=cluster.kafka_bootstrap_servers.split(","),
                                   security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                                   sasl_plain_username=settings["sasl.username"],
                                   sasl_plain_password=settings["sasl.password"],
                                   ssl_cafile=str(cluster.directory / CA_FILE), auto_offset_reset="earliest",
                                   consumer_timeout_ms=20000)
    try:
        assert [record.value for record in itertools.islice(consumer, 3)] == [b"j1", b"j2", b"j3"]
    finally:
        consumer.close()
    users = cli("users", "--list", "--dir", str(cluster.directory)).stdout
    assert users.split()[0] == "admin" and "SCRAM-SHA-512" in users


def test_kcat_produces_consumes_and_lists_over_sasl_ssl_with_scram_sha_512(cluster):
    topic = _new_topic(cluster, "kcat")
    read, listing = kcat_round_trip(cluster, topic)
    assert read == ["k1", "k2", "k3"]
    assert f'topic "{topic}" with 1 partitions' in listing and "3 brokers" in listing


async def test_an_idempotent_stream_through_a_killed_leader_loses_no_acknowledged_record(cluster):
    topic = _new_topic(cluster, "failover")
    producer = confluent_kafka.Producer({**_librdkafka(cluster), "acks": "all", "enable.idempotence": True})
    acked: list[bytes] = []

    def delivered(error: object, message: confluent_kafka.Message) -> None:
        if error is None:
            acked.append(message.value())

    def produce(prefix: str) -> int:
        for i in range(200):
            producer.produce(topic, f"{prefix}-{i}".encode(), on_delivery=delivered)
        return producer.flush(60)

    assert await asyncio.to_thread(produce, "before") == 0
    leader = (await describe_topic(cluster, topic))[0].leader
    kill_broker(cluster.directory, leader, "KILL")
    try:
        assert await asyncio.to_thread(produce, "after") == 0
        assert len(acked) == 400
        assert (await describe_topic(cluster, topic))[0].leader not in (leader, -1)  # elected among the others
        read = await asyncio.to_thread(_read_all, cluster, topic, 400)
        assert sorted(read) == sorted(acked)  # every acknowledged record once: none lost, none twice
    finally:
        await start_broker(cluster.directory, leader)
    password = parse_properties((cluster.directory / LIBRDKAFKA_PROPERTIES).read_text())["sasl.password"]
    assert all(password not in broker.server_log.read_text() for broker in cluster.brokers)


async def test_aiokafka_produces_and_consumes_over_sasl_ssl_with_scram_sha_512(cluster):
    topic = _new_topic(cluster, "aiokafka")
    settings = parse_properties((cluster.directory / LIBRDKAFKA_PROPERTIES).read_text())
    client = {"bootstrap_servers": cluster.kafka_bootstrap_servers, "security_protocol": "SASL_SSL",
              "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": settings["sasl.username"],
              "sasl_plain_password": settings["sasl.password"],
              "ssl_context": aiokafka.helpers.create_ssl_context(cafile=str(cluster.directory / CA_FILE))}
    async with aiokafka.AIOKafkaProducer(acks="all", **client) as producer:
        for i in range(5):
            await producer.send_and_wait(topic, f"a{i}".encode())
    async with aiokafka.AIOKafkaConsumer(topic, auto_offset_reset="earliest", group_id=f"g-{topic}",
                                         **client) as consumer:
        values = await aiokafka_values(consumer, 5, timeout_s=60)
    assert values == [f"a{i}".encode() for i in range(5)]
