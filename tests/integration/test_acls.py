"""ACLs on a real cluster with Kafka's AclAuthorizer semantics (authorizer.class.name, no ACL means no access):
a principal is refused (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED) by confluent-kafka, kafka-python
and Kafka's own tools, then allowed after `kafka-acls --add` or `minikafka acls --add`; prefixed ACLs, a deny over
an allow, `kafka-acls --list` and `minikafka acls --list` alike, and a second broker enforcing an ACL created
through the first (ZooKeeper's change notifications). Denials are in each broker's kafka-authorizer.log.

The clients here connect as User:ANONYMOUS from 127.0.0.1 (PRINCIPAL, CLIENT_HOST). The brokers reach each other
as User:ANONYMOUS too, each from its own address, which the bootstrap ACLs allow on the cluster: they are written
into ZooKeeper while the brokers are down, by Kafka's kafka-acls and by `minikafka acls` with --authorizer-properties
zookeeper.connect=..., so the brokers read the format Kafka's tool writes. With authenticated connections,
PRINCIPAL becomes a user and the brokers' principal a super user."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import kafka
import kafka.errors
import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from client.cluster import ClusterState, load_cluster, member_address
from protocol.acls import (
    AclOperation,
    AclPermissionType,
    ResourceType,
)
from protocol.apis.acls import AclEntryDescription, CreateAclsRequest, CreateAclsResponse
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.errors import ErrorCode
from tests.integration.clusterutil import cli, connect, create_topic, zookeeper_of
from tests.integration.test_stock_kafka_clients import TIMEOUT_S
from tests.kafka_broker import kafka_tool
from tests.polling import eventually, wait_for

AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
              "allow.everyone.if.no.acl.found": "false", "super.users": "User:admin"}
PRINCIPAL = "User:ANONYMOUS"
CLIENT_HOST = "127.0.0.1"
BROKERS = 2
ACL_COMMAND = "kafka.admin.AclCommand"


def write_bootstrap_acls(zookeeper: str, broker_hosts: list[str]) -> None:
    """Written into ZooKeeper before the brokers enforce ACLs (by Kafka's kafka-acls, then by `minikafka acls`):
    the brokers may do anything on the cluster from their own addresses; the test's operator, from 127.0.0.1, may
    create topics, change and read ACLs and describe every topic (not write or read them)."""
    authorizer = ("--authorizer-properties", f"zookeeper.connect={zookeeper}")
    kafka_tool(ACL_COMMAND, *authorizer, "--add", "--allow-principal", PRINCIPAL,
               *(item for host in broker_hosts for item in ("--allow-host", host)), "--operation", "All", "--cluster")
    cli("acls", *authorizer, "--add", "--allow-principal", PRINCIPAL, "--allow-host", CLIENT_HOST, "--operation",
        "Create", "--operation", "Alter", "--operation", "Describe", "--cluster")
    cli("acls", *authorizer, "--add", "--allow-principal", PRINCIPAL, "--allow-host", CLIENT_HOST, "--operation",
        "Describe", "--topic", "*")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterState]:
    directory = tmp_path_factory.mktemp("cluster")
    cli("cluster", "up", "--brokers", "1", "--dir", str(directory))  # where ZooKeeper and the brokers will be
    try:
        state = load_cluster(directory)
        _, a, b, _ = state.zookeeper.host.split(".")
        write_bootstrap_acls(state.zookeeper.connect + state.chroot,
                             [member_address((int(a), int(b)), n) for n in range(1, BROKERS + 1)])
    finally:
        cli("cluster", "down", "--dir", str(directory))
    options = [item for key, value in AUTHORIZER.items() for item in ("--config", f"{key}={value}")]
    cli("cluster", "up", "--brokers", str(BROKERS), "--dir", str(directory), *options)
    try:
        state = load_cluster(directory)
        assert state.zookeeper.host.startswith(f"127.{a}.{b}."), "the cluster moved to other addresses"
        yield state
    finally:
        cli("cluster", "down", "--dir", str(directory), check=False)


def new_topic(cluster: ClusterState, name: str | None = None) -> str:
    topic = name or f"acl-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_topic(cluster, topic, partitions=1, replication_factor=BROKERS))
    return topic


def confluent_produce(cluster: ClusterState, topic: str) -> int:
    """confluent-kafka's delivery of one record: its error code (0: delivered)."""
    return produce_with({"bootstrap.servers": cluster.bootstrap_servers}, topic)


def produce_with(settings: dict[str, str], topic: str) -> int:
    """confluent-kafka's delivery of one record with `settings`: its error code (0: delivered)."""
    producer = Producer({**settings, "message.timeout.ms": 15000})
    outcomes: list[KafkaError | None] = []
    producer.produce(topic, value=b"v", on_delivery=lambda err, _msg: outcomes.append(err))
    producer.flush(TIMEOUT_S)
    assert len(outcomes) == 1
    return outcomes[0].code() if outcomes[0] is not None else 0


def kafka_python_produce(cluster: ClusterState, topic: str) -> None:
    producer = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, retries=0)
    try:
        producer.send(topic, b"v").get(timeout=TIMEOUT_S)
    finally:
        producer.close(timeout=5)


def kafka_acls(cluster: ClusterState, *args: str) -> str:
    return kafka_tool(ACL_COMMAND, "--bootstrap-server", cluster.bootstrap_servers, *args)


def minikafka_acls(cluster: ClusterState, *args: str) -> str:
    return cli("acls", "--bootstrap-server", cluster.bootstrap_servers, *args).stdout


def write_allowed(cluster: ClusterState, topic: str) -> bool:
    return confluent_produce(cluster, topic) == 0


def group_consume(settings: dict[str, str], topic: str, group: str) -> int | bytes:
    """The first record a confluent-kafka group consumer reads, or the error it is told (-1: nothing in time)."""
    consumer = Consumer({**settings, "group.id": group, "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    try:
        consumer.subscribe([topic])
        for _ in range(int(TIMEOUT_S)):
            message = consumer.poll(1.0)
            if message is not None:
                return message.error().code() if message.error() else message.value()
        return -1
    finally:
        consumer.close()


def test_a_principal_without_acls_is_refused_then_allowed_after_kafka_acls_add(cluster: ClusterState) -> None:
    topic = new_topic(cluster)
    assert confluent_produce(cluster, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(kafka.errors.TopicAuthorizationFailedError):
        kafka_python_produce(cluster, topic)
    added = kafka_acls(cluster, "--add", "--allow-principal", PRINCIPAL, "--operation", "Write", "--topic", topic)
    assert f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)" in added
    wait_for(lambda: write_allowed(cluster, topic), f"{PRINCIPAL} allowed to write {topic}")
    kafka_python_produce(cluster, topic)
    logs = [Path(b.log_dir) / "kafka-authorizer.log" for b in cluster.brokers]
    denied = f"Principal = {PRINCIPAL} is Denied Operation = Write from host = {CLIENT_HOST} on resource = " \
             f"Topic:LITERAL:{topic} for request = Produce"
    assert any(denied in log.read_text() for log in logs if log.exists())
    assert all(denied not in b.server_log.read_text(errors="replace") for b in cluster.brokers)


def test_minikafka_acls_adds_a_prefixed_acl_for_every_topic_with_the_prefix(cluster: ClusterState) -> None:
    prefix = f"app-{uuid.uuid4().hex[:6]}-"
    first, second, other = new_topic(cluster, prefix + "a"), new_topic(cluster, prefix + "b"), new_topic(cluster)
    assert confluent_produce(cluster, first) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    added = minikafka_acls(cluster, "--add", "--allow-principal", PRINCIPAL, "--operation", "Write", "--topic",
                           prefix, "--resource-pattern-type", "prefixed")
    pattern = f"ResourcePattern(resourceType=TOPIC, name={prefix}, patternType=PREFIXED)"
    assert f"Current ACLs for resource `{pattern}`:" in added
    assert f"(principal={PRINCIPAL}, host=*, operation=WRITE, permissionType=ALLOW)" in added
    wait_for(lambda: write_allowed(cluster, first) and write_allowed(cluster, second), f"writes to {prefix}*")
    kafka_python_produce(cluster, second)
    assert confluent_produce(cluster, other) == KafkaError.TOPIC_AUTHORIZATION_FAILED

    minikafka_acls(cluster, "--add", "--deny-principal", PRINCIPAL, "--operation", "Write", "--topic", second)
    wait_for(lambda: confluent_produce(cluster, second) == KafkaError.TOPIC_AUTHORIZATION_FAILED,
             f"the deny on {second} to win over the prefixed allow")
    assert write_allowed(cluster, first)


def test_a_group_consumer_needs_read_on_its_group(cluster: ClusterState) -> None:
    topic, group = new_topic(cluster), f"group-{uuid.uuid4().hex[:8]}"
    kafka_acls(cluster, "--add", "--allow-principal", PRINCIPAL, "--operation", "Write", "--operation", "Read",
               "--topic", topic)
    wait_for(lambda: write_allowed(cluster, topic), f"writes to {topic}")

    settings = {"bootstrap.servers": cluster.bootstrap_servers}
    assert group_consume(settings, topic, group) == KafkaError.GROUP_AUTHORIZATION_FAILED
    minikafka_acls(cluster, "--add", "--allow-principal", PRINCIPAL, "--operation", "Read", "--group", group)
    assert wait_for(lambda: group_consume(settings, topic, group) == b"v", f"{group} to consume {topic}")


def acl_lines(output: str) -> set[tuple[str, str]]:
    """(resource, entry) pairs of kafka-acls' listing."""
    pairs, resource = set(), ""
    for line in output.splitlines():
        if line.startswith("Current ACLs for resource"):
            resource = line.split("`")[1]
        elif line.strip().startswith("(principal="):
            pairs.add((resource, line.strip()))
    return pairs


def test_kafka_acls_and_minikafka_acls_list_and_remove_the_same_acls(cluster: ClusterState) -> None:
    group = f"listed-{uuid.uuid4().hex[:8]}"
    kafka_acls(cluster, "--add", "--allow-principal", "User:alice", "--allow-host", "10.0.0.1", "--operation",
               "Read", "--operation", "Describe", "--group", group)
    listed = acl_lines(kafka_acls(cluster, "--list"))
    assert listed == acl_lines(minikafka_acls(cluster, "--list"))
    resource = f"ResourcePattern(resourceType=GROUP, name={group}, patternType=LITERAL)"
    assert {(resource, f"(principal=User:alice, host=10.0.0.1, operation={op}, permissionType=ALLOW)")
            for op in ("READ", "DESCRIBE")} <= listed
    assert acl_lines(minikafka_acls(cluster, "--list", "--group", group)) == acl_lines(
        kafka_acls(cluster, "--list", "--group", group))
    minikafka_acls(cluster, "--remove", "--force", "--allow-principal", "User:alice", "--allow-host", "10.0.0.1",
                   "--operation", "Read", "--group", group)
    assert acl_lines(kafka_acls(cluster, "--list", "--group", group)) == {
        (resource, "(principal=User:alice, host=10.0.0.1, operation=DESCRIBE, permissionType=ALLOW)")}
    kafka_acls(cluster, "--remove", "--force", "--group", group)
    assert acl_lines(minikafka_acls(cluster, "--list", "--group", group)) == set()


async def test_a_broker_enforces_an_acl_created_through_another(cluster: ClusterState) -> None:
    topic = await asyncio.to_thread(new_topic, cluster, f"elsewhere-{uuid.uuid4().hex[:8]}")
    first, second = cluster.brokers

    async def error_on_second() -> int:
        async with connect(second) as connection:
            answer = await connection.request(MetadataRequest(topics=[topic]))
        assert isinstance(answer, MetadataResponse)
        return answer.topics[0].error_code

    assert await error_on_second() == ErrorCode.NONE  # described by the bootstrap ACL on every topic
    async with connect(first) as connection:
        created = await connection.request(CreateAclsRequest(creations=[AclEntryDescription(
            resource_type=ResourceType.TOPIC, resource_name=topic, principal=PRINCIPAL, host=CLIENT_HOST,
            operation=AclOperation.DESCRIBE, permission_type=AclPermissionType.DENY)]))
    assert isinstance(created, CreateAclsResponse) and created.results[0].error_code == ErrorCode.NONE
    async with zookeeper_of(cluster) as zk:  # stored and announced as Kafka does
        data, _stat = await zk.get(f"/kafka-acl/Topic/{topic}")
        notifications = await zk.get_many([f"/kafka-acl-changes/{name}"
                                           for name in await zk.get_children("/kafka-acl-changes")])
    assert json.loads(data) == {"version": 1, "acls": [{"principal": PRINCIPAL, "permissionType": "Deny",
                                                        "operation": "Describe", "host": CLIENT_HOST}]}
    assert f"TOPIC:{topic}".encode() in [got[0] for got in notifications if got is not None]

    async def refused_on_second() -> bool:
        return await error_on_second() == ErrorCode.TOPIC_AUTHORIZATION_FAILED

    await eventually(refused_on_second, f"broker {second.id} to refuse describing {topic}")
