"""The console's eyes on the cluster: every broker asked for its Metadata and its replicas (DescribeReplicas) about
every half second, each broker on its own so that one that does not answer (stopped, partitioned) holds back only
its own row; the answers become the model's snapshot (client/console/model.py)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Mapping

from client.closing import AsyncClosing
from client.console.model import BrokerAnswer, Json, snapshot
from client.metadata import ClusterMetadata, parse_address, parse_bootstrap_servers
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.apis.replicas import DescribeReplicasRequest, DescribeReplicasResponse
from protocol.errors import KafkaError
from transport.connection import KafkaConnectionError

POLL_INTERVAL_S = 0.5
#: A broker that has not answered within this is shown as not answering.
ANSWER_TIMEOUT_MS = 1000


class ClusterWatch(AsyncClosing):
    """Follows the brokers known from `brokers` (id -> "host:port", the cluster directory's) and every broker any
    Metadata answer names; with none known, the bootstrap servers are asked who the brokers are. A broker once seen
    stays in the picture (not answering, not registered) when it goes."""

    def __init__(self, bootstrap_servers: str, brokers: Mapping[int, str] | None = None, *,
                 interval_s: float = POLL_INTERVAL_S, timeout_ms: int = ANSWER_TIMEOUT_MS,
                 tls: ssl.SSLContext | None = None) -> None:
        self.interval_s = interval_s
        self.timeout_ms = timeout_ms
        self.answers: dict[int, BrokerAnswer] = {}
        self._bootstrap = parse_bootstrap_servers(bootstrap_servers)
        self._addresses = {broker_id: parse_address(address) for broker_id, address in (brokers or {}).items()}
        self._pool = ClusterMetadata(bootstrap_servers, client_id="minikafka-console", request_timeout_ms=timeout_ms,
                                     tls=tls)
        self._followers: dict[int, asyncio.Task[None]] = {}
        self._metadata: MetadataResponse | None = None
        self._problem: str | None = None

    def snapshot(self) -> Json:
        """The cluster as last seen (client/console/model.py)."""
        metadata = self._trusted_metadata()
        problem = self._problem if not any(a.answering for a in self.answers.values()) else None
        return snapshot(self.answers, metadata, problem=problem)

    async def discover(self) -> None:
        """Start following every broker known; with none known yet, ask the bootstrap servers."""
        if not self._addresses:
            await self._ask_bootstrap()
        for broker_id in self._addresses:
            if broker_id not in self._followers:
                self._followers[broker_id] = asyncio.create_task(self._follow(broker_id))

    async def close(self) -> None:
        for task in self._followers.values():
            task.cancel()
        for task in self._followers.values():
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._followers.clear()
        await self._pool.close()

    def _trusted_metadata(self) -> MetadataResponse | None:
        """The answer of the broker that says it is the controller (its cache is updated first), else of any
        answering broker; else the last trusted one."""
        answering = [a for a in sorted(self.answers.values(), key=lambda a: a.broker_id)
                     if a.answering and a.metadata is not None]
        chosen = next((a for a in answering if a.metadata is not None and a.metadata.controller_id == a.broker_id),
                      answering[0] if answering else None)
        if chosen is not None:
            self._metadata = chosen.metadata
        return self._metadata

    async def _ask_bootstrap(self) -> None:
        problems = []
        for host, port in self._bootstrap:
            try:
                response = await (await self._pool.connection_to(host, port)).request(MetadataRequest(topics=[]))
            except (KafkaConnectionError, KafkaError) as e:
                problems.append(f"{host}:{port}: {e}")
                continue
            self._learn(response)
            if self._addresses:
                return
            problems.append(f"{host}:{port}: knows no brokers yet")
        self._problem = "no broker answered: " + "; ".join(problems)

    def _learn(self, metadata: MetadataResponse) -> None:
        for broker in metadata.brokers:
            self._addresses[broker.node_id] = (broker.host, broker.port)

    async def _follow(self, broker_id: int) -> None:
        """Poll one broker for ever, every interval (or as soon as its previous answer came or timed out)."""
        while True:
            started = time.monotonic()
            self.answers[broker_id] = answer = await self._poll(broker_id)
            if answer.answering and answer.metadata is not None:
                self._learn(answer.metadata)
                await self.discover()
            await asyncio.sleep(max(0.0, self.interval_s - (time.monotonic() - started)))  # the poll's cadence

    async def _poll(self, broker_id: int) -> BrokerAnswer:
        host, port = self._addresses[broker_id]
        address = f"{host}:{port}"
        try:
            connection = await self._pool.connection_to(host, port)
            metadata, described = await asyncio.gather(
                connection.request(MetadataRequest(topics=None), timeout_ms=self.timeout_ms),
                connection.request(DescribeReplicasRequest(topics=None), timeout_ms=self.timeout_ms))
        except (KafkaConnectionError, KafkaError, OSError) as e:
            before = self.answers.get(broker_id)
            if before is None:
                return BrokerAnswer(broker_id, address, answering=False, problem=str(e))
            return BrokerAnswer(broker_id, address, answering=False, metadata=before.metadata,
                                replicas=before.replicas, controller_epoch=before.controller_epoch, problem=str(e))
        assert isinstance(metadata, MetadataResponse) and isinstance(described, DescribeReplicasResponse)
        # A broker that has not had the controller's UpdateMetadata yet knows no brokers: its view is not used.
        return BrokerAnswer(broker_id, address, answering=True, metadata=metadata if metadata.brokers else None,
                            replicas=described.partitions, controller_epoch=described.controller_epoch)
