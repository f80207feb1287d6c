"""What DescribeConfigs answers: a topic's configs (its overrides over the broker's defaults) and a broker's
properties, with Kafka's config sources and types."""

from __future__ import annotations

from collections.abc import Mapping

from broker.log.config import BROKER_NAMES, TOPIC_NAMES, LogConfig
from protocol.apis.configs import ConfigEntry, ConfigSource, ConfigSynonym, ConfigType

#: Kafka's type of each topic config minikafka has.
TOPIC_CONFIG_TYPES: dict[str, ConfigType] = {
    "segment.bytes": ConfigType.INT,
    "segment.ms": ConfigType.LONG,
    "segment.index.bytes": ConfigType.INT,
    "index.interval.bytes": ConfigType.INT,
    "retention.bytes": ConfigType.LONG,
    "retention.ms": ConfigType.LONG,
    "flush.messages": ConfigType.LONG,
    "flush.ms": ConfigType.LONG,
    "max.message.bytes": ConfigType.INT,
    "min.insync.replicas": ConfigType.INT,
    "unclean.leader.election.enable": ConfigType.BOOLEAN,
    "cleanup.policy": ConfigType.LIST,
    "min.cleanable.dirty.ratio": ConfigType.DOUBLE,
    "min.compaction.lag.ms": ConfigType.LONG,
    "max.compaction.lag.ms": ConfigType.LONG,
    "delete.retention.ms": ConfigType.LONG,
    "compression.type": ConfigType.STRING,
}
_BROKER_NAME_OF = {field: name for name, field in BROKER_NAMES.items()}
_BUILT_IN = LogConfig()


def _text(value: object) -> str:
    """A value as Kafka shows it: booleans in lower case, lists joined by commas."""
    if isinstance(value, bool):
        return str(value).lower()
    return ",".join(value) if isinstance(value, tuple) else str(value)


def topic_config_entries(broker_defaults: LogConfig, overrides: Mapping[str, str], keys: list[str] | None,
                         include_synonyms: bool) -> list[ConfigEntry]:
    """Every topic config (or those in `keys`): an override is DYNAMIC_TOPIC_CONFIG, a value the broker's
    properties set is STATIC_BROKER_CONFIG, the rest DEFAULT_CONFIG. Synonyms, when asked for, list where the
    value comes from and what it would fall back to, most specific first (as Kafka does)."""
    effective = broker_defaults.with_topic_overrides(overrides)
    entries = []
    for name, field in TOPIC_NAMES.items():
        if keys is not None and name not in keys:
            continue
        broker_name = _BROKER_NAME_OF[field]
        broker_value = getattr(broker_defaults, field)
        broker_set = broker_value != getattr(_BUILT_IN, field)
        synonyms = []
        if name in overrides:
            synonyms.append(ConfigSynonym(name=name, value=overrides[name], source=ConfigSource.DYNAMIC_TOPIC_CONFIG))
        if broker_set:
            synonyms.append(ConfigSynonym(name=broker_name, value=_text(broker_value),
                                          source=ConfigSource.STATIC_BROKER_CONFIG))
        synonyms.append(ConfigSynonym(name=broker_name, value=_text(getattr(_BUILT_IN, field)),
                                      source=ConfigSource.DEFAULT_CONFIG))
        entries.append(ConfigEntry(name=name, value=_text(getattr(effective, field)),
                                   config_source=synonyms[0].source, config_type=TOPIC_CONFIG_TYPES[name],
                                   synonyms=synonyms if include_synonyms else []))
    return entries


#: Kafka's type of each group coordinator setting the broker describes (INT unless named here).
GROUP_SETTING_TYPES: dict[str, ConfigType] = {"offsets.retention.check.interval.ms": ConfigType.LONG}


#: Kafka's PASSWORD configs (besides every *.password): never answered, only marked sensitive.
_SECRETS = ("ssl.keystore.key", "sasl.jaas.config")


def is_sensitive(name: str) -> bool:
    """Whether a broker property is a secret (a password, a private key, a JAAS config), also per listener."""
    return name.endswith(".password") or name.endswith(_SECRETS)


def broker_config_entries(properties: Mapping[str, str], keys: list[str] | None,
                          defaults: Mapping[str, str]) -> list[ConfigEntry]:
    """The properties the broker was started with, read-only, STATIC_BROKER_CONFIG (a secret without its value,
    marked sensitive, as Kafka), and the `defaults` (the group coordinator's settings) it was not given,
    DEFAULT_CONFIG; all of them, or those in `keys`."""
    given = [ConfigEntry(name=name, value=None, read_only=True, config_source=ConfigSource.STATIC_BROKER_CONFIG,
                         is_sensitive=True, config_type=ConfigType.PASSWORD) if is_sensitive(name) else
             ConfigEntry(name=name, value=value, read_only=True, config_source=ConfigSource.STATIC_BROKER_CONFIG,
                         config_type=ConfigType.STRING) for name, value in properties.items()]
    defaulted = [ConfigEntry(name=name, value=value, read_only=True, config_source=ConfigSource.DEFAULT_CONFIG,
                             config_type=GROUP_SETTING_TYPES.get(name, ConfigType.INT))
                 for name, value in defaults.items() if name not in properties]
    return sorted((entry for entry in given + defaulted if keys is None or entry.name in keys),
                  key=lambda entry: entry.name)
