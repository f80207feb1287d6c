"""Broker configuration: Kafka's property names and defaults, overrides, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import BrokerConfig, ConfigError, parse_properties

MINIMAL = "broker.id=2\nzookeeper.connect=127.0.0.1:2181/cluster-a\n"


def test_kafka_defaults():
    config = BrokerConfig.from_properties(parse_properties(MINIMAL))
    assert (config.broker_id, config.host, config.port) == (2, "127.0.0.1", 9092)
    assert (config.zookeeper_connect, config.zookeeper_chroot) == ("127.0.0.1:2181", "/cluster-a")
    assert config.replica_lag_time_max_ms == 30000
    assert config.zookeeper_session_timeout_ms == 18000
    assert config.replica_fetch_wait_max_ms == 500
    assert config.replica_high_watermark_checkpoint_interval_ms == 5000
    assert config.num_replica_fetchers == 1
    assert config.replication_truncation_mode == "leader-epoch"
    assert config.log.segment_bytes == 1024**3 and config.log.min_insync_replicas == 1
    assert config.log.unclean_leader_election_enable is False
    assert (config.network.num_network_threads, config.network.num_io_threads) == (3, 8)
    assert config.network.queued_max_requests == 500


def test_server_properties_file_and_overrides(tmp_path: Path):
    path = tmp_path / "server.properties"
    path.write_text("# a broker\n" + MINIMAL + "listeners=PLAINTEXT://127.0.0.1:0\nlog.dirs=/a,/b\n"
                    "log.segment.bytes=1048576\nmin.insync.replicas=2\n")
    config = BrokerConfig.from_file(path, ["replica.lag.time.max.ms=1500", "broker.id=7"])
    assert (config.broker_id, config.port, config.replica_lag_time_max_ms) == (7, 0, 1500)
    assert config.log_dirs == [Path("/a"), Path("/b")]
    assert (config.log.segment_bytes, config.log.min_insync_replicas) == (1048576, 2)
    assert config.zookeeper_chroot == "/cluster-a"


@pytest.mark.parametrize(("text", "message"), [
    ("zookeeper.connect=x:1\n", "broker.id is required"),
    ("broker.id=1\n", "zookeeper.connect is required"),
    (MINIMAL + "replica.lag.time.max.ms=soon\n", "replica.lag.time.max.ms must be an integer"),
    (MINIMAL + "listeners=nonsense\n", "listeners must look like"),
    (MINIMAL + "replication.truncation.mode=hope\n", "replication.truncation.mode must be one of"),
    (MINIMAL + "unclean.leader.election.enable=maybe\n", "must be true or false"),
    (MINIMAL + "just some words\n", "expected key=value"),
])
def test_bad_configuration_is_refused_with_the_property_name(text, message, tmp_path: Path):
    path = tmp_path / "server.properties"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.from_file(path)
