"""Log configs: the cleanup policy and the cleaner's topic and broker settings, with Kafka's names, defaults and
checks, and what DescribeConfigs shows of them."""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig, ConfigError, parse_properties
from broker.config_description import topic_config_entries
from broker.log.config import NEVER, LogConfig, LogConfigError
from protocol.apis.configs import ConfigSource, ConfigType

MINIMAL = "broker.id=1\nzookeeper.connect=127.0.0.1:2181\n"


def test_kafkas_defaults_delete_only_and_compaction_settings():
    config = LogConfig()
    assert config.cleanup_policy == ("delete",)
    assert (config.delete, config.compact) == (True, False)
    assert config.min_cleanable_dirty_ratio == 0.5
    assert (config.min_compaction_lag_ms, config.max_compaction_lag_ms) == (0, NEVER)
    assert config.delete_retention_ms == 86_400_000
    assert config.segment_ms == 604_800_000


@pytest.mark.parametrize(("policy", "compact", "delete"), [
    ("compact", True, False), ("delete", False, True), ("compact,delete", True, True),
    ("delete, compact", True, True), ("", False, False),
])
def test_cleanup_policy_is_a_list_of_compact_and_delete(policy: str, compact: bool, delete: bool):
    config = LogConfig().with_topic_overrides({"cleanup.policy": policy})
    assert (config.compact, config.delete) == (compact, delete)


@pytest.mark.parametrize(("overrides", "message"), [
    ({"cleanup.policy": "compress"}, "cleanup.policy: invalid value 'compress'"),
    ({"min.cleanable.dirty.ratio": "1.5"}, "min.cleanable.dirty.ratio must be between 0 and 1"),
    ({"min.cleanable.dirty.ratio": "half"}, "min.cleanable.dirty.ratio must be a number"),
    ({"min.compaction.lag.ms": "-1"}, "must be >= 0"),
    ({"max.compaction.lag.ms": "0"}, "max.compaction.lag.ms >= 1"),
    ({"delete.retention.ms": "-5"}, "must be >= 0"),
    ({"min.compaction.lag.ms": "100", "max.compaction.lag.ms": "50"},
     r"conflict topic config setting min.compaction.lag.ms \(100\) > max.compaction.lag.ms \(50\)"),
    ({"segment.ms": "0"}, "segment.ms"),
])
def test_bad_compaction_settings_are_refused_as_kafka_refuses_them(overrides: dict[str, str], message: str):
    with pytest.raises(LogConfigError, match=message):
        LogConfig().with_topic_overrides(overrides)


def test_broker_properties_give_the_topic_defaults_under_kafkas_broker_names():
    props = parse_properties(MINIMAL + "log.cleanup.policy=compact\nlog.cleaner.min.cleanable.ratio=0.25\n"
                             "log.cleaner.min.compaction.lag.ms=10\nlog.cleaner.max.compaction.lag.ms=1000\n"
                             "log.cleaner.delete.retention.ms=500\nlog.roll.ms=60000\n")
    log = BrokerConfig.from_properties(props).log
    assert log.cleanup_policy == ("compact",)
    assert (log.min_cleanable_dirty_ratio, log.min_compaction_lag_ms, log.max_compaction_lag_ms) == (0.25, 10, 1000)
    assert (log.delete_retention_ms, log.segment_ms) == (500, 60000)
    assert log.with_topic_overrides({"cleanup.policy": "delete"}).cleanup_policy == ("delete",)


def test_the_cleaners_broker_settings_and_the_memory_of_its_offset_maps():
    cleaner = BrokerConfig.from_properties(parse_properties(MINIMAL)).cleaner
    assert (cleaner.enable, cleaner.threads, cleaner.backoff_ms) == (True, 1, 15_000)
    assert cleaner.dedupe_buffer_size == 128 * 1024 * 1024
    assert cleaner.offset_map_bytes == int(128 * 1024 * 1024 * 0.9)  # Kafka's maxDesiredMapSize, in bytes
    props = parse_properties(MINIMAL + "log.cleaner.enable=false\nlog.cleaner.threads=2\n"
                             "log.cleaner.backoff.ms=100\nlog.cleaner.dedupe.buffer.size=4194304\n")
    cleaner = BrokerConfig.from_properties(props).cleaner
    assert (cleaner.enable, cleaner.threads, cleaner.backoff_ms) == (False, 2, 100)
    assert cleaner.offset_map_bytes == int(2 * 1024 * 1024 * 0.9)  # a half of the buffer per thread


@pytest.mark.parametrize(("line", "message"), [
    ("log.cleaner.threads=-1", "log.cleaner.threads and log.cleaner.backoff.ms must be >= 0"),
    ("log.cleaner.dedupe.buffer.size=1048576", "at least 1MB per cleaner thread"),
    ("log.cleaner.enable=sometimes", "log.cleaner.enable must be true or false"),
    ("log.cleanup.policy=forever", "log.cleanup.policy: invalid value 'forever'"),
    ("log.cleaner.min.cleanable.ratio=2", "min.cleanable.dirty.ratio must be between 0 and 1"),
])
def test_bad_cleaner_properties_stop_the_broker_with_their_name(line: str, message: str):
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.from_properties(parse_properties(f"{MINIMAL}{line}\n"))


def test_describe_configs_shows_the_policy_as_a_list_and_the_ratio_as_a_double():
    broker = LogConfig.from_broker_properties({"log.cleaner.delete.retention.ms": "1000"})
    entries = {e.name: e for e in topic_config_entries(broker, {"cleanup.policy": "compact,delete"}, None, True)}
    policy = entries["cleanup.policy"]
    assert (policy.value, policy.config_type, policy.config_source) == (
        "compact,delete", ConfigType.LIST, ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert [(s.name, s.value) for s in policy.synonyms] == [("cleanup.policy", "compact,delete"),
                                                            ("log.cleanup.policy", "delete")]
    ratio = entries["min.cleanable.dirty.ratio"]
    assert (ratio.value, ratio.config_type, ratio.config_source) == ("0.5", ConfigType.DOUBLE,
                                                                      ConfigSource.DEFAULT_CONFIG)
    retention = entries["delete.retention.ms"]
    assert (retention.value, retention.config_source) == ("1000", ConfigSource.STATIC_BROKER_CONFIG)
    assert retention.synonyms[0].name == "log.cleaner.delete.retention.ms"
    assert entries["max.compaction.lag.ms"].value == str(NEVER)
