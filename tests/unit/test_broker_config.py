"""Broker configuration: Kafka's property names and defaults, overrides, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import BrokerConfig, ConfigError, environment_settings, parse_properties
from protocol.endpoint import EndPoint

MINIMAL = "broker.id=2\nzookeeper.connect=127.0.0.1:2181/cluster-a\n"


def test_kafka_defaults():
    config = BrokerConfig.from_properties(parse_properties(MINIMAL))
    assert config.broker_id == 2
    assert config.listeners.listeners == config.listeners.advertised_listeners == (
        EndPoint("PLAINTEXT", "127.0.0.1", 9092),)
    assert config.listeners.inter_broker_listener_name == "PLAINTEXT"
    assert (config.zookeeper_connect, config.zookeeper_chroot) == ("127.0.0.1:2181", "/cluster-a")
    assert config.replica_lag_time_max_ms == 30000
    assert config.zookeeper_session_timeout_ms == config.zookeeper_connection_timeout_ms == 18000
    assert config.replica_fetch_wait_max_ms == 500
    assert config.replica_high_watermark_checkpoint_interval_ms == 5000
    assert config.num_replica_fetchers == 1
    assert config.replication_truncation_mode == "leader-epoch"
    assert config.log.segment_bytes == 1024**3 and config.log.min_insync_replicas == 1
    assert config.log.unclean_leader_election_enable is False
    assert (config.network.num_network_threads, config.network.num_io_threads) == (3, 8)
    assert config.network.queued_max_requests == 500
    assert (config.delete_topic_enable, config.auto_leader_rebalance_enable) == (True, True)
    assert (config.leader_imbalance_check_interval_seconds, config.leader_imbalance_per_broker_percentage) == (300, 10)
    assert config.zookeeper_jute_maxbuffer == 0xFFFFF  # ZooKeeper's own default


def test_zookeeper_jute_maxbuffer_names_the_servers_limit():
    config = BrokerConfig.from_properties(parse_properties(MINIMAL + "zookeeper.jute.maxbuffer=65536\n"))
    assert config.zookeeper_jute_maxbuffer == 65536


def test_server_properties_file_and_overrides(tmp_path: Path):
    path = tmp_path / "server.properties"
    path.write_text("# a broker\n" + MINIMAL + "listeners=PLAINTEXT://127.0.0.1:0\nlog.dirs=/a,/b\n"
                    "log.segment.bytes=1048576\nmin.insync.replicas=2\n")
    config = BrokerConfig.from_file(path, ["replica.lag.time.max.ms=1500", "broker.id=7"])
    assert (config.broker_id, config.replica_lag_time_max_ms) == (7, 1500)
    assert config.network.listeners == (EndPoint("PLAINTEXT", "127.0.0.1", 0),)
    assert config.log_dirs == [Path("/a"), Path("/b")]
    assert (config.log.segment_bytes, config.log.min_insync_replicas) == (1048576, 2)
    assert config.zookeeper_chroot == "/cluster-a"


@pytest.mark.parametrize(("text", "message"), [
    ("zookeeper.connect=x:1\n", "broker.id is required"),
    ("broker.id=1\n", "zookeeper.connect is required"),
    (MINIMAL + "replica.lag.time.max.ms=soon\n", "replica.lag.time.max.ms must be an integer"),
    (MINIMAL + "listeners=nonsense\n", "listeners: expected NAME://host:port"),
    (MINIMAL + "replication.truncation.mode=hope\n", "replication.truncation.mode must be one of"),
    (MINIMAL + "unclean.leader.election.enable=maybe\n", "must be true or false"),
    (MINIMAL + "just some words\n", "expected key=value"),
    (MINIMAL + "delete.topic.enable=yes\n", "delete.topic.enable must be true or false"),
    (MINIMAL + "authorizer.class.name=com.example.Custom\n", "authorizer.class.name: 'com.example.Custom' is not"),
    (MINIMAL + "leader.imbalance.check.interval.seconds=0\n", "leader.imbalance.check.interval.seconds must be at"),
    (MINIMAL + "leader.imbalance.per.broker.percentage=101\n", "leader.imbalance.per.broker.percentage must be"),
])
def test_bad_configuration_is_refused_with_the_property_name(text, message, tmp_path: Path):
    path = tmp_path / "server.properties"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.from_file(path)


def test_minikafka_cfg_environment_variables_are_properties_with_dots_as_underscores():
    environ = {"MINIKAFKA_CFG_MIN_INSYNC_REPLICAS": "2", "MINIKAFKA_CFG_ADVERTISED_LISTENERS": "PLAINTEXT://h:1",
               "MINIKAFKA_CFG_": "ignored", "MINIKAFKA_BOOTSTRAP_SERVER": "ignored", "PATH": "/bin"}
    assert environment_settings(environ) == {"min.insync.replicas": "2", "advertised.listeners": "PLAINTEXT://h:1"}


def test_environment_settings_replace_the_file_and_overrides_replace_both(tmp_path: Path):
    path = tmp_path / "server.properties"
    path.write_text(MINIMAL + "min.insync.replicas=1\nlisteners=PLAINTEXT://127.0.0.1:9092\n")
    environ = {"MINIKAFKA_CFG_MIN_INSYNC_REPLICAS": "2", "MINIKAFKA_CFG_BROKER_ID": "5",
               "MINIKAFKA_CFG_LISTENERS": "INTERNAL://0.0.0.0:29092,EXTERNAL://0.0.0.0:9092",
               "MINIKAFKA_CFG_ADVERTISED_LISTENERS": "INTERNAL://broker-5:29092,EXTERNAL://127.0.0.1:9096",
               "MINIKAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
               "MINIKAFKA_CFG_INTER_BROKER_LISTENER_NAME": "INTERNAL"}
    config = BrokerConfig.from_file(path, ["broker.id=6"], environ)
    assert (config.broker_id, config.log.min_insync_replicas) == (6, 2)
    assert config.listeners.inter_broker_listener_name == "INTERNAL"
    assert [str(e) for e in config.listeners.advertised_listeners] == [
        "INTERNAL://broker-5:29092", "EXTERNAL://127.0.0.1:9096"]
    assert BrokerConfig.from_file(path).log.min_insync_replicas == 1  # no environment: the file alone
    with pytest.raises(ConfigError, match=r"min\.insync\.replicas"):
        BrokerConfig.from_file(path, environ={"MINIKAFKA_CFG_MIN_INSYNC_REPLICAS": "two"})


def test_authorizer_settings_are_kafkas() -> None:
    assert BrokerConfig.from_properties(parse_properties(MINIMAL)).authorizer is None
    for name in ("kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer"):
        config = BrokerConfig.from_properties(parse_properties(
            MINIMAL + f"authorizer.class.name={name}\nsuper.users=User:admin;User:broker\n"))
        assert config.authorizer is not None
        assert config.authorizer.super_users == {"User:admin", "User:broker"}
        assert config.authorizer.allow_everyone_if_no_acl_found is False
    config = BrokerConfig.from_properties(parse_properties(
        MINIMAL + "authorizer.class.name=kafka.security.authorizer.AclAuthorizer\n"
                  "allow.everyone.if.no.acl.found=true\n"))
    assert config.authorizer is not None and config.authorizer.allow_everyone_if_no_acl_found
