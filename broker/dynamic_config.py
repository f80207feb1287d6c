"""Brokers' dynamic configs, as Kafka keeps them in ZooKeeper mode (its DynamicBrokerConfig): per broker in
/config/brokers/<id>, for every broker in /config/brokers/<default>; a broker's config is its own dynamic configs
over the cluster defaults over server.properties over Kafka's defaults.

What minikafka updates dynamically:
- the log defaults (`log.segment.bytes`, `log.retention.ms`, `log.cleanup.policy`, `min.insync.replicas`,
  `unclean.leader.election.enable`... the broker-level names of topic configs), applied at once to every log whose
  topic does not override them; a partition's min.insync.replicas is its log's (the controller reads
  unclean.leader.election.enable itself, controller/notifications.py);
- the log cleaner's threads, backoff and buffer (`log.cleaner.threads`, `log.cleaner.backoff.ms`,
  `log.cleaner.dedupe.buffer.size`, `log.cleaner.io.buffer.load.factor`): the cleaner is restarted with them, as
  Kafka's LogCleaner.reconfigure does;
- `num.replica.fetchers`: the fetchers are resized, each followed partition moved to its new fetcher;
- the replication throttle rates Kafka's tools write, kept and described but not enforced (minikafka has no
  replication quotas).
Any other config is refused, INVALID_CONFIG, as Kafka refuses one it cannot update dynamically. The broker re-reads
its configs on every /config/changes notification naming them, and re-applies a topic's overrides to its logs on one
naming the topic."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from broker.config import ConfigError, RunningSettings
from broker.config_description import BrokerConfigLayers
from broker.log.cleaner.config import CleanerConfig
from broker.log.config import BROKER_NAMES, LogConfig, LogConfigError
from broker.log.log import Log
from broker.log.manager import LogManager
from protocol.errors import ErrorCode, KafkaError
from protocol.topic_partition import TopicPartition
from zk import znodes
from zk.client import Watch, ZkClient
from zk.topic_config import (
    BROKER_ENTITY,
    DEFAULT_BROKER,
    TOPIC_ENTITY,
    config_change_sequence,
    new_config_changes,
    read_entity_config,
)

log = logging.getLogger(__name__)

#: Kafka's dynamic replication quotas (DynamicConfig.Broker): kept and described; minikafka does not throttle.
THROTTLE_RATES = frozenset({"leader.replication.throttled.rate", "follower.replication.throttled.rate",
                            "replica.alter.log.dirs.io.max.bytes.per.second"})
#: The log defaults a broker updates dynamically: every broker-level name of a topic config.
DYNAMIC_LOG_CONFIGS = frozenset(BROKER_NAMES)
#: The log cleaner's settings Kafka reconfigures at run time (those minikafka's cleaner has).
CLEANER_CONFIGS = frozenset({"log.cleaner.threads", "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size",
                             "log.cleaner.io.buffer.load.factor"})
REPLICA_FETCHERS = "num.replica.fetchers"
DYNAMIC_CONFIGS = DYNAMIC_LOG_CONFIGS | THROTTLE_RATES | CLEANER_CONFIGS | {REPLICA_FETCHERS}


def check_dynamic_configs(static: Mapping[str, str], configs: Mapping[str, str]) -> None:
    """Raise KafkaError INVALID_CONFIG unless every config can be updated dynamically and has a valid value."""
    fixed = sorted(set(configs) - DYNAMIC_CONFIGS)
    if fixed:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Cannot update these configs dynamically: Set({', '.join(fixed)})")
    for name in THROTTLE_RATES & set(configs):
        if not configs[name].strip().isdigit():
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid value {configs[name]} for configuration {name}: "
                                                       "Not a number of type LONG")
    try:
        LogConfig.from_broker_properties({**static, **configs})
        running = RunningSettings.from_properties({**static, **configs})
    except (LogConfigError, ConfigError, ValueError) as e:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(e)) from None
    if "log.cleaner.threads" in configs and running.cleaner.threads < 1:
        raise KafkaError(ErrorCode.INVALID_CONFIG, "Log cleaner threads should be at least 1")


@dataclass(frozen=True, slots=True)
class Reconfigurables:
    """What a broker changes at run time beside its logs' configs: a partition's min.insync.replicas (`min_isr`),
    the log cleaner (`cleaner`, restarted with its new settings) and the fetchers (`fetchers`, resized)."""

    min_isr: Callable[[TopicPartition, int], None]
    cleaner: Callable[[CleanerConfig], Awaitable[None]]
    fetchers: Callable[[int], None]


class DynamicBrokerConfig:
    """This broker's dynamic configs (per broker and cluster default), kept up to date from ZooKeeper and applied to
    its logs: the log manager's default config is the one a topic's overrides go over."""

    def __init__(self, broker_id: int, static: Mapping[str, str], log_manager: LogManager,
                 topic_config: Callable[[str], Awaitable[dict[str, str]]], reconfigurables: Reconfigurables) -> None:
        self.broker_id = broker_id
        self.static = dict(static)
        self.static_log = log_manager.default_config
        self.running = RunningSettings.from_properties(self.static)
        self._reconfigurables = reconfigurables
        self.cluster_default: dict[str, str] = {}
        self.per_broker: dict[str, str] = {}
        self._log_manager = log_manager
        self._topic_config = topic_config
        self._last_change = -1
        self._lock = asyncio.Lock()
        self._watch: Watch | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def log_defaults(self) -> LogConfig:
        """The log config a topic's overrides go over now."""
        return self._log_manager.default_config

    def layers(self) -> BrokerConfigLayers:
        return BrokerConfigLayers(static_log=self.static_log, static=self.static, per_broker=dict(self.per_broker),
                                  cluster_default=dict(self.cluster_default))

    async def start(self, zk: ZkClient) -> None:
        """Read the dynamic configs, apply them, and follow /config/changes from now on."""
        await zk.ensure_path(znodes.CONFIG_CHANGES_PATH)
        sequences = [config_change_sequence(c) for c in await zk.get_children(znodes.CONFIG_CHANGES_PATH)]
        self._last_change = max((s for s in sequences if s is not None), default=-1)
        await self._reload(zk)
        self._watch = await zk.watch_children(znodes.CONFIG_CHANGES_PATH, lambda _children: self._on_changes(zk))

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        for task in self._tasks:
            task.cancel()

    def _on_changes(self, zk: ZkClient) -> None:
        task = asyncio.get_running_loop().create_task(self._process_changes(zk))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _process_changes(self, zk: ZkClient) -> None:
        async with self._lock:
            try:
                self._last_change, entities = await new_config_changes(zk, self._last_change)
                brokers = any(kind == BROKER_ENTITY and name in (DEFAULT_BROKER, str(self.broker_id))
                              for kind, name in entities)
                topics = {name for kind, name in entities if kind == TOPIC_ENTITY}
                if brokers:
                    await self._reload(zk)
                else:
                    await self._apply(topics)
            except Exception:
                log.exception("broker %d could not apply config changes", self.broker_id)

    async def _reload(self, zk: ZkClient) -> None:
        self.cluster_default = await read_entity_config(zk, BROKER_ENTITY, DEFAULT_BROKER)
        self.per_broker = await read_entity_config(zk, BROKER_ENTITY, str(self.broker_id))
        merged = {**self.cluster_default, **self.per_broker}
        await self._reload_running({k: v for k, v in merged.items() if k in CLEANER_CONFIGS | {REPLICA_FETCHERS}})
        dynamic = {k: v for k, v in merged.items() if k in DYNAMIC_LOG_CONFIGS}
        try:
            defaults = LogConfig.from_broker_properties({**self.static, **dynamic})
        except (LogConfigError, ValueError) as e:
            log.error("broker %d keeps its log defaults: its dynamic configs are invalid: %s", self.broker_id, e)
            return
        if defaults != self._log_manager.default_config:
            log.info("broker %d: dynamic log defaults %s", self.broker_id, dynamic)
            self._log_manager.default_config = defaults
            await self._apply(None)

    async def _reload_running(self, dynamic: dict[str, str]) -> None:
        """The cleaner restarted and the fetchers resized where their dynamic settings changed them."""
        try:
            running = RunningSettings.from_properties({**self.static, **dynamic})
        except ConfigError as e:
            log.error("broker %d keeps its cleaner and fetchers: its dynamic configs are invalid: %s",
                      self.broker_id, e)
            return
        previous, self.running = self.running, running
        if running.num_replica_fetchers != previous.num_replica_fetchers:
            log.info("broker %d: num.replica.fetchers %d -> %d", self.broker_id, previous.num_replica_fetchers,
                     running.num_replica_fetchers)
            self._reconfigurables.fetchers(running.num_replica_fetchers)
        if running.cleaner != previous.cleaner:
            log.info("broker %d: the log cleaner restarts with %s", self.broker_id, running.cleaner)
            await self._reconfigurables.cleaner(running.cleaner)

    async def _apply(self, topics: set[str] | None) -> None:
        """The log defaults under each topic's overrides, on its logs (`topics` None: every topic)."""
        by_topic: dict[str, list[Log]] = {}
        for each in list(self._log_manager.logs.values()):
            if topics is None or each.tp.topic in topics:
                by_topic.setdefault(each.tp.topic, []).append(each)
        for topic, logs in by_topic.items():
            try:
                config = self._log_manager.default_config.with_topic_overrides(await self._topic_config(topic))
            except (LogConfigError, KafkaError) as e:
                log.error("broker %d keeps the config of topic %s: %s", self.broker_id, topic, e)
                continue
            for each in logs:
                each.config = config
                self._reconfigurables.min_isr(each.tp, config.min_insync_replicas)
