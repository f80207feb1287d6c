"""Stock Kafka clients against a real cluster, used as their own documentation says to use them against Kafka:
kcat (Debian's package), confluent-kafka (librdkafka), kafka-python 3 with its defaults, aiokafka, and Apache Kafka's
own Java tools (kafka-topics, the console producer and consumer, kafka-dump-log on minikafka's segments). One
cluster (`minikafka cluster up`, 3 brokers) serves every test; each test uses topics of its own."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import socket
import struct
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import aiokafka
import kafka
import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from client.cluster import ClusterState
from protocol.records import iter_batches
from tests.integration.clusterutil import cluster_fixture, create_topic
from tests.kafka_broker import kafka_tool
from tests.polling import eventually
from zk import znodes
from zk.client import ZkClient

cluster = cluster_fixture(brokers=3)
TIMEOUT_S = 30
KCAT = shutil.which("kcat")


@pytest.fixture
def topic(cluster: ClusterState) -> Iterator[str]:
    """A new topic of 3 partitions, replication factor 3."""
    name = f"stock-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_topic(cluster, name, partitions=3, replication_factor=3))
    yield name


def kcat(cluster: ClusterState, *args: str, stdin: str | None = None, secured: bool = False) -> str:
    """kcat's stdout; secured, on the secured listeners with the settings of librdkafka.properties (kcat -F)."""
    if KCAT is None:
        pytest.fail("kcat is not installed: run make setup (Debian's kcat package)")
    where = ["-F", str(cluster.directory / "librdkafka.properties"), "-b", cluster.kafka_bootstrap_servers] \
        if secured else ["-b", cluster.bootstrap_servers]
    result = subprocess.run([KCAT, *where, *args], input=stdin, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert result.returncode == 0, f"kcat {' '.join(args)} failed:\n{result.stderr}"
    return result.stdout


def kcat_round_trip(cluster: ClusterState, topic: str) -> tuple[list[str], str]:
    """Three records kcat produces to partition 0 of `topic` and reads back, and its metadata listing (-L), all
    over the secured listeners."""
    kcat(cluster, "-P", "-t", topic, "-p", "0", stdin="k1\nk2\nk3\n", secured=True)
    read = kcat(cluster, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-c", "3", "-e", secured=True)
    return read.split(), kcat(cluster, "-L", "-t", topic, secured=True)


def log_batches(cluster: ClusterState, topic: str, partition: int) -> list:
    """The headers of the batches in a partition's first segment on every broker that has it."""
    headers = []
    for broker in cluster.brokers:
        segment = Path(broker.log_dir) / f"{topic}-{partition}" / "00000000000000000000.log"
        if segment.exists():
            headers += [header for _position, header in iter_batches(segment.read_bytes())]
    return headers


# ------------------------------------------------------------------------------------------------ kcat


def test_kcat_lists_brokers_topics_leaders_and_isrs(cluster: ClusterState, topic: str) -> None:
    listing = json.loads(kcat(cluster, "-L", "-J", "-t", topic))
    assert sorted(b["name"] for b in listing["brokers"]) == sorted(b.address for b in cluster.brokers)
    assert listing["controllerid"] in {b.id for b in cluster.brokers}
    [described] = listing["topics"]
    assert described["topic"] == topic and len(described["partitions"]) == 3
    for partition in described["partitions"]:
        assert sorted(r["id"] for r in partition["replicas"]) == [1, 2, 3]
        assert sorted(r["id"] for r in partition["isrs"]) == [1, 2, 3]
        assert partition["leader"] in (1, 2, 3)


def test_kcat_produces_with_acks_all_1_and_0_and_consumes_offsets_and_keys(cluster: ClusterState,
                                                                           topic: str) -> None:
    for acks in ("all", "1", "0"):
        lines = "".join(f"key-{acks}-{i}:value-{acks}-{i}\n" for i in range(3))
        kcat(cluster, "-P", "-t", topic, "-p", "0", "-K", ":", "-X", f"acks={acks}", stdin=lines)
    out = kcat(cluster, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-f", "%o %k %s\\n")
    assert out.splitlines() == [f"{n} key-{acks}-{i} value-{acks}-{i}"
                                for n, (acks, i) in enumerate((a, i) for a in ("all", "1", "0") for i in range(3))]


# ------------------------------------------------------------------------------------------------ confluent-kafka


def test_confluent_admin_creates_topics_describes_their_configs_and_deletes_them(cluster: ClusterState) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    name = f"admin-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, 2, 3, config={"retention.ms": "3600000"})])[name].result(TIMEOUT_S)
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):
        admin.create_topics([NewTopic(name, 2, 3)])[name].result(TIMEOUT_S)
    described = admin.list_topics(name, timeout=TIMEOUT_S).topics[name]
    assert len(described.partitions) == 2 and all(len(p.isrs) == 3 for p in described.partitions.values())

    configs = admin.describe_configs([ConfigResource("topic", name)])
    entries = next(iter(configs.values())).result(TIMEOUT_S)
    assert (entries["retention.ms"].value, entries["retention.ms"].source) == (
        "3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert (entries["segment.bytes"].value, entries["segment.bytes"].source) == (
        "1073741824", ConfigSource.DEFAULT_CONFIG.value)
    broker_configs = next(iter(admin.describe_configs([ConfigResource("broker", "1")]).values())).result(TIMEOUT_S)
    assert broker_configs["broker.id"].value == "1"

    # DeleteTopics marks the topic for deletion in ZooKeeper, as Kafka does; the controller deletes it.
    outcome = admin.delete_topics([name], operation_timeout=1)[name]
    try:
        outcome.result(TIMEOUT_S)
    except KafkaException as e:
        assert "REQUEST_TIMED_OUT" in str(e)  # the controller did not finish within the operation timeout
    asyncio.run(_assert_deletion_requested(cluster, name, admin))
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    with pytest.raises(KafkaException, match="UNKNOWN_TOPIC_OR_PART"):
        admin.delete_topics([missing], operation_timeout=1)[missing].result(TIMEOUT_S)
    del admin  # librdkafka's client threads end with the last reference


async def _assert_deletion_requested(cluster: ClusterState, name: str, admin: AdminClient) -> None:
    zk = ZkClient(cluster.zookeeper.connect, chroot=cluster.chroot)
    await zk.start()
    try:
        async def requested_or_deleted() -> bool | None:
            marked = await zk.exists(znodes.delete_topic_path(name)) is not None
            gone = name not in admin.list_topics(timeout=TIMEOUT_S).topics
            return True if marked or gone else None

        await eventually(requested_or_deleted, f"topic {name} to be marked for deletion or deleted")
    finally:
        await zk.close()


def test_confluent_consumer_assigns_and_seeks(cluster: ClusterState, topic: str) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for i in range(100):
        producer.produce(topic, key=f"k{i}", value=f"v{i}", partition=1)
    assert producer.flush(TIMEOUT_S) == 0
    producer.close()
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "unused",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 1, 40)])
        first = _poll(consumer, 1)
        assert (first[0].offset(), first[0].key(), first[0].value()) == (40, b"k40", b"v40")
        consumer.seek(TopicPartition(topic, 1, 95))
        rest = _poll(consumer, 5)
        assert [(m.offset(), m.value()) for m in rest] == [(o, f"v{o}".encode()) for o in range(95, 100)]
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 1), timeout=TIMEOUT_S)
        assert (low, high) == (0, 100)
    finally:
        consumer.close()


def _poll(consumer: Consumer, count: int) -> list:
    messages = []
    for _ in range(TIMEOUT_S * 10):
        message = consumer.poll(0.1)
        if message is not None:
            assert message.error() is None, message.error()
            messages.append(message)
            if len(messages) == count:
                return messages
    pytest.fail(f"got {len(messages)} of {count} messages")


# ------------------------------------------------------------------------------------------------ kafka-python


def test_kafka_python_with_its_defaults_is_idempotent_and_round_trips(cluster: ClusterState, topic: str) -> None:
    producer = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)  # idempotent, acks=all
    try:
        sent = [producer.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=2) for i in range(50)]
        assert [future.get(timeout=TIMEOUT_S).offset for future in sent] == list(range(50))
    finally:
        producer.close()
    assert all(header.producer_id >= 0 for header in log_batches(cluster, topic, 2))  # InitProducerId's id
    consumer = kafka.KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, consumer_timeout_ms=5000)
    try:
        consumer.assign([kafka.TopicPartition(topic, 2)])
        consumer.seek_to_beginning()
        records = [record for _, record in zip(range(50), consumer, strict=False)]
    finally:
        consumer.close()
    assert [(r.offset, r.key, r.value) for r in records] == [(i, f"k{i}".encode(), f"v{i}".encode())
                                                             for i in range(50)]


# ------------------------------------------------------------------------------------------------ aiokafka


async def test_aiokafka_round_trips(cluster: ClusterState, topic: str) -> None:
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    await producer.start()
    try:
        offsets = [(await producer.send_and_wait(topic, f"v{i}".encode(), key=b"k", partition=0)).offset
                   for i in range(20)]
    finally:
        await producer.stop()
    assert offsets == list(range(20))
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers)
    await consumer.start()
    try:
        tp = aiokafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        values: list[bytes] = []
        async with asyncio.timeout(TIMEOUT_S):
            while len(values) < 20:
                batch = await consumer.getmany(tp, timeout_ms=1000)
                values += [record.value for record in batch.get(tp, [])]
    finally:
        await consumer.stop()
    assert values == [f"v{i}".encode() for i in range(20)]


# ------------------------------------------------------------------------------------------------ the wire rules


def _raw_request(cluster: ClusterState, api_key: int, version: int, body: bytes = b"") -> bytes:
    """Send one request frame on a new connection; the response payload, or b"" if the broker closed it."""
    broker = cluster.brokers[0]
    payload = struct.pack(">hhih", api_key, version, 42, 4) + b"test" + body
    with socket.create_connection((broker.host, broker.port), timeout=TIMEOUT_S) as connection:
        connection.sendall(struct.pack(">i", len(payload)) + payload)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
            if len(received) >= 4 and len(received) >= 4 + struct.unpack(">i", received[:4])[0]:
                return received[4:]
    return b""


def test_api_versions_above_ours_gets_the_v0_error_answer_and_unknown_apis_close(cluster: ClusterState) -> None:
    assert _raw_request(cluster, 18, 5) == bytes.fromhex("0000002a" "0023" "00000001" "0012" "0000" "0004")
    assert _raw_request(cluster, 18, 0)[:6] == bytes.fromhex("0000002a" "0000")
    assert _raw_request(cluster, 17, 1) == b""  # SaslHandshake: not served, the connection is closed
    assert _raw_request(cluster, 0, 2) == b""  # Produce v2: below the served versions
    assert _raw_request(cluster, 3, 8, b"\x7f\xff\xff\xff") == b""  # a malformed Metadata body
    assert _raw_request(cluster, 18, 2)[:6] == bytes.fromhex("0000002a" "0000")  # and the broker still serves


def test_a_frame_over_socket_request_max_bytes_is_refused_before_it_is_read(cluster: ClusterState) -> None:
    broker = cluster.brokers[0]
    with socket.create_connection((broker.host, broker.port), timeout=TIMEOUT_S) as connection:
        # A Produce header announcing 200 MB (socket.request.max.bytes is 100 MiB); the body is never sent.
        connection.sendall(struct.pack(">ihhih", 200_000_000, 0, 8, 1, -1))
        assert connection.recv(65536) == b""  # closed without waiting for the 200 MB
    assert _raw_request(cluster, 18, 2)[:6] == bytes.fromhex("0000002a" "0000")


# ------------------------------------------------------------------------------------------------ Kafka's Java tools


def test_kafkas_tools_create_describe_produce_consume_and_dump_minikafkas_segments(cluster: ClusterState) -> None:
    topic = f"java-{uuid.uuid4().hex[:8]}"
    bootstrap = ("--bootstrap-server", cluster.bootstrap_servers)
    kafka_tool("org.apache.kafka.tools.TopicCommand", *bootstrap, "--create", "--topic", topic,
               "--partitions", "1", "--replication-factor", "3", "--config", "min.insync.replicas=2")
    described = kafka_tool("org.apache.kafka.tools.TopicCommand", *bootstrap, "--describe", "--topic", topic)
    assert re.search(rf"Topic: {topic}\s+TopicId: [A-Za-z0-9_-]{{22}}\s+PartitionCount: 1\s+ReplicationFactor: 3\s+"
                     r"Configs: min.insync.replicas=2",
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
