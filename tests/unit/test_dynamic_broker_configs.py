"""Brokers' dynamic configs: which can be updated (INVALID_CONFIG for the others and for bad values), how
DescribeConfigs reports each layer (Kafka's sources and synonyms, the cluster default alone for the empty broker
name), IncrementalAlterConfigs' APPEND and SUBTRACT on list configs, and which fetcher follows a partition."""

from __future__ import annotations

import pytest

from broker.apis.config_changes import incremental_changes
from broker.config_description import BrokerConfigLayers, broker_config_entries, topic_config_entries
from broker.dynamic_config import DYNAMIC_CONFIGS, check_dynamic_configs
from broker.log.config import LogConfig
from broker.replication.fetcher import fetcher_id
from protocol.apis.config_changes import ConfigOperation, IncrementalAlterableConfig
from protocol.apis.configs import ConfigResourceType, ConfigSource
from protocol.errors import ErrorCode, KafkaError
from protocol.topic_partition import TopicPartition

STATIC = {"broker.id": "1", "log.retention.hours": "24"}


@pytest.mark.parametrize(("configs", "message"), [
    ({"broker.id": "2"}, "Cannot update these configs dynamically: Set(broker.id)"),
    ({"no.such.config": "1", "log.dirs": "/x"}, "Set(log.dirs, no.such.config)"),
    ({"log.segment.bytes": "ten"}, "segment"),
    ({"log.cleanup.policy": "shred"}, "shred"),
    ({"leader.replication.throttled.rate": "fast"}, "Not a number"),
    ({"min.insync.replicas": "0"}, "min.insync.replicas must be >= 1"),
    ({"log.cleaner.threads": "0"}, "Log cleaner threads should be at least 1"),
    ({"log.cleaner.backoff.ms": "-1"}, "log.cleaner.backoff.ms must be >= 0"),
    ({"num.replica.fetchers": "0"}, "num.replica.fetchers must be at least 1"),
    ({"num.replica.fetchers": "many"}, "num.replica.fetchers"),
])
def test_configs_not_dynamic_here_or_with_bad_values_are_invalid(configs: dict[str, str], message: str) -> None:
    with pytest.raises(KafkaError) as refused:
        check_dynamic_configs(STATIC, configs)
    assert refused.value.code is ErrorCode.INVALID_CONFIG and message in str(refused.value)


def test_log_defaults_and_throttle_rates_are_dynamic() -> None:
    check_dynamic_configs(STATIC, {"log.retention.ms": "1000", "log.cleanup.policy": "compact",
                                   "follower.replication.throttled.rate": "1000000"})


def test_min_isr_unclean_election_the_cleaners_settings_and_the_fetcher_count_are_dynamic() -> None:
    check_dynamic_configs(STATIC, {"min.insync.replicas": "2", "unclean.leader.election.enable": "true",
                                   "log.cleaner.threads": "2", "log.cleaner.backoff.ms": "100",
                                   "log.cleaner.dedupe.buffer.size": "4194304",
                                   "log.cleaner.io.buffer.load.factor": "0.5", "num.replica.fetchers": "3"})
    names = ["min.insync.replicas", "unclean.leader.election.enable", "log.cleaner.threads", "num.replica.fetchers"]
    layered = BrokerConfigLayers(static_log=LogConfig(), static={**STATIC, "log.cleaner.threads": "1"},
                                 per_broker={"num.replica.fetchers": "2"},
                                 cluster_default={"min.insync.replicas": "2", "unclean.leader.election.enable": "true"})
    entries = broker_config_entries(layered, names, {}, DYNAMIC_CONFIGS)
    assert sorted((e.name, e.value, e.read_only) for e in entries) == [
        ("log.cleaner.threads", "1", False), ("min.insync.replicas", "2", False),
        ("num.replica.fetchers", "2", False), ("unclean.leader.election.enable", "true", False)]


def layers() -> BrokerConfigLayers:
    return BrokerConfigLayers(static_log=LogConfig.from_broker_properties(STATIC), static=STATIC,
                              per_broker={"log.retention.ms": "1000"},
                              cluster_default={"log.retention.ms": "2000", "log.segment.bytes": "5000"})


def test_a_broker_describes_its_own_dynamic_config_over_the_cluster_default_and_its_properties() -> None:
    entries = {e.name: e for e in broker_config_entries(layers(), None, {}, DYNAMIC_CONFIGS, include_synonyms=True)}
    retention = entries["log.retention.ms"]
    assert (retention.value, retention.config_source, retention.read_only) == (
        "1000", ConfigSource.DYNAMIC_BROKER_CONFIG, False)
    assert [(s.source, s.value) for s in retention.synonyms] == [
        (ConfigSource.DYNAMIC_BROKER_CONFIG, "1000"), (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, "2000"),
        (ConfigSource.STATIC_BROKER_CONFIG, "86400000"), (ConfigSource.DEFAULT_CONFIG, "604800000")]
    assert (entries["broker.id"].config_source, entries["broker.id"].read_only) == (
        ConfigSource.STATIC_BROKER_CONFIG, True)
    default_only = broker_config_entries(layers(), None, {}, DYNAMIC_CONFIGS, per_broker=False)
    assert [(e.name, e.value, e.config_source) for e in default_only] == [
        ("log.retention.ms", "2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.segment.bytes", "5000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]


def test_a_topic_config_lists_the_brokers_dynamic_layers_as_synonyms() -> None:
    effective = LogConfig.from_broker_properties({**STATIC, "log.segment.bytes": "5000", "log.retention.ms": "1000"})
    entries = {e.name: e for e in topic_config_entries(effective, {}, ["retention.ms", "segment.bytes"], True,
                                                       layers())}
    assert (entries["retention.ms"].value, entries["retention.ms"].config_source) == (
        "1000", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert (entries["segment.bytes"].value, entries["segment.bytes"].config_source) == (
        "5000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)


def change(operation: ConfigOperation, name: str, value: str | None) -> IncrementalAlterableConfig:
    return IncrementalAlterableConfig(name=name, config_operation=operation, value=value)


def test_append_and_subtract_change_a_list_from_its_current_value_or_kafkas_default() -> None:
    topic = ConfigResourceType.TOPIC
    assert incremental_changes(topic, {}, [change(ConfigOperation.APPEND, "cleanup.policy", "compact")]) == (
        {"cleanup.policy": "delete,compact"}, set())
    assert incremental_changes(topic, {"cleanup.policy": "compact"}, [
        change(ConfigOperation.APPEND, "cleanup.policy", "compact,delete"),
        change(ConfigOperation.DELETE, "retention.ms", None)]) == ({"cleanup.policy": "compact,delete"},
                                                                   {"retention.ms"})
    assert incremental_changes(topic, {"cleanup.policy": "compact,delete"}, [
        change(ConfigOperation.SUBTRACT, "cleanup.policy", "compact,nothing")]) == ({"cleanup.policy": "delete"}, set())
    assert incremental_changes(ConfigResourceType.BROKER, {}, [
        change(ConfigOperation.SUBTRACT, "log.cleanup.policy", "delete")]) == ({"log.cleanup.policy": ""}, set())


@pytest.mark.parametrize("operation", [ConfigOperation.APPEND, ConfigOperation.SUBTRACT])
def test_append_or_subtract_on_a_config_that_is_no_list_is_an_invalid_request(operation: ConfigOperation) -> None:
    with pytest.raises(KafkaError) as refused:
        incremental_changes(ConfigResourceType.TOPIC, {}, [change(operation, "retention.ms", "1")])
    assert refused.value.code is ErrorCode.INVALID_REQUEST and "not allowed for config key: retention.ms" in str(
        refused.value)


def test_throttled_replicas_are_a_list_of_partition_broker_items_or_a_star() -> None:
    topic = ConfigResourceType.TOPIC
    configs, _ = incremental_changes(topic, {"leader.replication.throttled.replicas": "0:1"}, [
        change(ConfigOperation.APPEND, "leader.replication.throttled.replicas", "0:2,0:1")])
    assert configs == {"leader.replication.throttled.replicas": "0:1,0:2"}
    assert LogConfig().with_topic_overrides(configs).leader_replication_throttled_replicas == ("0:1", "0:2")
    assert LogConfig().with_topic_overrides({"follower.replication.throttled.replicas": "*"}
                                            ).follower_replication_throttled_replicas == ("*",)
    with pytest.raises(ValueError, match="partitionId"):
        LogConfig().with_topic_overrides({"leader.replication.throttled.replicas": "0:1,*"})
    [entry] = topic_config_entries(LogConfig(), {}, ["follower.replication.throttled.replicas"], True)
    assert (entry.value, entry.config_source, entry.synonyms) == ("", ConfigSource.DEFAULT_CONFIG, [])


@pytest.mark.parametrize(("topic", "ids"), [
    ("t", [1, 2, 3]), ("topic-with-a-long-name", [0, 4, 3]), ("zürich-∑", [2, 3, 4])])
def test_a_partitions_fetcher_is_the_one_kafka_picks(topic: str, ids: list[int]) -> None:
    # what Kafka's getFetcherId gives with five fetchers (computed with Java's String.hashCode)
    assert [fetcher_id(TopicPartition(topic, partition), 5) for partition in range(3)] == ids
