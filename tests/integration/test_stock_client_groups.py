"""Stock Kafka clients consuming with consumer groups, each as its documentation says: confluent-kafka's subscribe
with synchronous and asynchronous commits, kcat's balanced consumer (-G), kafka-python's and aiokafka's consumers
with a group_id, and Apache Kafka's console consumer (--group), ConsumerPerformance, VerifiableConsumer and
kafka-consumer-groups (--list, --describe, --reset-offsets); Kafka's DumpLogSegments reads __consumer_offsets
with its offsets decoder, which Metadata marks internal and clients cannot produce to. One 3-broker cluster
(`minikafka cluster up`: offsets replicated 3 times, no initial rebalance delay) serves every test, each with
topics and groups of its own."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import aiokafka
import kafka
import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

from client.cluster import ClusterState
from protocol.consumer_offsets import OFFSETS_TOPIC, partition_for
from tests.integration.clusterutil import cluster_fixture, create_topic
from tests.integration.group_member import committed_offsets
from tests.integration.test_stock_kafka_clients import KCAT, TIMEOUT_S, kcat
from tests.kafka_broker import GROUP_TOOL, kafka_tool
from tests.polling import wait_for

OFFSETS_PARTITIONS = 5
cluster = cluster_fixture(brokers=3, configs={"offsets.topic.num.partitions": str(OFFSETS_PARTITIONS)})
PARTITIONS = 3
RECORDS = 30


@pytest.fixture
def topic(cluster: ClusterState) -> Iterator[str]:
    """A new topic of 3 partitions, replication factor 3, holding RECORDS records (v0..v29), 10 a partition."""
    name = f"groups-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_topic(cluster, name, partitions=PARTITIONS, replication_factor=3))
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(name, value=f"v{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(TIMEOUT_S) == 0
    yield name


def group_name() -> str:
    return f"group-{uuid.uuid4().hex[:8]}"


def group_offsets(cluster: ClusterState, group: str, topic: str) -> dict[int, int]:
    return committed_offsets(cluster.bootstrap_servers, group, topic, PARTITIONS)


#: What a group that consumed every record has committed.
ALL_COMMITTED = {p: RECORDS // PARTITIONS for p in range(PARTITIONS)}


# ------------------------------------------------------------------------------------------------ confluent-kafka


def test_a_brokers_group_settings_show_in_describe_configs(cluster: ClusterState) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    [described] = admin.describe_configs([ConfigResource("broker", "2")]).values()
    entries = described.result(TIMEOUT_S)
    shown = {name: (entries[name].value, entries[name].source) for name in (
        "offsets.topic.num.partitions", "offsets.topic.replication.factor", "group.initial.rebalance.delay.ms",
        "group.min.session.timeout.ms", "offsets.retention.minutes")}
    given, default = ConfigSource.STATIC_BROKER_CONFIG.value, ConfigSource.DEFAULT_CONFIG.value
    assert shown == {"offsets.topic.num.partitions": (str(OFFSETS_PARTITIONS), given),
                     "offsets.topic.replication.factor": ("3", given), "group.initial.rebalance.delay.ms": ("0", given),
                     "group.min.session.timeout.ms": ("6000", default), "offsets.retention.minutes": ("10080", default)}
    del admin  # librdkafka's client threads end with the last reference


def _poll_values(consumer: Consumer, count: int) -> list[bytes]:
    values: list[bytes] = []

    def enough() -> bool:
        message = consumer.poll(0.2)
        if message is not None:
            assert message.error() is None, message.error()
            values.append(message.value())
        return len(values) >= count

    wait_for(enough, lambda: f"{count} records (got {len(values)})", timeout_s=TIMEOUT_S, interval_s=0)
    return values


def test_confluent_kafka_subscribes_commits_sync_and_async_and_a_new_member_resumes(cluster: ClusterState,
                                                                                   topic: str) -> None:
    group = group_name()
    settings = {"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "auto.offset.reset": "earliest",
                "enable.auto.commit": False}
    consumer = Consumer(settings)
    try:
        consumer.subscribe([topic])
        first = _poll_values(consumer, 12)
        committed = consumer.commit(asynchronous=False)
        assert all(tp.error is None for tp in committed)
        synced = {tp.partition: tp.offset for tp in committed}
        rest = _poll_values(consumer, RECORDS - len(first))
        consumer.commit(asynchronous=True)
        wait_for(lambda: group_offsets(cluster, group, topic) == ALL_COMMITTED,
                 "the asynchronous commit to be read back")
    finally:
        consumer.close()
    assert sorted(first + rest, key=lambda v: int(v[1:])) == [f"v{i}".encode() for i in range(RECORDS)]
    assert sum(offset for offset in synced.values() if offset >= 0) == len(first)  # -1001: nothing read yet

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    producer.produce(topic, value=b"after", partition=1)
    assert producer.flush(TIMEOUT_S) == 0
    resumed = Consumer(settings)
    try:
        resumed.subscribe([topic])
        assert _poll_values(resumed, 1) == [b"after"]  # from the committed offsets, not from the beginning
    finally:
        resumed.close()


# ------------------------------------------------------------------------------------------------ kcat


def test_kcat_balanced_consumer_reads_the_topic_and_commits(cluster: ClusterState, topic: str) -> None:
    if KCAT is None:
        pytest.fail("kcat is not installed: run make setup (Debian's kcat package)")
    group = group_name()
    out = kcat(cluster, "-G", group, "-X", "auto.offset.reset=earliest", "-c", str(RECORDS), "-f", "%s\\n", topic)
    assert sorted(out.split(), key=lambda v: int(v[1:])) == [f"v{i}" for i in range(RECORDS)]
    wait_for(lambda: group_offsets(cluster, group, topic) == ALL_COMMITTED,
             "kcat's commits to be read back")


# ------------------------------------------------------------------------------------------------ kafka-python


def test_kafka_python_consumer_with_a_group_id_consumes_and_commits(cluster: ClusterState, topic: str) -> None:
    group = group_name()
    consumer = kafka.KafkaConsumer(topic, group_id=group, bootstrap_servers=cluster.bootstrap_servers,
                                   auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=20_000)
    try:
        values = [record.value for _, record in zip(range(RECORDS), consumer, strict=False)]
        consumer.commit()
        assert {p: consumer.committed(kafka.TopicPartition(topic, p)) for p in range(PARTITIONS)} == (
            ALL_COMMITTED)
    finally:
        consumer.close()
    assert sorted(values, key=lambda v: int(v[1:])) == [f"v{i}".encode() for i in range(RECORDS)]
    assert group_offsets(cluster, group, topic) == ALL_COMMITTED


# ------------------------------------------------------------------------------------------------ aiokafka


async def test_aiokafka_consumer_with_a_group_id_consumes_and_commits(cluster: ClusterState, topic: str) -> None:
    group = group_name()
    consumer = aiokafka.AIOKafkaConsumer(topic, group_id=group, bootstrap_servers=cluster.bootstrap_servers,
                                         auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    try:
        values: list[bytes] = []
        async with asyncio.timeout(TIMEOUT_S):
            while len(values) < RECORDS:
                for records in (await consumer.getmany(timeout_ms=1000)).values():
                    values += [record.value for record in records]
        await consumer.commit()
        committed = {p: await consumer.committed(aiokafka.TopicPartition(topic, p)) for p in range(PARTITIONS)}
    finally:
        await consumer.stop()
    assert sorted(values, key=lambda v: int(v[1:])) == [f"v{i}".encode() for i in range(RECORDS)]
    assert committed == ALL_COMMITTED


# ------------------------------------------------------------------------------------------------ Kafka's tools


def test_kafkas_console_consumer_with_a_group_and_the_consumer_groups_tool(cluster: ClusterState,
                                                                         topic: str) -> None:
    group = group_name()
    bootstrap = ("--bootstrap-server", cluster.bootstrap_servers)
    consumed = kafka_tool("org.apache.kafka.tools.consumer.ConsoleConsumer", *bootstrap, "--topic", topic,
                          "--group", group, "--from-beginning", "--max-messages", str(RECORDS))
    assert sorted(consumed.split(), key=lambda v: int(v[1:])) == [f"v{i}" for i in range(RECORDS)]
    assert group_offsets(cluster, group, topic) == ALL_COMMITTED

    assert group in kafka_tool(GROUP_TOOL, *bootstrap, "--list").split()
    described = kafka_tool(GROUP_TOOL, *bootstrap, "--describe", "--group", group)
    rows = re.findall(rf"{group}\s+{topic}\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", described)
    assert sorted(rows) == [(str(p), "10", "10", "0") for p in range(PARTITIONS)], described
    state = kafka_tool(GROUP_TOOL, *bootstrap, "--describe", "--group", group, "--state")
    assert re.search(rf"{group}\s+\S+:\d+\s+\(\d\)\s+(range|roundrobin|\S*)\s+Empty\s+0", state), state

    planned = kafka_tool(GROUP_TOOL, *bootstrap, "--reset-offsets", "--group", group, "--topic", topic,
                         "--to-earliest", "--dry-run")
    assert sorted(re.findall(rf"{group}\s+{topic}\s+(\d+)\s+(\d+)", planned)) == [
        (str(p), "0") for p in range(PARTITIONS)], planned
    assert group_offsets(cluster, group, topic) == ALL_COMMITTED  # a dry run
    kafka_tool(GROUP_TOOL, *bootstrap, "--reset-offsets", "--group", group, "--topic", f"{topic}:1",
               "--to-offset", "4", "--execute")
    assert group_offsets(cluster, group, topic) == {0: 10, 1: 4, 2: 10}
    again = kafka_tool("org.apache.kafka.tools.consumer.ConsoleConsumer", *bootstrap, "--topic", topic,
                       "--group", group, "--max-messages", "6", "--timeout-ms", "20000")
    assert sorted(again.split(), key=lambda v: int(v[1:])) == [f"v{i}" for i in range(RECORDS) if i % 3 == 1][4:]


def test_consumer_performance_and_verifiable_consumer_consume_with_their_groups(cluster: ClusterState,
                                                                              topic: str) -> None:
    bootstrap = ("--bootstrap-server", cluster.bootstrap_servers)
    perf = kafka_tool("org.apache.kafka.tools.ConsumerPerformance", *bootstrap, "--topic", topic,
                      "--messages", str(RECORDS), "--group", group_name(), "--timeout", "30000")
    header, row = perf.strip().splitlines()[-2:]
    assert int(dict(zip(header.split(", "), row.split(", "), strict=True))["data.consumed.in.nMsg"]) == RECORDS

    group = group_name()
    verified = kafka_tool("org.apache.kafka.tools.VerifiableConsumer", *bootstrap, "--topic", topic,
                          "--group-id", group, "--max-messages", str(RECORDS), "--reset-policy", "earliest")
    events = [json.loads(line) for line in verified.splitlines() if line.startswith("{")]
    assigned = [e for e in events if e["name"] == "partitions_assigned"]
    assert assigned and sorted(p["partition"] for p in assigned[0]["partitions"]) == list(range(PARTITIONS))
    consumed = sum(p["count"] for e in events if e["name"] == "records_consumed" for p in e["partitions"])
    assert consumed == RECORDS
    commits = [e for e in events if e["name"] == "offsets_committed"]
    assert commits and all(e["success"] for e in commits), commits
    assert group_offsets(cluster, group, topic) == ALL_COMMITTED


def test_dump_log_decodes_the_offsets_topic_which_is_internal_and_refuses_produce(cluster: ClusterState,
                                                                                  topic: str) -> None:
    group = group_name()
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
    finally:
        consumer.close()
    partition = partition_for(group, OFFSETS_PARTITIONS)
    segments = [Path(b.log_dir) / f"{OFFSETS_TOPIC}-{partition}" / "00000000000000000000.log"
                for b in cluster.brokers]
    for segment in segments:  # every replica, once the followers have the commit
        wait_for(lambda s=segment: group.encode() in s.read_bytes() if s.exists() else None,
                 f"the commit in {segment}")
        dumped = kafka_tool("kafka.tools.DumpLogSegments", "--offsets-decoder", "--files", str(segment))
        assert re.search(rf'key: {{"type":"1","data":{{"group":"{group}","topic":"{topic}","partition":0}}}} '
                         rf'payload: {{"version":"3","data":{{"offset":7,', dumped), dumped

    bootstrap = ("--bootstrap-server", cluster.bootstrap_servers)
    listed = kafka_tool("org.apache.kafka.tools.TopicCommand", *bootstrap, "--list").split()
    assert OFFSETS_TOPIC in listed and topic in listed
    assert OFFSETS_TOPIC not in kafka_tool("org.apache.kafka.tools.TopicCommand", *bootstrap, "--list",
                                           "--exclude-internal").split()

    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "message.timeout.ms": 10_000})
    producer.produce(OFFSETS_TOPIC, value=b"x", partition=0, on_delivery=lambda error, _m: errors.append(error))
    producer.flush(TIMEOUT_S)
    assert [e.code() for e in errors] == [KafkaError.TOPIC_EXCEPTION], errors


def test_the_consumer_groups_tool_describes_a_running_groups_members_and_lag(cluster: ClusterState, topic: str) -> None:
    group = group_name()
    bootstrap = ("--bootstrap-server", cluster.bootstrap_servers)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                         "auto.offset.reset": "earliest", "client.id": "described-client"})
    try:
        consumer.subscribe([topic])
        _poll_values(consumer, RECORDS)
        consumer.commit(asynchronous=False)
        members = kafka_tool(GROUP_TOOL, *bootstrap, "--describe", "--group", group, "--members")
        # a member id is the client id, "-" and a UUID; its host the address it connected from, as Kafka writes it
        assert re.search(rf"{group}\s+described-client-\S+\s+/127\.\d+\.\d+\.\d+\s+described-client\s+{PARTITIONS}",
                         members), members
        described = kafka_tool(GROUP_TOOL, *bootstrap, "--describe", "--group", group)
        assert len(re.findall(rf"{group}\s+{topic}\s+\d\s+10\s+10\s+0\s+described-client-\S+\s+/127", described)) == (
            PARTITIONS), described
    finally:
        consumer.close()
