"""The broker process: wiring, start-up and shutdown (Kafka's KafkaServer)."""

from __future__ import annotations

import asyncio
import errno
import faulthandler
import json
import logging
import os
import resource
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import uvloop

from broker.apis.config_changes import ConfigChanges
from broker.apis.kafka_apis import KafkaApis
from broker.apis.scram_credentials import UserScramCredentialStore
from broker.authorizer.authorizer import AclAuthorizer, install_authorizer_log
from broker.auto_topic_creation import AutoTopicCreationManager
from broker.config import BrokerConfig
from broker.controller_client import ControllerClient, ControllerUnreachableError
from broker.coordinator.group_shell import GroupCoordinatorShell
from broker.coordinator.offsets_log import OffsetsLog
from broker.coordinator.offsets_topic import OffsetsTopic, offsets_topic
from broker.dynamic_config import DynamicBrokerConfig, Reconfigurables
from broker.log.cleaner.cleaner import Owner, no_step
from broker.log.cleaner.config import CleanerConfig
from broker.log.cleaner.log_cleaner import halt_hook
from broker.log.config import LogConfig
from broker.log.durable_writer import DURABLE_WRITER
from broker.log.log import wall_clock_ms
from broker.log.manager import LogDirError, LogManager
from broker.metadata_cache import MetadataCache
from broker.metrics.collector import BrokerCollector, ControllerGauges
from broker.metrics.http import MetricsServer
from broker.network import SocketServer
from broker.network.authenticator import SaslAuthenticator
from broker.producer_ids import ProducerIdManager
from broker.registration import get_or_create_cluster_id, register_broker
from broker.replication.fetcher import ReplicaFetcherManager
from broker.replication.replica_manager import ReplicaManager
from broker.zk_state import BrokerZkState
from controller.channel import ControllerChannelManager
from controller.controller import KafkaController
from protocol.apis.replica_control import ControlledShutdownRequest, ControlledShutdownResponse
from protocol.consumer_offsets import OFFSETS_TOPIC
from protocol.endpoint import EndPoint
from protocol.errors import ErrorCode
from protocol.state_change import install_state_change_file
from transport.connection import BrokerConnection
from zk.client import ZkClient, ZkState
from zk.ops import request_budget

log = logging.getLogger(__name__)

T = TypeVar("T")
#: Asks a broker for a clean shutdown without the controlled one (see `serve`).
UNCONTROLLED_SHUTDOWN_SIGNAL = signal.SIGUSR1


class BrokerServer:
    """One minikafka broker: log manager, replica manager, fetchers, network, controller."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.log_manager = LogManager(config.log_dirs, config.broker_id, config.log, clock=wall_clock_ms)
        self.zk = ZkClient(config.zookeeper_connect, chroot=config.zookeeper_chroot,
                           session_timeout_ms=config.zookeeper_session_timeout_ms,
                           source_address=config.source_address,
                           connection_timeout_ms=config.zookeeper_connection_timeout_ms,
                           max_request_bytes=request_budget(config.zookeeper_jute_maxbuffer))
        self.zk_state = BrokerZkState(self.zk)
        self.replica_manager = ReplicaManager(config, self.log_manager, self.zk_state.topic_config,
                                              self.zk_state.write_isr, wall_clock_ms)
        self.fetchers = ReplicaFetcherManager(config, self.replica_manager, self._fetcher_connection)
        self.metadata_cache = MetadataCache(config.broker_id)
        self.channel = ControllerChannelManager(config.broker_id, self._controller_connection)
        self.controller = KafkaController(config.broker_id, self.zk, self.channel, _validate_topic_config,
                                          default_num_partitions=config.num_partitions,
                                          default_replication_factor=config.default_replication_factor,
                                          unclean_leader_election_enable=config.log.unclean_leader_election_enable,
                                          inter_broker_listener_name=config.listeners.inter_broker_listener_name,
                                          delete_topic_enable=config.delete_topic_enable,
                                          auto_leader_rebalance_enable=config.auto_leader_rebalance_enable,
                                          leader_imbalance_check_interval_seconds=(
                                              config.leader_imbalance_check_interval_seconds),
                                          leader_imbalance_per_broker_percentage=(
                                              config.leader_imbalance_per_broker_percentage))
        self.producer_ids = ProducerIdManager(self.zk, config.broker_id)
        self.controller_client = ControllerClient(self.metadata_cache, config.listeners.inter_broker_listener_name,
                                                  self._controller_connection)
        groups = config.group_coordinator
        self.group_coordinator = GroupCoordinatorShell(
            groups, OffsetsLog(self.replica_manager, groups.offsets_commit_timeout_ms, groups.offsets_load_buffer_size),
            wall_clock_ms)
        self.replica_manager.on_leadership_change = self.group_coordinator.on_leadership_change
        self.auto_topic_creation = AutoTopicCreationManager(
            self.metadata_cache, self.controller_client.create_topics,
            auto_create_topics_enable=config.auto_create_topics_enable, num_partitions=config.num_partitions,
            default_replication_factor=config.default_replication_factor,
            internal={OFFSETS_TOPIC: offsets_topic(groups)})
        self.authorizer = AclAuthorizer(self.zk, config.authorizer) if config.authorizer is not None else None
        coordinators = OffsetsTopic(self.metadata_cache, self.auto_topic_creation, self.group_coordinator.partition_for)
        self.dynamic_config = DynamicBrokerConfig(config.broker_id, config.properties, self.log_manager,
                                                  self.zk_state.topic_config, Reconfigurables(
                                                      self.replica_manager.update_min_insync_replicas,
                                                      self._restart_cleaner, self.fetchers.resize))
        self.scram_credentials = UserScramCredentialStore(self.zk)
        self.apis = KafkaApis(config.broker_id, lambda: self.broker_epoch, self.replica_manager, self.metadata_cache,
                              self.controller, self.zk_state, self.producer_ids, self.group_coordinator, coordinators,
                              self.auto_topic_creation,
                              ConfigChanges(self.zk, _validate_topic_config, config.broker_id, config.properties),
                              self.log_manager, self.dynamic_config, self.scram_credentials, self.authorizer)
        self.socket_server = SocketServer(config.network, self.apis.handle, self.replica_manager.counters,
                                          self._authenticator, config.sasl.authentication_timeout_ms)
        self.metrics = MetricsServer(BrokerCollector(self.replica_manager, self._controller_gauges, self.fetchers,
                                                     self.socket_server, self.group_coordinator.committed_offsets))
        self.endpoints: tuple[EndPoint, ...] = ()  # what this broker registered, once started
        self.host, self.port = "", -1  # its inter-broker endpoint, once started
        self.broker_epoch = -1
        self._reregistration: asyncio.Task | None = None

    def _authenticator(self, listener_name: str) -> SaslAuthenticator | None:
        listener = self.config.sasl.listeners.get(listener_name)
        if listener is None:
            return None
        return SaslAuthenticator(listener.mechanisms, listener.plain_users, self.scram_credentials)

    def _controller_gauges(self) -> ControllerGauges:
        controller = self.controller
        if not controller.is_active:
            return ControllerGauges(False, controller.epoch, 0, 0, 0)
        context = controller.context
        return ControllerGauges(True, controller.epoch, len(context.offline_partitions()), len(context.assignments),
                                len(context.partitions()))

    def _start_cleaner(self, cleaner: CleanerConfig) -> None:
        self.log_manager.start_cleaner(cleaner, on_loop(asyncio.get_running_loop()), halt_hook(os.environ) or no_step)

    async def _restart_cleaner(self, cleaner: CleanerConfig) -> None:
        """The log cleaner stopped (its threads joined off the event loop, which keeps taking their work) and
        started again with `cleaner`, as Kafka's LogCleaner.reconfigure does."""
        await asyncio.to_thread(self.log_manager.stop_cleaner)
        self._start_cleaner(cleaner)

    def _fetcher_connection(self, host: str, port: int) -> BrokerConnection:
        return BrokerConnection(host, port, client_id=f"broker-{self.config.broker_id}-fetcher",
                                request_timeout_ms=self.config.replica_socket_timeout_ms,
                                local_address=self.config.source_address, tls=self.config.inter_broker_tls,
                                sasl=self.config.sasl.inter_broker)

    def _controller_connection(self, host: str, port: int) -> BrokerConnection:
        return BrokerConnection(host, port, client_id=f"controller-{self.config.broker_id}",
                                request_timeout_ms=self.config.controller_socket_timeout_ms,
                                local_address=self.config.source_address, tls=self.config.inter_broker_tls,
                                sasl=self.config.sasl.inter_broker)

    async def start(self) -> None:
        """Join the cluster in ZooKeeper (its id, created by the first broker), recover the logs (refusing log dirs
        of another cluster) and start the durable file writer, serve, register and start the controller."""
        config = self.config
        await self.zk.start(timeout_s=config.zookeeper_connection_timeout_ms / 1000)
        try:
            cluster_id = await get_or_create_cluster_id(self.zk)
            await asyncio.gather(asyncio.to_thread(self.log_manager.startup, cluster_id),
                                 asyncio.to_thread(DURABLE_WRITER.start))
        except BaseException:
            await self.zk.close()
            raise
        self._start_cleaner(config.cleaner)
        self.metadata_cache.cluster_id = cluster_id
        await self.dynamic_config.start(self.zk)
        await self.scram_credentials.start()
        if self.authorizer is not None:  # every ACL is known before the first request is served
            await self.authorizer.start()
        bound = await self.socket_server.start()
        self.endpoints = config.listeners.advertised_endpoints(bound, socket.getfqdn())
        inter_broker = next(e for e in self.endpoints
                            if e.listener_name == config.listeners.inter_broker_listener_name)
        self.host, self.port = inter_broker.host, inter_broker.port
        if config.metrics_port:
            listener = next(e for e in config.listeners.listeners if e.listener_name == inter_broker.listener_name)
            await self.metrics.start(listener.host, config.metrics_port)
        # A broker restarted right after a crash finds its old registration until that session expires.
        self.broker_epoch = await register_broker(self.zk, config.broker_id, self.endpoints,
                                                  wait_ms=2 * config.zookeeper_session_timeout_ms)
        self.zk.add_state_listener(self._on_zk_state)
        self.replica_manager.start()
        self.group_coordinator.start()
        await self.controller.startup()
        log.info("broker %d started on %s (broker epoch %d)", config.broker_id, ",".join(map(str, self.endpoints)),
                 self.broker_epoch)

    def _on_zk_state(self, state: ZkState) -> None:
        """After a session expiry the ephemeral registration is gone: register again (a new broker epoch);
        the controller sees a bounced broker."""
        if state is ZkState.NEW_SESSION:
            self._reregistration = asyncio.get_running_loop().create_task(self._register_again())

    async def _register_again(self) -> None:
        try:
            self.broker_epoch = await register_broker(self.zk, self.config.broker_id, self.endpoints,
                                                      wait_ms=2 * self.config.zookeeper_session_timeout_ms)
            log.info("broker %d registered again after a ZooKeeper session expiry (broker epoch %d)",
                     self.config.broker_id, self.broker_epoch)
        except Exception:
            log.exception("broker %d could not register again", self.config.broker_id)

    async def controlled_shutdown(self) -> bool:
        """Ask the controller to move this broker's leaderships and take it out of ISRs, retrying
        controlled.shutdown.max.retries times; True once it reports nothing left."""
        config = self.config
        for attempt in range(1, config.controlled_shutdown_max_retries + 1):
            remaining = await self._request_controlled_shutdown()
            if remaining == 0:
                log.info("broker %d: controlled shutdown succeeded (attempt %d)", config.broker_id, attempt)
                return True
            log.info("broker %d: controlled shutdown attempt %d incomplete (%s); retrying in %d ms",
                     config.broker_id, attempt, "no answer" if remaining is None else f"{remaining} partitions left",
                     config.controlled_shutdown_retry_backoff_ms)
            await asyncio.sleep(config.controlled_shutdown_retry_backoff_ms / 1000)
        log.warning("broker %d: controlled shutdown did not complete; shutting down anyway", config.broker_id)
        return False

    async def _request_controlled_shutdown(self) -> int | None:
        """Partitions the controller says this broker still leads, or None if it could not be asked."""
        try:
            response = await self.controller_client.send(
                ControlledShutdownRequest(broker_id=self.config.broker_id, broker_epoch=self.broker_epoch))
        except ControllerUnreachableError as e:
            log.info("broker %d: controlled shutdown request failed: %s", self.config.broker_id, e)
            return None
        assert isinstance(response, ControlledShutdownResponse)
        if response.error_code != ErrorCode.NONE:
            log.info("broker %d: controlled shutdown answered %s", self.config.broker_id,
                     ErrorCode.from_code(response.error_code).name)
            return None
        return len(response.remaining_partitions)

    async def shutdown(self, *, controlled: bool = True) -> None:
        """Stop serving, stop fetching, flush and checkpoint every log, leave the clean-shutdown marker.
        With controlled.shutdown.enable (and `controlled`), leaderships move to other replicas first."""
        log.info("broker %d shutting down%s", self.config.broker_id, "" if controlled else " (not controlled)")
        if controlled and self.config.controlled_shutdown_enable:
            await self.controlled_shutdown()
        self.zk.stop_waiting_for_connection()  # what is left to write is not worth zookeeper.connection.timeout.ms
        self.dynamic_config.stop()
        await self.controller.shutdown()
        await self.fetchers.shutdown()
        await self.socket_server.stop()
        if self.authorizer is not None:
            await self.authorizer.close()
        await self.metrics.stop()
        await self.group_coordinator.shutdown()
        await self.replica_manager.shutdown()
        await self.zk_state.close()
        self.scram_credentials.stop()
        await self.channel.shutdown()
        await asyncio.to_thread(self.log_manager.shutdown)
        await asyncio.to_thread(DURABLE_WRITER.close)
        await self.zk.close()
        log.info("broker %d stopped", self.config.broker_id)


def on_loop(loop: asyncio.AbstractEventLoop) -> Owner:
    """Run work handed over by another thread (the log cleaner's) on the event loop, which owns the logs, and give
    that thread its result; RuntimeError once the loop is closed."""
    async def call(work: Callable[[], T]) -> T:
        return work()

    def run(work: Callable[[], T]) -> T:
        return asyncio.run_coroutine_threadsafe(call(work), loop).result()

    return run


def _validate_topic_config(configs: dict[str, str]) -> None:
    """Raises LogConfigError for an unknown or malformed topic config (INVALID_CONFIG)."""
    LogConfig().with_topic_overrides(configs)


async def serve(config: BrokerConfig, ready_file: Path | None = None) -> None:
    """Run a broker until SIGTERM or SIGINT (a clean shutdown, controlled first when enabled) or SIGUSR1 (a clean
    shutdown without the controlled one: `cluster down` stops every broker at once, leaving none to take over
    leaderships, so asking the controller to move them would only wait out its retries)."""
    server = BrokerServer(config)
    loop = asyncio.get_running_loop()
    stopping: asyncio.Future[bool] = loop.create_future()

    def stop(controlled: bool) -> None:
        if not stopping.done():
            stopping.set_result(controlled)

    loop.set_exception_handler(_log_loop_exception)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop, True)
    loop.add_signal_handler(UNCONTROLLED_SHUTDOWN_SIGNAL, stop, False)
    await server.start()
    if ready_file is not None:
        ready_file.write_text(json.dumps({"broker_id": config.broker_id, "host": server.host, "port": server.port}))
    await server.shutdown(controlled=await stopping)


def _descriptors() -> str:
    """'N open, limit M': what to say when descriptors run out."""
    try:
        count = len(os.listdir("/proc/self/fd"))
    except OSError:
        count = -1
    return f"{count} open, limit {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}"


def _log_loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
    """Every error that reaches the event loop is logged with its cause; running out of descriptors says so."""
    error = context.get("exception")
    if isinstance(error, OSError) and error.errno in (errno.EMFILE, errno.ENFILE):
        log.error("out of file descriptors (%s): %s", _descriptors(), context.get("message"))
    loop.default_exception_handler(context)


#: How long the interpreter lets one thread hold the GIL while another waits for it (Python's default is 5 ms).
#: A broker's worker threads (kazoo's connection, checkpoint and log file writes) each need the GIL back after
#: every system call; with the event loop busy, each waited up to the full interval. 8 threads writing 3,000
#: small checkpoints durably took 18 s beside a busy loop at 5 ms, 2.5 s at 0.5 ms (this 2-core VM).
GIL_SWITCH_INTERVAL_S = 0.0005


def tune_interpreter() -> None:
    """Settings of the Python runtime a broker runs with (see GIL_SWITCH_INTERVAL_S)."""
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)


def run_broker(config_path: Path, overrides: list[str]) -> None:
    """Entry point of ``minikafka broker``: blocks until the broker stops. A broker never ends silently: fatal
    signals dump every thread's stack (faulthandler) and an unhandled error is logged before the exit."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s")
    faulthandler.enable()
    tune_interpreter()
    config = BrokerConfig.from_file(config_path, overrides, os.environ)
    install_state_change_file(config.log_dirs[0])
    if config.authorizer is not None:
        install_authorizer_log(config.log_dirs[0])
    try:
        uvloop.run(serve(config))
    except LogDirError as e:  # another broker's or another cluster's log dirs: said in one line, no traceback
        log.critical("broker %d cannot start: %s", config.broker_id, e)
        sys.exit(1)
    except Exception as e:
        if isinstance(e, OSError) and e.errno in (errno.EMFILE, errno.ENFILE):
            log.critical("broker %d ran out of file descriptors (%s)", config.broker_id, _descriptors())
        log.critical("broker %d is exiting after an unhandled error", config.broker_id, exc_info=True)
        sys.exit(1)
