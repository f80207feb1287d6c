"""ACLs against SCRAM users on a `cluster up --security sasl_plaintext` cluster with the authorizer on and the brokers
replicating over the SASL listener (they log in as the admin, a super user): a user without ACLs is refused by
confluent-kafka, kafka-python, kcat, aiokafka and Kafka's console tools, then allowed after Kafka's `kafka-acls --add
--command-config client.properties`; a group consumer needs READ on its group, granted by a prefixed ACL of
`minikafka acls`; a deny wins over an allow; the admin needs no ACL. Denials name the user in the authorizer log,
never its password."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import aiokafka
import aiokafka.errors
import kafka
import kafka.errors
import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic

from broker.config import parse_properties
from client.cluster import ClusterState
from client.cluster_security import CLIENT_PROPERTIES, LIBRDKAFKA_PROPERTIES
from tests.integration.clusterutil import cli, cluster_fixture
from tests.integration.test_acls import group_consume, produce_with
from tests.integration.test_stock_kafka_clients import KCAT
from tests.kafka_broker import kafka_tool, run_kafka_tool
from tests.polling import wait_for

USER, PASSWORD = "alice", "alice-scram-secret"
TIMEOUT_S = 30.0

cluster = cluster_fixture(brokers=1, security="sasl_plaintext", configs={
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "inter.broker.listener.name": "SASL_PLAINTEXT"})


@pytest.fixture(scope="module")
def alice(cluster: ClusterState) -> dict[str, str]:
    """librdkafka's settings for a SCRAM-SHA-512 user the admin added with `minikafka users`."""
    cli("users", "--add", USER, "--password", PASSWORD, "--dir", str(cluster.directory))
    return {"bootstrap.servers": cluster.kafka_bootstrap_servers, "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": USER, "sasl.password": PASSWORD}


def admin(cluster: ClusterState) -> dict[str, str]:
    return {"bootstrap.servers": cluster.kafka_bootstrap_servers,
            **parse_properties((cluster.directory / LIBRDKAFKA_PROPERTIES).read_text())}


def new_topic(cluster: ClusterState, prefix: str = "acl") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    client = AdminClient(admin(cluster))  # kept until the answer: its handle must outlive the future
    client.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=TIMEOUT_S)
    return name


def kafka_python_produce(cluster: ClusterState, topic: str) -> None:
    producer = kafka.KafkaProducer(bootstrap_servers=cluster.kafka_bootstrap_servers, retries=0,
                                   security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                                   sasl_plain_username=USER, sasl_plain_password=PASSWORD)
    try:
        producer.send(topic, b"k").get(timeout=TIMEOUT_S)
    finally:
        producer.close(timeout=5)


def kafka_acls(cluster: ClusterState, *args: str) -> str:
    """Kafka's kafka-acls as the admin, with the cluster's client.properties."""
    return kafka_tool("kafka.admin.AclCommand", "--bootstrap-server", cluster.kafka_bootstrap_servers,
                      "--command-config", str(cluster.directory / CLIENT_PROPERTIES), *args)


def authorizer_log(cluster: ClusterState) -> str:
    logs = [Path(b.log_dir) / "kafka-authorizer.log" for b in cluster.brokers]
    return "".join(log.read_text() for log in logs if log.exists())


def test_a_user_without_acls_is_refused_then_allowed_after_kafka_acls_add(cluster, alice) -> None:
    topic = new_topic(cluster)
    assert produce_with(alice, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(kafka.errors.TopicAuthorizationFailedError):
        kafka_python_produce(cluster, topic)
    added = kafka_acls(cluster, "--add", "--allow-principal", f"User:{USER}", "--operation", "Write", "--topic", topic)
    assert f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)" in added
    wait_for(lambda: produce_with(alice, topic) == 0, f"{USER} allowed to write {topic}")
    kafka_python_produce(cluster, topic)
    log = authorizer_log(cluster)
    assert f"Principal = User:{USER} is Denied Operation = Describe from host = 127.0.0.1 on resource = " \
           f"Topic:LITERAL:{topic} for request = Metadata" in log  # the clients ask for the topic's leader first
    assert PASSWORD not in log
    assert all(PASSWORD not in b.server_log.read_text(errors="replace") for b in cluster.brokers)


def test_a_group_consumer_is_allowed_by_a_prefixed_group_acl(cluster, alice) -> None:
    topic, prefix = new_topic(cluster), f"app-{uuid.uuid4().hex[:6]}-"
    assert produce_with(admin(cluster), topic) == 0
    kafka_acls(cluster, "--add", "--allow-principal", f"User:{USER}", "--operation", "Read", "--topic", topic)
    assert group_consume(alice, topic, prefix + "a") == KafkaError.GROUP_AUTHORIZATION_FAILED
    cli("acls", "--add", "--allow-principal", f"User:{USER}", "--operation", "Read", "--group", prefix,
        "--resource-pattern-type", "prefixed", "--dir", str(cluster.directory))
    assert wait_for(lambda: group_consume(alice, topic, prefix + "a") == b"v", f"{USER} to consume in {prefix}a")
    assert group_consume(alice, topic, f"other-{prefix}") == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_a_deny_wins_over_an_allow(cluster, alice) -> None:
    topic = new_topic(cluster)
    cli("acls", "--add", "--allow-principal", f"User:{USER}", "--operation", "Write", "--topic", topic,
        "--dir", str(cluster.directory))
    wait_for(lambda: produce_with(alice, topic) == 0, f"{USER} allowed to write {topic}")
    cli("acls", "--add", "--deny-principal", f"User:{USER}", "--operation", "Write", "--topic", topic,
        "--dir", str(cluster.directory))
    wait_for(lambda: produce_with(alice, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED, f"the deny on {topic} to win")


def test_the_admin_is_a_super_user_allowed_without_acls(cluster) -> None:
    topic = new_topic(cluster, "super")
    assert produce_with(admin(cluster), topic) == 0
    assert group_consume(admin(cluster), topic, f"group-{topic}") == b"v"
    assert "Principal = User:admin is Denied" not in authorizer_log(cluster)
    assert f"Topic:LITERAL:{topic}" not in kafka_acls(cluster, "--list")  # no ACL names it


def kcat_produce_as_alice(cluster: ClusterState, topic: str) -> subprocess.CompletedProcess[str]:
    """kcat (Debian's, on librdkafka 2.0) producing one record as the SCRAM user."""
    if KCAT is None:
        pytest.fail("kcat is not installed: run make setup (Debian's kcat package)")
    settings = ["-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanisms=SCRAM-SHA-512",
                "-X", f"sasl.username={USER}", "-X", f"sasl.password={PASSWORD}"]
    return subprocess.run([KCAT, "-b", cluster.kafka_bootstrap_servers, *settings, "-P", "-t", topic],
                          input="k\n", capture_output=True, text=True, timeout=TIMEOUT_S)


async def aiokafka_produce_as_alice(cluster: ClusterState, topic: str) -> None:
    async with aiokafka.AIOKafkaProducer(bootstrap_servers=cluster.kafka_bootstrap_servers,
                                         security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                                         sasl_plain_username=USER, sasl_plain_password=PASSWORD) as producer:
        await producer.send_and_wait(topic, b"a")


async def test_kcat_and_aiokafka_as_the_user_are_refused_then_allowed(cluster, alice) -> None:
    topic = new_topic(cluster)
    refused = kcat_produce_as_alice(cluster, topic)
    assert "Topic authorization failed" in refused.stderr, refused.stderr
    with pytest.raises(aiokafka.errors.TopicAuthorizationFailedError):
        await aiokafka_produce_as_alice(cluster, topic)
    kafka_acls(cluster, "--add", "--allow-principal", f"User:{USER}", "--operation", "Write", "--topic", topic)
    wait_for(lambda: produce_with(alice, topic) == 0, f"{USER} allowed to write {topic}")
    allowed = kcat_produce_as_alice(cluster, topic)
    assert allowed.returncode == 0 and "failed" not in allowed.stderr, allowed.stderr
    await aiokafka_produce_as_alice(cluster, topic)
    assert PASSWORD not in authorizer_log(cluster)


def test_kafkas_console_tools_as_the_user_are_refused_then_allowed(cluster, alice, tmp_path) -> None:
    topic = new_topic(cluster)
    settings = tmp_path / "alice.properties"
    settings.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                        f'username="{USER}" password="{PASSWORD}";\n')
    where = ("--bootstrap-server", cluster.kafka_bootstrap_servers, "--topic", topic)
    run_kafka_tool("kafka.tools.ConsoleProducer", *where, "--producer.config", str(settings), stdin="j1\n")
    assert f"Principal = User:{USER} is Denied Operation = Describe from host = 127.0.0.1 on resource = " \
           f"Topic:LITERAL:{topic}" in authorizer_log(cluster)
    for operation in ("Write", "Read"):
        kafka_acls(cluster, "--add", "--allow-principal", f"User:{USER}", "--operation", operation, "--topic", topic)
    wait_for(lambda: produce_with(alice, topic) == 0, f"{USER} allowed to write {topic}")
    kafka_tool("kafka.tools.ConsoleProducer", *where, "--producer.config", str(settings), stdin="j2\n")
    read = kafka_tool("org.apache.kafka.tools.consumer.ConsoleConsumer", *where, "--consumer.config", str(settings),
                      "--partition", "0", "--offset", "earliest", "--max-messages", "2")
    assert read.split() == ["v", "j2"]  # j1 was refused
