"""What DescribeConfigs answers: a topic's configs (its overrides over the broker's defaults) and a broker's
configs (its dynamic configs over the cluster's dynamic defaults over its properties), with Kafka's config sources,
synonyms and types."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

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
    "leader.replication.throttled.replicas": ConfigType.LIST,
    "follower.replication.throttled.replicas": ConfigType.LIST,
}
_BROKER_NAME_OF = {field: name for name, field in BROKER_NAMES.items()}
_BUILT_IN = LogConfig()


@dataclass(frozen=True)
class BrokerConfigLayers:
    """Where a broker's configs come from, most specific first: its own dynamic configs, the cluster's dynamic
    defaults, its properties (and the log config they make), Kafka's defaults."""

    static_log: LogConfig
    static: Mapping[str, str] = field(default_factory=dict)
    per_broker: Mapping[str, str] = field(default_factory=dict)
    cluster_default: Mapping[str, str] = field(default_factory=dict)

    def synonyms(self, name: str, default: str | None, *, per_broker: bool = True) -> list[ConfigSynonym]:
        """Each layer's value of the broker config `name`, most specific first (the broker's own dynamic one
        left out of the cluster default's description)."""
        found = [ConfigSynonym(name=name, value=self.per_broker[name], source=ConfigSource.DYNAMIC_BROKER_CONFIG)
                 ] if per_broker and name in self.per_broker else []
        if name in self.cluster_default:
            found.append(ConfigSynonym(name=name, value=self.cluster_default[name],
                                       source=ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG))
        log_field = BROKER_NAMES.get(name)
        if log_field is not None:  # a log default: static if it differs from Kafka's, however it was given
            static_value = getattr(self.static_log, log_field)
            if name in self.static or static_value != getattr(_BUILT_IN, log_field):
                found.append(ConfigSynonym(name=name, value=_text(static_value),
                                           source=ConfigSource.STATIC_BROKER_CONFIG))
        elif name in self.static:
            found.append(ConfigSynonym(name=name, value=self.static[name], source=ConfigSource.STATIC_BROKER_CONFIG))
        if default is not None:
            found.append(ConfigSynonym(name=name, value=default, source=ConfigSource.DEFAULT_CONFIG))
        return found


def _text(value: object) -> str:
    """A value as Kafka shows it: booleans in lower case, lists joined by commas."""
    if isinstance(value, bool):
        return str(value).lower()
    return ",".join(value) if isinstance(value, tuple) else str(value)


def topic_config_entries(broker_defaults: LogConfig, overrides: Mapping[str, str], keys: list[str] | None,
                         include_synonyms: bool, layers: BrokerConfigLayers | None = None) -> list[ConfigEntry]:
    """Every topic config (or those in `keys`) over the broker's log defaults: an override is DYNAMIC_TOPIC_CONFIG,
    a broker's dynamic config DYNAMIC_BROKER_CONFIG, the cluster's DYNAMIC_DEFAULT_BROKER_CONFIG (`layers`), a
    value the broker's properties set STATIC_BROKER_CONFIG, the rest DEFAULT_CONFIG. Synonyms, when asked for, list
    where the value comes from and what it would fall back to, most specific first (as Kafka does)."""
    layers = layers or BrokerConfigLayers(static_log=broker_defaults)
    effective = broker_defaults.with_topic_overrides(overrides)
    entries = []
    for name, field_name in TOPIC_NAMES.items():
        if keys is not None and name not in keys:
            continue
        broker_name = _BROKER_NAME_OF.get(field_name)  # none for the throttled replicas lists
        synonyms = [ConfigSynonym(name=name, value=overrides[name], source=ConfigSource.DYNAMIC_TOPIC_CONFIG)
                    ] if name in overrides else []
        if broker_name is not None:
            synonyms += layers.synonyms(broker_name, _text(getattr(_BUILT_IN, field_name)))
        entries.append(ConfigEntry(name=name, value=_text(getattr(effective, field_name)),
                                   config_source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                                   config_type=TOPIC_CONFIG_TYPES[name],
                                   synonyms=synonyms if include_synonyms else []))
    return entries


#: Kafka's type of each group coordinator setting the broker describes (INT unless named here).
GROUP_SETTING_TYPES: dict[str, ConfigType] = {"offsets.retention.check.interval.ms": ConfigType.LONG}


#: Kafka's PASSWORD configs (besides every *.password): never answered, only marked sensitive.
_SECRETS = ("ssl.keystore.key", "sasl.jaas.config")


def is_sensitive(name: str) -> bool:
    """Whether a broker property is a secret (a password, a private key, a JAAS config), also per listener."""
    return name.endswith(".password") or name.endswith(_SECRETS)


#: Kafka's type of the broker configs that are no log defaults nor group coordinator settings, where not STRING.
_BROKER_CONFIG_TYPES: dict[str, ConfigType] = {
    "leader.replication.throttled.rate": ConfigType.LONG, "follower.replication.throttled.rate": ConfigType.LONG,
    "replica.alter.log.dirs.io.max.bytes.per.second": ConfigType.LONG}


def _broker_config_type(name: str, group_defaults: Mapping[str, str]) -> ConfigType:
    if name in BROKER_NAMES:
        return TOPIC_CONFIG_TYPES[next(topic for topic, f in TOPIC_NAMES.items() if f == BROKER_NAMES[name])]
    if name in group_defaults:
        return GROUP_SETTING_TYPES.get(name, ConfigType.INT)
    return _BROKER_CONFIG_TYPES.get(name, ConfigType.STRING)


def broker_config_entries(layers: BrokerConfigLayers, keys: list[str] | None, group_defaults: Mapping[str, str],
                          dynamic: frozenset[str], *, include_synonyms: bool = False, per_broker: bool = True
                          ) -> list[ConfigEntry]:
    """A broker's configs (`per_broker`): its dynamic configs, the cluster's dynamic defaults, the properties it was
    started with and the group coordinator's `group_defaults` it was not given; or the cluster's dynamic defaults
    alone (not `per_broker`: the empty broker name). Each with the source of its value and, when asked, its
    synonyms; read-only unless in `dynamic`. All of them, or those in `keys`."""
    names = set(layers.cluster_default)
    if per_broker:
        names |= set(layers.per_broker) | set(layers.static) | set(group_defaults)
    entries = []
    for name in sorted(names):
        if keys is not None and name not in keys:
            continue
        log_field = BROKER_NAMES.get(name)
        default = group_defaults.get(name) if log_field is None else _text(getattr(_BUILT_IN, log_field))
        synonyms = layers.synonyms(name, default, per_broker=per_broker)
        sensitive = is_sensitive(name)
        if sensitive:  # a secret is never answered, only marked sensitive, as Kafka
            synonyms = [replace(synonym, value=None) for synonym in synonyms]
        entries.append(ConfigEntry(name=name, value=synonyms[0].value, read_only=name not in dynamic,
                                   config_source=synonyms[0].source, is_sensitive=sensitive,
                                   config_type=ConfigType.PASSWORD if sensitive else _broker_config_type(
                                       name, group_defaults),
                                   synonyms=synonyms if include_synonyms else []))
    return entries
