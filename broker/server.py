"""The broker process: wiring, start-up and shutdown (Kafka's KafkaServer)."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
from pathlib import Path

import uvloop

from broker.api import KafkaApis
from broker.config import BrokerConfig
from broker.log.config import LogConfig
from broker.log.log import wall_clock_ms
from broker.log.manager import LogManager
from broker.metadata_cache import MetadataCache
from broker.network import SocketServer
from broker.replication.fetcher import ReplicaFetcherManager
from broker.replication.replica_manager import ReplicaManager
from broker.state_change import install_state_change_file
from client.connection import BrokerConnection
from controller import zkdata
from controller.channel import ControllerChannelManager
from controller.controller import KafkaController
from controller.zk import NoNodeError, ZkClient, register_broker

log = logging.getLogger(__name__)


class BrokerServer:
    """One minikafka broker: log manager, replica manager, fetchers, network, controller."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.log_manager = LogManager(config.log_dirs, config.broker_id, config.log, clock=wall_clock_ms)
        self.zk = ZkClient(config.zookeeper_connect, chroot=config.zookeeper_chroot,
                           session_timeout_ms=config.zookeeper_session_timeout_ms)
        self.replica_manager = ReplicaManager(config, self.log_manager, self._topic_config, wall_clock_ms)
        self.fetchers = ReplicaFetcherManager(config, self.replica_manager, self._fetcher_connection)
        self.metadata_cache = MetadataCache(config.broker_id)
        self.channel = ControllerChannelManager(config.broker_id, self._controller_connection)
        self.controller = KafkaController(config.broker_id, self.zk, self.channel, _validate_topic_config,
                                          default_num_partitions=config.num_partitions,
                                          default_replication_factor=config.default_replication_factor)
        self.apis = KafkaApis(config.broker_id, self.replica_manager, self.metadata_cache, self.controller)
        self.socket_server = SocketServer(config.network, self.apis.handle)
        self.host = config.host
        self.port = config.port
        self.broker_epoch = -1

    def _fetcher_connection(self, host: str, port: int) -> BrokerConnection:
        return BrokerConnection(host, port, client_id=f"broker-{self.config.broker_id}-fetcher",
                                request_timeout_ms=self.config.replica_socket_timeout_ms)

    def _controller_connection(self, host: str, port: int) -> BrokerConnection:
        return BrokerConnection(host, port, client_id=f"controller-{self.config.broker_id}",
                                request_timeout_ms=self.config.controller_socket_timeout_ms)

    async def _topic_config(self, topic: str) -> dict[str, str]:
        try:
            data, _stat = await self.zk.get(zkdata.topic_config_path(topic))
        except NoNodeError:
            return {}
        return zkdata.decode_topic_config(data)

    async def start(self) -> None:
        """Recover the logs, serve, register in ZooKeeper and start the controller."""
        config = self.config
        await asyncio.to_thread(self.log_manager.startup)
        await self.zk.start()
        self.host, self.port = await self.socket_server.start()
        # A broker restarted right after a crash finds its old registration until that session expires.
        self.broker_epoch = await register_broker(self.zk, config.broker_id, self.host, self.port,
                                                  wait_ms=2 * config.zookeeper_session_timeout_ms)
        self.replica_manager.start()
        await self.controller.startup()
        log.info("broker %d started on %s:%d (broker epoch %d)", config.broker_id, self.host, self.port,
                 self.broker_epoch)

    async def shutdown(self) -> None:
        """Stop serving, stop fetching, flush and checkpoint every log, leave the clean-shutdown marker."""
        log.info("broker %d shutting down", self.config.broker_id)
        await self.controller.shutdown()
        await self.fetchers.shutdown()
        await self.socket_server.stop()
        await self.replica_manager.shutdown()
        await self.channel.shutdown()
        await asyncio.to_thread(self.log_manager.shutdown)
        await self.zk.close()
        log.info("broker %d stopped", self.config.broker_id)


def _validate_topic_config(configs: dict[str, str]) -> None:
    """Raises LogConfigError for an unknown or malformed topic config (INVALID_CONFIG)."""
    LogConfig().with_topic_overrides(configs)


async def serve(config: BrokerConfig, ready_file: Path | None = None) -> None:
    """Run a broker until SIGTERM or SIGINT."""
    server = BrokerServer(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await server.start()
    if ready_file is not None:
        ready_file.write_text(json.dumps({"broker_id": config.broker_id, "host": server.host, "port": server.port}))
    await stop.wait()
    await server.shutdown()


def run_broker(config_path: Path, overrides: list[str]) -> None:
    """Entry point of ``minikafka broker``: blocks until the broker stops."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s")
    config = BrokerConfig.from_file(config_path, overrides)
    install_state_change_file(config.log_dirs[0])
    uvloop.run(serve(config))
