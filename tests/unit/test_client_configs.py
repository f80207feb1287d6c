"""Kafka's producer and consumer config names on the command line: mapped to the clients' arguments, unknown names
warned about as Kafka's clients do, bad values refused with a usage error (exit status 2) before any connection."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from broker.config import ConfigError
from client.cli import main
from client.client_configs import consumer_config, producer_config, read_config_file
from protocol.sasl import SaslCredentials


def test_producer_configs_map_to_the_producer_arguments():
    config = producer_config({"acks": "1", "linger.ms": "0", "batch.size": "32768", "delivery.timeout.ms": "5000",
                              "retries": "3", "request.timeout.ms": "1000", "retry.backoff.ms": "50",
                              "max.in.flight.requests.per.connection": "1", "client.id": "me",
                              "compression.type": "none", "enable.idempotence": "false"})
    assert config.kwargs == {"acks": "1", "linger_ms": 0, "batch_size": 32768, "delivery_timeout_ms": 5000,
                             "retries": 3, "request_timeout_ms": 1000, "retry_backoff_ms": 50, "max_in_flight": 1,
                             "client_id": "me", "compression_type": "none", "enable_idempotence": False}
    assert config.warnings == ()


def test_consumer_configs_map_to_the_consumer_arguments():
    config = consumer_config({"fetch.min.bytes": "10", "fetch.max.wait.ms": "100", "max.partition.fetch.bytes": "99",
                              "auto.offset.reset": "earliest", "value.deserializer": "x", "foo.bar": "1"})
    assert config.kwargs == {"fetch_min_bytes": 10, "fetch_max_wait_ms": 100, "max_partition_fetch_bytes": 99,
                             "auto_offset_reset": "earliest"}
    assert [w.split(":")[0] for w in config.warnings] == [
        "the consumer config 'value.deserializer' has no effect here",
        "the consumer config 'foo.bar' was supplied but isn't a known config"]


def test_group_configs_map_to_the_consumer_arguments():
    config = consumer_config({
        "group.id": "g", "group.instance.id": "i-1", "session.timeout.ms": "10000", "heartbeat.interval.ms": "1000",
        "max.poll.interval.ms": "60000", "enable.auto.commit": "FALSE", "auto.commit.interval.ms": "100",
        "partition.assignment.strategy": "org.apache.kafka.clients.consumer.RoundRobinAssignor, range"})
    assert config.kwargs == {
        "group_id": "g", "group_instance_id": "i-1", "session_timeout_ms": 10000, "heartbeat_interval_ms": 1000,
        "max_poll_interval_ms": 60000, "enable_auto_commit": False, "auto_commit_interval_ms": 100,
        "partition_assignment_strategy": ["org.apache.kafka.clients.consumer.RoundRobinAssignor", "range"]}
    assert config.warnings == ()


@pytest.mark.parametrize(("name", "value"), [("enable.auto.commit", "yes"), ("partition.assignment.strategy", "fair"),
                                             ("session.timeout.ms", "0")])
def test_a_bad_group_value_is_refused(name, value):
    with pytest.raises(ConfigError, match=name):
        consumer_config({name: value})


@pytest.mark.parametrize(("name", "value"), [("acks", "2"), ("linger.ms", "-1"), ("batch.size", "big"),
                                             ("compression.type", "brotli"), ("retries", "9999999999")])
def test_a_bad_producer_value_is_refused(name, value):
    with pytest.raises(ConfigError, match=name):
        producer_config({name: value})


def test_a_config_file_is_read_as_java_properties(tmp_path):
    path = tmp_path / "producer.properties"
    path.write_text("# a comment\nacks = all\nlinger.ms: 7\n")
    assert read_config_file(path) == {"acks": "all", "linger.ms": "7"}
    with pytest.raises(ConfigError, match="cannot read"):
        read_config_file(tmp_path / "missing.properties")


@pytest.mark.parametrize("arguments", [
    ["produce", "t", "--producer-property", "linger.ms=soon"],
    ["produce", "t", "--producer-property", "no-equals-sign"],
    ["produce", "t", "--producer.config", "/nonexistent/producer.properties"],
    ["consume", "t", "--consumer-property", "fetch.min.bytes=-5"],
    ["produce", "t", "--producer-property", "enable.idempotence=maybe"],
    ["produce", "t", "--acks", "1", "--producer-property", "enable.idempotence=true"],
    ["produce", "t", "--producer-property", "acks=0", "--producer-property", "enable.idempotence=true"],
])
def test_bad_client_configs_are_usage_errors_before_connecting(arguments, tmp_path):
    result = CliRunner().invoke(main, [*arguments, "--bootstrap-server", "127.0.0.1:1"], input="x\n")
    assert result.exit_code == 2, result.output


def test_sasl_settings_become_the_clients_credentials() -> None:
    librdkafka = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
                  "sasl.password": "pw"}
    assert producer_config(librdkafka).kwargs["sasl"] == SaslCredentials("SCRAM-SHA-512", "alice", "pw")
    assert producer_config(librdkafka).warnings == ()
    java = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required username="bob" password="s";'}
    assert consumer_config(java).kwargs["sasl"] == SaslCredentials("PLAIN", "bob", "s")
    assert "sasl" not in consumer_config({"security.protocol": "PLAINTEXT"}).kwargs
    for bad in ({"security.protocol": "SASL_PLAINTEXT", "sasl.username": "a", "sasl.password": "secret-pw"},
                {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "a"},
                {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": "nonsense"}):
        with pytest.raises(ConfigError) as refused:
            producer_config(bad)
        assert "secret-pw" not in str(refused.value)
