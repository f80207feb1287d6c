"""Kafka's admin tools and confluent-kafka's AdminClient against a real cluster (`minikafka cluster up`, 3 brokers),
each result checked on the cluster: the cluster id (ZooKeeper's /cluster/id, every broker's meta.properties,
Metadata, DescribeCluster, `cluster status`, `kafka-cluster cluster-id`), ApiVersions v3 from Kafka's Java clients,
and topics created on first use by a producer (or not, with auto.create.topics.enable=false, on a 1-broker
cluster of its own). One cluster serves every test, each with topics of its own."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient

from broker.log.checkpoint import read_meta_properties
from client.admin import Admin
from client.cluster import ClusterState, load_cluster
from client.producer import Producer as MinikafkaProducer
from client.producer import ProducerError
from protocol.errors import ErrorCode
from tests.integration.clusterutil import cluster_fixture, cluster_id_in_zookeeper, status_json, zookeeper_of
from tests.integration.test_stock_kafka_clients import TIMEOUT_S, kafka_tool
from zk import znodes

cluster = cluster_fixture(brokers=3)
no_auto_creation = cluster_fixture(brokers=1, configs={"auto.create.topics.enable": "false"})
#: Kafka's cluster ids: a UUID in URL-safe base64 without padding (Uuid.toString)
CLUSTER_ID = re.compile(r"[A-Za-z0-9_-]{22}")


async def test_one_cluster_id_in_zookeeper_every_meta_properties_and_cluster_status(cluster: ClusterState) -> None:
    cluster_id = await cluster_id_in_zookeeper(cluster)
    assert CLUSTER_ID.fullmatch(cluster_id), cluster_id
    for broker in load_cluster(cluster.directory).brokers:
        meta = read_meta_properties(Path(broker.log_dir))
        assert meta is not None and meta["cluster.id"] == cluster_id and meta["broker.id"] == str(broker.id)
    assert status_json(cluster.directory)["cluster_id"] == cluster_id


async def test_confluent_kafkas_describe_cluster_and_kafkas_cluster_tool_name_the_cluster(
        cluster: ClusterState) -> None:
    cluster_id = await cluster_id_in_zookeeper(cluster)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    described = admin.describe_cluster(request_timeout=TIMEOUT_S).result(TIMEOUT_S)
    assert described.cluster_id == cluster_id
    assert sorted(node.id for node in described.nodes) == [1, 2, 3]
    assert described.controller is not None and described.controller.id in (1, 2, 3)
    said = kafka_tool("org.apache.kafka.tools.ClusterTool", "cluster-id", "--bootstrap-server",
                      cluster.bootstrap_servers)
    assert said.strip() == f"Cluster ID: {cluster_id}"
    for broker in load_cluster(cluster.directory).brokers:  # Kafka 3.9's clients open with ApiVersions v3
        assert "ApiVersions version" not in broker.server_log.read_text(errors="replace")


def test_a_producer_to_a_missing_topic_creates_it_with_the_brokers_defaults(cluster: ClusterState) -> None:
    topic = f"auto-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    delivered = []
    producer.produce(topic, value=b"first", on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
    assert producer.flush(TIMEOUT_S) == 0
    assert delivered == [(None, 0)]
    metadata = AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(topic, timeout=TIMEOUT_S)
    partitions = metadata.topics[topic].partitions
    assert len(partitions) == 1 and len(partitions[0].replicas) == 1  # num.partitions, default.replication.factor


async def test_minikafkas_producer_creates_a_missing_topic_on_first_send(cluster: ClusterState) -> None:
    topic = f"auto-{uuid.uuid4().hex[:8]}"
    producer = MinikafkaProducer(cluster.bootstrap_servers)
    try:
        metadata = await (await producer.send(topic, b"first"))
    finally:
        await producer.close()
    assert (metadata.topic, metadata.partition, metadata.offset) == (topic, 0, 0)
    async with Admin(cluster.bootstrap_servers) as admin:
        assert [p.partition for p in await admin.describe_topics([topic])] == [0]


async def test_with_auto_creation_off_a_producer_to_a_missing_topic_fails_clearly(
        no_auto_creation: ClusterState) -> None:
    topic = f"missing-{uuid.uuid4().hex[:8]}"
    producer = MinikafkaProducer(no_auto_creation.bootstrap_servers, max_block_ms=2000)
    try:
        with pytest.raises(ProducerError) as failed:
            await producer.send(topic, b"lost")
    finally:
        await producer.close()
    assert failed.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and topic in str(failed.value)
    confluent = Producer({"bootstrap.servers": no_auto_creation.bootstrap_servers, "message.timeout.ms": 3000})
    errors = []
    confluent.produce(topic, value=b"lost", on_delivery=lambda err, _msg: errors.append(err))
    confluent.flush(TIMEOUT_S)
    assert len(errors) == 1 and errors[0].code() in (KafkaError._MSG_TIMED_OUT, KafkaError.UNKNOWN_TOPIC_OR_PART)
    async with zookeeper_of(no_auto_creation) as zk:
        assert await zk.get_or_none(znodes.topic_path(topic)) is None
