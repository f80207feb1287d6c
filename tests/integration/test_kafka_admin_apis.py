"""Kafka's admin tools and confluent-kafka's AdminClient against a real cluster (`minikafka cluster up`, 3 brokers),
each result checked on the cluster: the cluster id (ZooKeeper's /cluster/id, every broker's meta.properties,
Metadata, DescribeCluster, `cluster status`, `kafka-cluster cluster-id`), ApiVersions v3 from Kafka's Java clients,
elections asked for by kafka-leader-election and confluent-kafka's elect_leaders, partitions added by
kafka-topics --alter and confluent-kafka's create_partitions as by `topic alter`, records deleted by
kafka-delete-records, `delete-records` and confluent-kafka's delete_records, topic configs altered by kafka-configs
and confluent-kafka's incremental_alter_configs and alter_configs, kafka-log-dirs' and `log-dirs`' replicas and
sizes, partitions moved by kafka-reassign-partitions and `reassign-partitions --bootstrap-server` and a move
cancelled (null replicas), the ACL apis answering SECURITY_DISABLED without an authorizer, and topics created on
first use by a producer (or not, with auto.create.topics.enable=false, on a 1-broker cluster of its own). One cluster
serves every test, each with topics of its own."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_END, ElectionType, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    OffsetSpec,
)

from bench.kafka_brokers import KAFKA_LIBS
from broker.log.checkpoint import read_meta_properties
from client.admin import Admin, Reassignment
from client.cluster import ClusterState, load_cluster, start_broker
from client.producer import Producer as MinikafkaProducer
from protocol.errors import ErrorCode
from protocol.records import iter_batches
from tests.integration.clusterutil import (
    cli,
    cluster_fixture,
    cluster_id_in_zookeeper,
    controller_of,
    create_topic,
    healthy_fixture,
    paused,
    status_json,
    stop_broker,
    topic_znode,
    zookeeper_of,
)
from tests.integration.test_stock_kafka_clients import TIMEOUT_S, kafka_tool
from tests.polling import eventually, wait_for
from zk import znodes
from zk.topic_config import BROKER_ENTITY, decode_config_change, read_entity_config, read_topic_config

cluster = cluster_fixture(brokers=3)
healthy = healthy_fixture()
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
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})

    def partitions() -> dict | None:  # a broker other than the leader learns of the topic by UpdateMetadata
        described = admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic]
        return described.partitions if described.error is None else None

    found = wait_for(partitions, f"the brokers' metadata to have {topic}")
    assert len(found) == 1 and len(found[0].replicas) == 1  # num.partitions, default.replication.factor


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


async def partitions_of(cluster: ClusterState, topic: str) -> dict[int, list[int]]:
    """The topic's assignment in ZooKeeper: partition -> replicas."""
    assignment = await topic_znode(cluster, topic)
    assert assignment is not None, topic
    return assignment.partitions


async def test_kafka_topics_and_confluent_kafka_add_partitions_where_minikafka_would(cluster: ClusterState) -> None:
    ours, java, confluent = (f"{name}-{uuid.uuid4().hex[:8]}" for name in ("ours", "java", "confluent"))
    for topic in (ours, java, confluent):
        await create_topic(cluster, topic, partitions=1, replication_factor=2)
    cli("topic", "alter", ours, "--partitions", "4", "--dir", str(cluster.directory))
    kafka_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", cluster.bootstrap_servers, "--alter",
               "--topic", java, "--partitions", "4")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_partitions([NewPartitions(confluent, 4)], request_timeout=TIMEOUT_S)[confluent].result(TIMEOUT_S)
    expected = await partitions_of(cluster, ours)
    assert len(expected) == 4
    assert await partitions_of(cluster, java) == expected
    assert await partitions_of(cluster, confluent) == expected
    with pytest.raises(KafkaException) as fewer:  # partitions are never removed
        admin.create_partitions([NewPartitions(confluent, 2)], request_timeout=TIMEOUT_S)[confluent].result(TIMEOUT_S)
    assert fewer.value.args[0].code() == KafkaError.INVALID_PARTITIONS
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for partition in range(4):  # every new partition has a leader that takes records
        producer.produce(java, value=b"v", partition=partition)
    assert producer.flush(TIMEOUT_S) == 0
    kafka_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", cluster.bootstrap_servers, "--delete",
               "--topic", java)  # DeleteTopics v6

    async def deleted() -> bool:
        return await topic_znode(cluster, java) is None

    await eventually(deleted, f"{java} deleted")


async def test_kafka_leader_election_and_confluent_kafka_elect_leaders_reach_the_controller(
        cluster: ClusterState) -> None:
    topic = f"elect-{uuid.uuid4().hex[:8]}"
    await create_topic(cluster, topic, partitions=2, replication_factor=3)
    preferred = {p: replicas[0] for p, replicas in (await partitions_of(cluster, topic)).items()}
    said = kafka_tool("org.apache.kafka.tools.LeaderElectionCommand", "--bootstrap-server",
                      cluster.bootstrap_servers, "--election-type", "PREFERRED", "--topic", topic, "--partition", "0")
    assert f"Valid replica already elected for partitions {topic}-0" in said, said
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    # (confluent-kafka 2.16's elect_leaders fails on its own with a request_timeout: SystemError)
    results = admin.elect_leaders(ElectionType.UNCLEAN, [TopicPartition(topic, 0), TopicPartition(topic, 1)]
                                  ).result(TIMEOUT_S)
    assert {tp.partition: error.code() for tp, error in results.items()} == {
        0: KafkaError.ELECTION_NOT_NEEDED, 1: KafkaError.ELECTION_NOT_NEEDED}  # every partition has a live leader
    missing = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 7)]).result(TIMEOUT_S)
    assert [error.code() for error in missing.values()] == [KafkaError.UNKNOWN_TOPIC_OR_PART]
    leaders = admin.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions
    assert {p: leaders[p].leader for p in leaders} == preferred


def offsets_file(directory: Path, name: str, topic: str, offsets: dict[int, int]) -> str:
    """An --offset-json-file of kafka-delete-records."""
    path = directory / name
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "offset": o} for p, o in offsets.items()]}))
    return str(path)


def test_kafka_delete_records_minikafkas_and_confluent_kafka_move_the_log_start_offset(cluster: ClusterState,
                                                                                     tmp_path: Path) -> None:
    topic = f"deleted-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_topic(cluster, topic, partitions=3, replication_factor=3))
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(30):
        producer.produce(topic, value=b"v%d" % i, partition=i % 3)
    assert producer.flush(TIMEOUT_S) == 0
    said = kafka_tool("org.apache.kafka.tools.DeleteRecordsCommand", "--bootstrap-server", cluster.bootstrap_servers,
                      "--offset-json-file", offsets_file(tmp_path, "java.json", topic, {0: 4}))
    assert f"partition: {topic}-0\tlow_watermark: 4" in said, said
    ours = ("delete-records", "--bootstrap-server", cluster.bootstrap_servers, "--offset-json-file")
    said = cli(*ours, offsets_file(tmp_path, "ours.json", topic, {2: 4})).stdout
    assert f"partition: {topic}-2\tlow_watermark: 4" in said, said
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    [deleted] = admin.delete_records([TopicPartition(topic, 1, OFFSET_END)]).values()  # up to the high watermark
    assert deleted.result(TIMEOUT_S).low_watermark == 10
    earliest = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.earliest() for p in (0, 1, 2)})
    assert {tp.partition: future.result(TIMEOUT_S).offset for tp, future in earliest.items()} == {0: 4, 1: 10, 2: 4}
    [refused] = admin.delete_records([TopicPartition(topic, 0, 99)]).values()
    with pytest.raises(KafkaException) as beyond:
        refused.result(TIMEOUT_S)
    assert beyond.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE
    beyond_ours = cli(*ours, offsets_file(tmp_path, "beyond.json", topic, {2: 99}), check=False)
    assert beyond_ours.returncode == 1 and f"partition: {topic}-2\terror: OFFSET_OUT_OF_RANGE" in beyond_ours.stdout


def test_kafka_get_offsets_finds_the_largest_timestamps_first_record_and_the_log_start(cluster: ClusterState) -> None:
    topic = f"offsets-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_topic(cluster, topic, partitions=1, replication_factor=2))
    now = int(time.time() * 1000)
    stamps = [now, now + 40, now + 20, now + 40, now + 10]  # the largest first at offset 1
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0})
    for i, stamp in enumerate(stamps):
        producer.produce(topic, value=b"v%d" % i, partition=0, timestamp=stamp)
        assert producer.flush(TIMEOUT_S) == 0  # a batch each

    def get_offsets(when: int) -> str:
        return kafka_tool("org.apache.kafka.tools.GetOffsetShell", "--bootstrap-server", cluster.bootstrap_servers,
                          "--topic", topic, "--time", str(when)).strip()

    assert get_offsets(-3) == f"{topic}:0:1"  # ListOffsets v7+: the max timestamp (KIP-734)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    [deleted] = admin.delete_records([TopicPartition(topic, 0, 2)]).values()
    assert deleted.result(TIMEOUT_S).low_watermark == 2
    assert get_offsets(-4) == f"{topic}:0:2"  # v8: the local log start, all of the log here
    assert get_offsets(-3) == f"{topic}:0:3"  # the first record with it that is left
    [latest] = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.max_timestamp()}).values()
    assert (latest.result(TIMEOUT_S).offset, latest.result(TIMEOUT_S).timestamp) == (3, now + 40)


def test_kafka_transactions_describe_producers_shows_each_idempotent_producers_last_batch(
        cluster: ClusterState) -> None:
    topic = f"producers-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_topic(cluster, topic, partitions=1, replication_factor=2))
    for sends in (3, 5):  # two producers, each with a producer id of its own
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True})
        for i in range(sends):
            producer.produce(topic, value=b"v%d" % i, partition=0)
            assert producer.flush(TIMEOUT_S) == 0  # a batch each
    leader = next(b for b in cluster.brokers if (Path(b.log_dir) / f"{topic}-0").exists())
    segment = Path(leader.log_dir) / f"{topic}-0" / "00000000000000000000.log"
    last = {}  # producer id -> the header of its last batch, in the log
    for _position, header in iter_batches(segment.read_bytes()):
        last[header.producer_id] = header
    said = kafka_tool("org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", cluster.bootstrap_servers,
                      "describe-producers", "--topic", topic, "--partition", "0")
    lines = [line.split() for line in said.strip().splitlines()]
    assert lines[0] == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                        "CurrentTransactionStartOffset"], said
    assert sorted(lines[1:]) == sorted(
        [str(producer_id), str(h.producer_epoch), "-1", str(h.base_sequence + h.last_offset_delta),
         str(h.max_timestamp), "None"] for producer_id, h in last.items()), said
    assert sorted(h.base_sequence + h.last_offset_delta for h in last.values()) == [2, 4]


REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def plan_file(directory: Path, topic: str, replicas: list[int]) -> str:
    """A --reassignment-json-file moving partition 0 of `topic` to `replicas`."""
    path = directory / f"{topic}.json"
    path.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]}))
    return str(path)


async def test_kafka_reassign_partitions_and_minikafkas_over_bootstrap_server_move_and_cancel_through_the_controller(
        cluster: ClusterState, tmp_path: Path) -> None:
    java, ours, cancelled = (f"{name}-{uuid.uuid4().hex[:8]}" for name in ("java", "ours", "cancelled"))
    controller, _ = await controller_of(cluster)
    spare = max({1, 2, 3} - {controller})  # held by no replica of `cancelled`, and paused while it moves there
    kept = sorted({1, 2, 3} - {spare})
    for topic in (java, ours):
        await create_topic(cluster, topic, assignments={0: kept}, in_sync=True)
    await create_topic(cluster, cancelled, assignments={0: kept}, in_sync=True)
    target = [spare, kept[0]]
    tool = (REASSIGN, "--bootstrap-server", cluster.bootstrap_servers, "--reassignment-json-file")
    said = kafka_tool(*tool, plan_file(tmp_path, java, target), "--execute", "--throttle", "50000000")
    assert f"Successfully started partition reassignment for {java}-0" in said, said
    throttled = await read_topic_config_of(cluster, java)  # the moving replicas, cleared by --verify when done
    assert set(throttled) == {"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}

    def java_verified() -> str | None:
        out = kafka_tool(*tool, plan_file(tmp_path, java, target), "--verify")
        return out if f"Reassignment of partition {java}-0 is completed." in out else None

    await eventually(java_verified, f"kafka-reassign-partitions --verify to find {java}-0 completed")
    assert await read_topic_config_of(cluster, java) == {}
    for broker in (1, 2, 3):
        assert (await broker_configs_in_zookeeper(cluster, str(broker)))[0] == {}
    ours_plan = ("--bootstrap-server", cluster.bootstrap_servers, "--reassignment-json-file",
                 plan_file(tmp_path, ours, target))
    cli("reassign-partitions", "--execute", *ours_plan)

    def ours_verified() -> bool:  # (the answering broker's metadata may lag the controller's a moment)
        said = cli("reassign-partitions", "--verify", "--json", *ours_plan, check=False).stdout
        return json.loads(said) == {f"{ours}-0": "complete"}

    await eventually(ours_verified, f"reassign-partitions --verify to find {ours}-0 complete")
    for topic in (java, ours):
        znode = await topic_znode(cluster, topic)
        assert znode is not None and (znode.partitions, znode.adding, znode.removing) == ({0: target}, {}, {})
    moved = (cancelled, 0)
    # the new replica cannot catch up while its broker is paused: the reassignment stays in progress
    async with paused(cluster, spare), Admin(cluster.broker(controller).address) as admin:
        assert await admin.alter_partition_reassignments({moved: target}) == {moved: (ErrorCode.NONE, "")}
        assert await admin.list_partition_reassignments([moved]) == {
            moved: Reassignment(replicas=[spare, *kept], adding=[spare], removing=[kept[1]])}
        moving = await topic_znode(cluster, cancelled)
        assert moving is not None and (moving.adding, moving.removing) == ({0: [spare]}, {0: [kept[1]]})
        assert await admin.alter_partition_reassignments({moved: None}) == {moved: (ErrorCode.NONE, "")}
        assert await admin.list_partition_reassignments([moved]) == {}
        [(again, _)] = (await admin.alter_partition_reassignments({moved: None})).values()
        assert again == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    znode = await topic_znode(cluster, cancelled)
    assert znode is not None and (znode.partitions, znode.adding, znode.removing) == ({0: kept}, {}, {})


async def test_kafka_reassign_partitions_cancels_a_move_to_a_stopped_broker_and_clears_the_brokers_throttles(
        healthy: ClusterState, tmp_path: Path) -> None:
    cluster = healthy
    topic = f"cancel-{uuid.uuid4().hex[:8]}"
    controller, _ = await controller_of(cluster)
    spare = max({1, 2, 3} - {controller})  # stopped: the new replica cannot catch up, the move stays in progress
    kept = sorted({1, 2, 3} - {spare})
    await create_topic(cluster, topic, assignments={0: kept}, in_sync=True)
    throttles = "leader.replication.throttled.rate=1000000,follower.replication.throttled.rate=1000000"
    for broker in (1, 2, 3):  # as kafka-reassign-partitions --throttle leaves them
        kafka_tool("kafka.admin.ConfigCommand", "--bootstrap-server", cluster.bootstrap_servers, "--alter",
                   "--entity-type", "brokers", "--entity-name", str(broker), "--add-config", throttles)
    await stop_broker(cluster, spare)
    plan = plan_file(tmp_path, topic, [spare, kept[0]])
    moved = (topic, 0)
    async with zookeeper_of(cluster) as zk:  # as Kafka's tools before 2.5 started one (minikafka's refuses it)
        await zk.create(znodes.REASSIGN_PARTITIONS_PATH, znodes.encode_reassignment({moved: [spare, kept[0]]}))
    async with Admin(cluster.broker(controller).address) as admin:

        async def in_progress() -> bool:
            return await admin.list_partition_reassignments([moved]) == {
                moved: Reassignment(replicas=[spare, *kept], adding=[spare], removing=[kept[1]])}

        await eventually(in_progress, f"the move of {topic}-0 to stopped broker {spare} in progress")
    # the tool cancels, then clears the throttles of the live brokers and of the target's, which it waits for
    cancel = asyncio.create_task(asyncio.to_thread(
        kafka_tool, REASSIGN, "--bootstrap-server", cluster.bootstrap_servers, "--reassignment-json-file", plan,
        "--cancel"))

    async def cancelled() -> bool:
        znode = await topic_znode(cluster, topic)
        return znode is not None and (znode.partitions, znode.adding, znode.removing) == ({0: kept}, {}, {})

    await eventually(cancelled, f"the move of {topic}-0 cancelled, back to {kept}")
    await start_broker(cluster.directory, spare)
    said = await cancel
    assert f"Successfully cancelled partition reassignment for: {topic}-0" in said, said
    for broker in (1, 2, 3):
        assert (await broker_configs_in_zookeeper(cluster, str(broker)))[0] == {}


async def test_kafka_configs_and_confluent_kafka_alter_topic_configs_in_zookeeper(cluster: ClusterState) -> None:
    topic = f"configs-{uuid.uuid4().hex[:8]}"
    await create_topic(cluster, topic, partitions=1, replication_factor=1)
    kafka_tool("kafka.admin.ConfigCommand", "--bootstrap-server", cluster.bootstrap_servers, "--alter",
               "--entity-type", "topics", "--entity-name", topic,
               "--add-config", "retention.ms=60000,min.insync.replicas=1")
    assert await read_topic_config_of(cluster, topic) == {"retention.ms": "60000", "min.insync.replicas": "1"}
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    resource = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ConfigEntry("segment.bytes", "1048576", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(TIMEOUT_S)
    assert await read_topic_config_of(cluster, topic) == {"min.insync.replicas": "1", "segment.bytes": "1048576"}
    replaced = ConfigResource("topic", topic, set_config={"retention.bytes": "1000000"})
    with pytest.warns(DeprecationWarning):  # confluent-kafka's deprecation of AlterConfigs
        admin.alter_configs([replaced])[replaced].result(TIMEOUT_S)  # which keeps only the configs named
    assert await read_topic_config_of(cluster, topic) == {"retention.bytes": "1000000"}

    async def described() -> bool:  # every broker reads the change from its notification
        [configs] = admin.describe_configs([ConfigResource("topic", topic)]).values()
        return configs.result(TIMEOUT_S)["retention.bytes"].value == "1000000"

    await eventually(described, "the new override in DescribeConfigs")
    bad = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as refused:
        admin.incremental_alter_configs([bad])[bad].result(TIMEOUT_S)
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert await read_topic_config_of(cluster, topic) == {"retention.bytes": "1000000"}


async def read_topic_config_of(cluster: ClusterState, topic: str) -> dict[str, str]:
    async with zookeeper_of(cluster) as zk:
        return await read_topic_config(zk, topic)


async def broker_configs_in_zookeeper(cluster: ClusterState, entity: str) -> tuple[dict[str, str], set[str]]:
    """/config/brokers/<entity> and the entities named by the /config/changes notifications."""
    async with zookeeper_of(cluster) as zk:
        changes = await zk.get_many([f"/config/changes/{name}" for name in await zk.get_children("/config/changes")])
        return (await read_entity_config(zk, BROKER_ENTITY, entity),
                {"/".join(decode_config_change(got[0])) for got in changes if got is not None})


async def test_kafka_configs_alter_brokers_dynamic_configs_which_the_broker_applies_to_its_logs(
        cluster: ClusterState) -> None:
    topic = f"dynamic-{uuid.uuid4().hex[:8]}"
    broker = 2
    await create_topic(cluster, topic, assignments={0: [broker]}, in_sync=True)
    configs = ("kafka.admin.ConfigCommand", "--bootstrap-server", cluster.bootstrap_servers, "--entity-type",
               "brokers")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    try:
        kafka_tool(*configs, "--entity-name", str(broker), "--alter", "--add-config", "log.segment.bytes=2000")
        kafka_tool(*configs, "--entity-default", "--alter", "--add-config",
                   "log.cleaner.delete.retention.ms=1000,follower.replication.throttled.rate=1000000")
        assert (await broker_configs_in_zookeeper(cluster, str(broker)))[0] == {"log.segment.bytes": "2000"}
        default, changes = await broker_configs_in_zookeeper(cluster, "<default>")
        assert default == {"log.cleaner.delete.retention.ms": "1000", "follower.replication.throttled.rate": "1000000"}
        assert {f"brokers/{broker}", "brokers/<default>"} <= changes
        said = kafka_tool(*configs, "--entity-name", str(broker), "--describe")
        assert "log.segment.bytes=2000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.segment.bytes=2000" in said
        said = kafka_tool(*configs, "--entity-default", "--describe")
        assert "DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.delete.retention.ms=1000" in said, said
        [described] = admin.describe_configs([ConfigResource("broker", str(broker))]).values()
        entry = described.result(TIMEOUT_S)["log.segment.bytes"]
        assert (entry.value, entry.source, entry.is_read_only) == ("2000", ConfigSource.DYNAMIC_BROKER_CONFIG.value,
                                                                   False)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0})
        for i in range(20):  # a batch each, of about 300 bytes: the broker's log rolls by its dynamic segment size
            producer.produce(topic, value=b"v" * 200 + b"%d" % i, partition=0)
            assert producer.flush(TIMEOUT_S) == 0
        directory = Path(cluster.broker(broker).log_dir) / f"{topic}-0"
        assert len(list(directory.glob("*.log"))) >= 3
        refused = ConfigResource("broker", str(broker), incremental_configs=[
            ConfigEntry("broker.id", "7", incremental_operation=AlterConfigOpType.SET)])
        with pytest.raises(KafkaException) as read_only:
            admin.incremental_alter_configs([refused])[refused].result(TIMEOUT_S)
        assert read_only.value.args[0].code() == KafkaError.INVALID_CONFIG
    finally:
        kafka_tool(*configs, "--entity-name", str(broker), "--alter", "--delete-config", "log.segment.bytes")
        kafka_tool(*configs, "--entity-default", "--alter", "--delete-config",
                   "log.cleaner.delete.retention.ms,follower.replication.throttled.rate")
    assert (await broker_configs_in_zookeeper(cluster, str(broker)))[0] == {}
    assert (await broker_configs_in_zookeeper(cluster, "<default>"))[0] == {}


async def test_incremental_alter_configs_appends_to_and_subtracts_from_a_list_config(cluster: ClusterState) -> None:
    topic = f"lists-{uuid.uuid4().hex[:8]}"
    await create_topic(cluster, topic, partitions=1, replication_factor=1)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})

    def alter(operation: AlterConfigOpType, name: str, value: str) -> None:
        resource = ConfigResource("topic", topic, incremental_configs=[
            ConfigEntry(name, value, incremental_operation=operation)])
        admin.incremental_alter_configs([resource])[resource].result(TIMEOUT_S)

    alter(AlterConfigOpType.APPEND, "cleanup.policy", "compact")  # to Kafka's default, delete
    assert await read_topic_config_of(cluster, topic) == {"cleanup.policy": "delete,compact"}
    alter(AlterConfigOpType.SUBTRACT, "cleanup.policy", "delete")
    assert await read_topic_config_of(cluster, topic) == {"cleanup.policy": "compact"}
    alter(AlterConfigOpType.APPEND, "leader.replication.throttled.replicas", "0:1,0:2")
    alter(AlterConfigOpType.SUBTRACT, "leader.replication.throttled.replicas", "0:1")
    assert await read_topic_config_of(cluster, topic) == {"cleanup.policy": "compact",
                                                          "leader.replication.throttled.replicas": "0:2"}
    with pytest.raises(KafkaException) as no_list:
        alter(AlterConfigOpType.APPEND, "retention.ms", "1")
    assert no_list.value.args[0].code() == KafkaError.INVALID_REQUEST


async def test_kafka_log_dirs_and_minikafkas_describe_every_replica_with_its_size_on_disk(
        cluster: ClusterState) -> None:
    topic = f"dirs-{uuid.uuid4().hex[:8]}"
    await create_topic(cluster, topic, partitions=1, replication_factor=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(10):
        producer.produce(topic, value=b"v%d" % i, partition=0)
    assert producer.flush(TIMEOUT_S) == 0
    brokers = load_cluster(cluster.directory).brokers

    async def caught_up() -> bool:  # followers have every record (acks=all waited for the ISR, not for their files)
        sizes = {(Path(b.log_dir) / f"{topic}-0" / "00000000000000000000.log").stat().st_size for b in brokers}
        return len(sizes) == 1

    await eventually(caught_up, "every replica's segment to hold the records")
    said = kafka_tool("org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server", cluster.bootstrap_servers,
                      "--describe", "--topic-list", topic)
    described = json.loads(next(line for line in said.splitlines() if line.startswith("{")))
    ours = json.loads(cli("log-dirs", "--describe", "--topic-list", topic, "--bootstrap-server",
                          cluster.bootstrap_servers).stdout)
    assert sorted(ours["brokers"], key=lambda b: b["broker"]) == sorted(described["brokers"],
                                                                        key=lambda b: b["broker"])
    assert sorted(b["broker"] for b in described["brokers"]) == [1, 2, 3]
    for entry in described["brokers"]:
        broker = next(b for b in brokers if b.id == entry["broker"])
        [log_dir] = entry["logDirs"]
        assert log_dir["logDir"] == str(Path(broker.log_dir).resolve()) and log_dir["error"] is None
        segment = Path(broker.log_dir) / f"{topic}-0" / "00000000000000000000.log"
        assert log_dir["partitions"] == [{"partition": f"{topic}-0", "size": segment.stat().st_size,
                                          "offsetLag": 0, "isFuture": False}]


def test_acls_without_an_authorizer_answer_security_disabled(cluster: ClusterState) -> None:
    listed = subprocess.run(["java", "-Xmx256m", "-cp", f"{KAFKA_LIBS}/*", "kafka.admin.AclCommand",
                             "--bootstrap-server", cluster.bootstrap_servers, "--list"],
                            capture_output=True, text=True, timeout=TIMEOUT_S * 2)
    assert listed.returncode != 0 and "SecurityDisabledException: No Authorizer is configured" in listed.stdout
    ours = cli("acls", "--list", "--bootstrap-server", cluster.bootstrap_servers, check=False)
    assert ours.returncode != 0 and "SECURITY_DISABLED" in ours.stderr
