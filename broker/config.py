"""Broker configuration: a Kafka-style server.properties plus overrides, with Kafka's names and defaults."""

from __future__ import annotations

import logging
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from broker.authorizer.rules import ACL_AUTHORIZER_CLASS_NAMES, AuthorizerConfig, parse_super_users
from broker.coordinator.config import GroupCoordinatorConfig
from broker.listeners import ListenerConfig
from broker.log.cleaner.config import CleanerConfig
from broker.log.config import LogConfig, LogConfigError
from broker.network import NetworkConfig
from broker.sasl_config import SaslConfig, SaslConfigError
from protocol.endpoint import ListenerConfigError
from transport.tls import TlsConfigError, client_context, listener_settings, server_context
from zk.ops import JUTE_MAXBUFFER

log = logging.getLogger(__name__)

TRUNCATION_MODES = ("leader-epoch", "high-watermark")
#: `MINIKAFKA_CFG_<NAME>=value` sets a property: NAME lower-cased, underscores as dots.
ENVIRONMENT_PREFIX = "MINIKAFKA_CFG_"


class ConfigError(ValueError):
    """A missing, unknown-valued or malformed broker property."""


def parse_properties(text: str) -> dict[str, str]:
    """Java-properties style ``key=value`` (or ``key: value``) lines; ``#`` and ``!`` start comments."""
    props: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        separators = [i for i in (line.find("="), line.find(":")) if i > 0]
        if not separators:
            raise ConfigError(f"line {number}: expected key=value, got {raw!r}")
        at = min(separators)
        props[line[:at].strip()] = line[at + 1:].strip()
    return props


def environment_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The properties given as environment variables: ``MINIKAFKA_CFG_MIN_INSYNC_REPLICAS=2`` ->
    ``{"min.insync.replicas": "2"}``."""
    return {
        name[len(ENVIRONMENT_PREFIX):].lower().replace("_", "."): value.strip()
        for name, value in environ.items()
        if name.startswith(ENVIRONMENT_PREFIX) and len(name) > len(ENVIRONMENT_PREFIX)
    }


def parse_overrides(overrides: Iterable[str]) -> dict[str, str]:
    """``["key=value", ...]`` as given on a command line; ConfigError (a ValueError) for an item without
    ``=`` or with an empty key."""
    parsed: dict[str, str] = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"expected KEY=VALUE, got {item!r}")
        parsed[key.strip()] = value.strip()
    return parsed


@dataclass(frozen=True)
class BrokerConfig:
    """Everything a broker reads from server.properties (Kafka's property names, minikafka's types)."""

    broker_id: int
    listeners: ListenerConfig
    log_dirs: list[Path]
    zookeeper_connect: str
    zookeeper_chroot: str = "/minikafka"
    zookeeper_session_timeout_ms: int = 18000
    #: how long start-up waits for ZooKeeper (Kafka's default: the session timeout)
    zookeeper_connection_timeout_ms: int = 18000
    #: the ZooKeeper servers' jute.maxbuffer (their -Djute.maxbuffer; Kafka's brokers take it as a JVM system
    #: property): no request to them is over half of it (zk.ops.request_budget)
    zookeeper_jute_maxbuffer: int = JUTE_MAXBUFFER
    replica_lag_time_max_ms: int = 30000
    replica_fetch_wait_max_ms: int = 500
    max_incremental_fetch_session_cache_slots: int = 1000
    min_incremental_fetch_session_eviction_ms: int = 120000
    replica_fetch_min_bytes: int = 1
    replica_fetch_max_bytes: int = 1024 * 1024
    replica_fetch_response_max_bytes: int = 10 * 1024 * 1024
    replica_fetch_backoff_ms: int = 1000
    replica_socket_timeout_ms: int = 30000
    num_replica_fetchers: int = 1
    replica_high_watermark_checkpoint_interval_ms: int = 5000
    log_flush_offset_checkpoint_interval_ms: int = 60000
    log_flush_start_offset_checkpoint_interval_ms: int = 60000
    log_retention_check_interval_ms: int = 300000
    log_flush_scheduler_interval_ms: int = 1000
    controller_socket_timeout_ms: int = 30000
    controlled_shutdown_enable: bool = True
    controlled_shutdown_max_retries: int = 3
    controlled_shutdown_retry_backoff_ms: int = 5000
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10
    delete_topic_enable: bool = True
    #: topics named in Metadata requests that allow it are created on first use (Kafka's default in ZooKeeper mode)
    auto_create_topics_enable: bool = True
    default_replication_factor: int = 1
    num_partitions: int = 1
    replication_truncation_mode: str = "leader-epoch"
    #: source.address: the local address every connection this broker opens (fetchers, controller channel,
    #: ZooKeeper) is bound to, so that each link between two members is identifiable; None: the kernel chooses.
    source_address: str | None = None
    #: metrics.port: where /metrics is served (Prometheus' text format), on the inter-broker listener's host;
    #: 0: no metrics server.
    metrics_port: int = 0
    network: NetworkConfig = field(default_factory=NetworkConfig)
    #: the TLS context of this broker's connections to other brokers (fetchers, controller) when the
    #: inter-broker listener is TLS: that listener's truststore, and its keystore for client authentication
    inter_broker_tls: ssl.SSLContext | None = None
    #: the SASL listeners' mechanisms and PLAIN users, the broker's own credentials to other brokers
    sasl: SaslConfig = field(default_factory=SaslConfig)
    log: LogConfig = field(default_factory=LogConfig)
    cleaner: CleanerConfig = field(default_factory=CleanerConfig)
    group_coordinator: GroupCoordinatorConfig = field(default_factory=GroupCoordinatorConfig)
    #: authorizer.class.name (Kafka's AclAuthorizer), super.users, allow.everyone.if.no.acl.found; None: no
    #: authorization (authorizer.class.name empty, Kafka's default)
    authorizer: AuthorizerConfig | None = None
    #: Every property as given (server.properties and overrides), for DescribeConfigs.
    properties: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_file(cls, path: Path, overrides: Iterable[str] = (), environ: Mapping[str, str] | None = None
                  ) -> BrokerConfig:
        """server.properties, then `MINIKAFKA_CFG_*` settings from `environ`, then the overrides: each replaces
        the keys of the one before."""
        try:
            props = parse_properties(path.read_text())
        except ConfigError as e:
            raise ConfigError(f"{path}: {e}") from None
        from_environment = environment_settings(environ or {})
        if from_environment:
            log.info("settings from the environment: %s", ", ".join(sorted(from_environment)))
        props.update(from_environment)
        props.update(parse_overrides(overrides))
        return cls.from_properties(props)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> BrokerConfig:
        reader = _Reader(props)
        try:
            listeners = ListenerConfig.from_properties(props)
            sasl = SaslConfig.from_properties(props, listeners)
        except (ListenerConfigError, SaslConfigError) as e:
            raise ConfigError(str(e)) from None
        connect = reader.required("zookeeper.connect")
        hosts, slash, chroot = connect.partition("/")
        log_dirs = reader.text("log.dirs", reader.text("log.dir", "/tmp/minikafka-logs"))
        mode = reader.text("replication.truncation.mode", "leader-epoch")
        if mode not in TRUNCATION_MODES:
            raise ConfigError(f"replication.truncation.mode must be one of {', '.join(TRUNCATION_MODES)}, got {mode!r}")
        running = RunningSettings.from_properties(props)
        try:
            log_config = LogConfig.from_broker_properties(props)
        except LogConfigError as e:
            raise ConfigError(str(e)) from None
        try:
            group_coordinator = GroupCoordinatorConfig.from_broker_properties(props)
        except ValueError as e:
            raise ConfigError(f"group coordinator settings: {e}") from None
        session_timeout_ms = reader.integer("zookeeper.session.timeout.ms", 18000)
        tls, inter_broker_tls = _tls_contexts(props, listeners)
        network = NetworkConfig(
            listeners=listeners.listeners,
            num_network_threads=reader.integer("num.network.threads", 3),
            num_io_threads=reader.integer("num.io.threads", 8),
            queued_max_requests=reader.integer("queued.max.requests", 500),
            socket_request_max_bytes=reader.integer("socket.request.max.bytes", 104857600),
            connections_max_idle_ms=reader.integer("connections.max.idle.ms", 600000),
            tls=tls,
            ssl_handshake_timeout_ms=reader.integer("ssl.handshake.timeout.ms", 10000),
        )
        config = cls(
            broker_id=reader.integer("broker.id", None),
            listeners=listeners,
            log_dirs=[Path(d.strip()) for d in log_dirs.split(",") if d.strip()],
            zookeeper_connect=hosts,
            zookeeper_chroot="/" + chroot.strip("/") if slash and chroot.strip("/") else "/minikafka",
            zookeeper_session_timeout_ms=session_timeout_ms,
            zookeeper_connection_timeout_ms=reader.integer("zookeeper.connection.timeout.ms", session_timeout_ms),
            zookeeper_jute_maxbuffer=reader.integer("zookeeper.jute.maxbuffer", JUTE_MAXBUFFER),
            replica_lag_time_max_ms=reader.integer("replica.lag.time.max.ms", 30000),
            replica_fetch_wait_max_ms=reader.integer("replica.fetch.wait.max.ms", 500),
            replica_fetch_min_bytes=reader.integer("replica.fetch.min.bytes", 1),
            max_incremental_fetch_session_cache_slots=reader.integer(
                "max.incremental.fetch.session.cache.slots", 1000),
            min_incremental_fetch_session_eviction_ms=reader.integer(
                "min.incremental.fetch.session.eviction.ms", 120000),
            replica_fetch_max_bytes=reader.integer("replica.fetch.max.bytes", 1024 * 1024),
            replica_fetch_response_max_bytes=reader.integer("replica.fetch.response.max.bytes", 10 * 1024 * 1024),
            replica_fetch_backoff_ms=reader.integer("replica.fetch.backoff.ms", 1000),
            replica_socket_timeout_ms=reader.integer("replica.socket.timeout.ms", 30000),
            num_replica_fetchers=running.num_replica_fetchers,
            replica_high_watermark_checkpoint_interval_ms=reader.integer(
                "replica.high.watermark.checkpoint.interval.ms", 5000),
            log_flush_offset_checkpoint_interval_ms=reader.integer("log.flush.offset.checkpoint.interval.ms", 60000),
            log_flush_start_offset_checkpoint_interval_ms=reader.integer(
                "log.flush.start.offset.checkpoint.interval.ms", 60000),
            log_retention_check_interval_ms=reader.integer("log.retention.check.interval.ms", 300000),
            log_flush_scheduler_interval_ms=reader.integer("log.flush.scheduler.interval.ms", 1000),
            controller_socket_timeout_ms=reader.integer("controller.socket.timeout.ms", 30000),
            controlled_shutdown_enable=reader.boolean("controlled.shutdown.enable", True),
            controlled_shutdown_max_retries=reader.integer("controlled.shutdown.max.retries", 3),
            controlled_shutdown_retry_backoff_ms=reader.integer("controlled.shutdown.retry.backoff.ms", 5000),
            auto_leader_rebalance_enable=reader.boolean("auto.leader.rebalance.enable", True),
            leader_imbalance_check_interval_seconds=reader.integer("leader.imbalance.check.interval.seconds", 300),
            leader_imbalance_per_broker_percentage=reader.integer("leader.imbalance.per.broker.percentage", 10),
            delete_topic_enable=reader.boolean("delete.topic.enable", True),
            auto_create_topics_enable=reader.boolean("auto.create.topics.enable", True),
            default_replication_factor=reader.integer("default.replication.factor", 1),
            num_partitions=reader.integer("num.partitions", 1),
            replication_truncation_mode=mode,
            source_address=reader.text("source.address", "").strip() or None,
            metrics_port=reader.integer("metrics.port", 0),
            network=network,
            inter_broker_tls=inter_broker_tls,
            sasl=sasl,
            log=log_config,
            cleaner=running.cleaner,
            group_coordinator=group_coordinator,
            authorizer=_authorizer(reader),
            properties=dict(props),
        )
        if config.leader_imbalance_check_interval_seconds < 1:
            raise ConfigError("leader.imbalance.check.interval.seconds must be at least 1, got "
                              f"{config.leader_imbalance_check_interval_seconds}")
        if not 0 <= config.leader_imbalance_per_broker_percentage <= 100:
            raise ConfigError("leader.imbalance.per.broker.percentage must be between 0 and 100, got "
                              f"{config.leader_imbalance_per_broker_percentage}")
        if not 0 <= config.metrics_port <= 65535:
            raise ConfigError(f"metrics.port must be between 0 and 65535, got {config.metrics_port}")
        if config.replica_fetch_wait_max_ms >= config.replica_lag_time_max_ms:
            log.warning("replica.fetch.wait.max.ms (%d) should be less than replica.lag.time.max.ms (%d)",
                        config.replica_fetch_wait_max_ms, config.replica_lag_time_max_ms)
        return config


@dataclass(frozen=True, slots=True)
class RunningSettings:
    """The broker settings beside its log defaults that a broker changes while it runs (Kafka's reconfigurables in
    DynamicBrokerConfig): the log cleaner's, and how many fetchers follow each leader."""

    cleaner: CleanerConfig
    num_replica_fetchers: int

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> RunningSettings:
        """These settings in `props` (Kafka's defaults for those missing); ConfigError names an invalid one."""
        reader = _Reader(props)
        kafka_cleaner = CleanerConfig()
        cleaner = CleanerConfig(
            enable=reader.boolean("log.cleaner.enable", kafka_cleaner.enable),
            threads=reader.integer("log.cleaner.threads", kafka_cleaner.threads),
            backoff_ms=reader.integer("log.cleaner.backoff.ms", kafka_cleaner.backoff_ms),
            dedupe_buffer_size=reader.integer("log.cleaner.dedupe.buffer.size", kafka_cleaner.dedupe_buffer_size),
            dedupe_buffer_load_factor=reader.number("log.cleaner.io.buffer.load.factor",
                                                    kafka_cleaner.dedupe_buffer_load_factor),
        )
        try:
            cleaner.check()
        except LogConfigError as e:
            raise ConfigError(str(e)) from None
        fetchers = reader.integer("num.replica.fetchers", 1)
        if fetchers < 1:
            raise ConfigError(f"num.replica.fetchers must be at least 1, got {fetchers}")
        return cls(cleaner, fetchers)


def _authorizer(reader: _Reader) -> AuthorizerConfig | None:
    name = reader.text("authorizer.class.name", "").strip()
    if not name:
        return None
    if name not in ACL_AUTHORIZER_CLASS_NAMES:
        raise ConfigError(f"authorizer.class.name: {name!r} is not served; one of "
                          f"{', '.join(sorted(ACL_AUTHORIZER_CLASS_NAMES))} (or empty: no authorization)")
    return AuthorizerConfig(super_users=parse_super_users(reader.text("super.users", "")),
                            allow_everyone_if_no_acl_found=reader.boolean("allow.everyone.if.no.acl.found", False))


def _tls_contexts(props: Mapping[str, str], listeners: ListenerConfig
                  ) -> tuple[dict[str, ssl.SSLContext], ssl.SSLContext | None]:
    """The server context of each TLS listener, and the client context of the inter-broker listener if it is
    TLS; ConfigError naming the listener for a bad ssl.* setting."""
    servers: dict[str, ssl.SSLContext] = {}
    inter_broker = None
    try:
        for endpoint in listeners.listeners:
            name = endpoint.listener_name
            if endpoint.is_tls:
                servers[name] = server_context(listener_settings(props, name))
        name = listeners.inter_broker_listener_name
        if any(e.listener_name == name and e.is_tls for e in listeners.advertised_listeners):
            inter_broker = client_context(listener_settings(props, name))
    except TlsConfigError as e:
        raise ConfigError(f"listener {name}: {e}") from None
    return servers, inter_broker


class _Reader:
    def __init__(self, props: Mapping[str, str]) -> None:
        self._props = props

    def text(self, key: str, default: str) -> str:
        return self._props.get(key, default)

    def required(self, key: str) -> str:
        value = self._props.get(key, "").strip()
        if not value:
            raise ConfigError(f"{key} is required")
        return value

    def integer(self, key: str, default: int | None) -> int:
        raw = self._props.get(key)
        if raw is None:
            if default is None:
                raise ConfigError(f"{key} is required")
            return default
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{key} must be an integer, got {raw!r}") from None

    def number(self, key: str, default: float) -> float:
        raw = self._props.get(key)
        if raw is None:
            return default
        try:
            return float(raw)
        except ValueError:
            raise ConfigError(f"{key} must be a number, got {raw!r}") from None

    def boolean(self, key: str, default: bool) -> bool:
        raw = self._props.get(key)
        if raw is None:
            return default
        if raw.lower() not in ("true", "false"):
            raise ConfigError(f"{key} must be true or false, got {raw!r}")
        return raw.lower() == "true"

