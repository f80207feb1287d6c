"""The client's view of the cluster, from Metadata responses, and a pool of connections to its brokers."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from protocol.apis.metadata import MetadataBroker, MetadataRequest, MetadataResponse
from protocol.errors import ErrorCode, KafkaError
from protocol.sasl import SaslCredentials
from protocol.topic_partition import TopicPartition
from transport.connection import AuthenticationFailedError, BrokerConnection, KafkaConnectionError

log = logging.getLogger(__name__)

NO_LEADER = -1


def parse_address(address: str) -> tuple[str, int]:
    """`HOST:PORT` as (host, port); ValueError if it is not one."""
    host, sep, port = address.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected HOST:PORT, got {address!r}")
    return host.strip("[]"), int(port)


def parse_bootstrap_servers(servers: str | Sequence[str]) -> list[tuple[str, int]]:
    """A comma-separated `HOST:PORT,...` string, or a sequence of them, as (host, port) pairs."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    addresses = [parse_address(item) for item in items if item.strip()]
    if not addresses:
        raise ValueError("no bootstrap servers given")
    return addresses


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition's leadership as the cluster last reported it."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    error: ErrorCode = ErrorCode.NONE


class ClusterMetadata:
    """Brokers, controller and topic partitions, refreshed on demand, plus one pooled connection per broker.

    The first refresh asks the bootstrap servers; later ones ask any broker known to be up, falling back to
    the bootstrap servers. With allow_auto_topic_creation (a producer's, as Kafka's producers ask) brokers create
    the topics asked for that do not exist, if their auto.create.topics.enable allows it.
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        client_id: str = "minikafka",
        request_timeout_ms: int = 30000,
        allow_auto_topic_creation: bool = False,
        tls: ssl.SSLContext | None = None,
        sasl: SaslCredentials | None = None,
    ) -> None:
        self.bootstrap = parse_bootstrap_servers(bootstrap_servers)
        self.tls = tls
        self.sasl = sasl
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.brokers: dict[int, MetadataBroker] = {}
        self.controller_id = -1
        self.topic_errors: dict[str, ErrorCode] = {}
        self._partitions: dict[str, dict[int, PartitionInfo]] = {}
        self._topic_partitions: dict[str, tuple[TopicPartition, ...]] = {}
        self._connections: dict[tuple[str, int], BrokerConnection] = {}
        self._connecting: dict[tuple[str, int], asyncio.Lock] = {}
        self._refresh_lock = asyncio.Lock()

    def topics(self) -> list[str]:
        """The topics whose partitions are known."""
        return sorted(self._partitions)

    def partitions(self, topic: str) -> list[PartitionInfo] | None:
        """The partitions of a topic ordered by number, or None if the topic is not known (yet)."""
        partitions = self._partitions.get(topic)
        return None if partitions is None else [partitions[p] for p in sorted(partitions)]

    def partition_count(self, topic: str) -> int:
        """How many partitions the topic has; 0 if it is not known (yet)."""
        return len(self._partitions.get(topic, ()))

    def topic_partitions(self, topic: str) -> tuple[TopicPartition, ...]:
        """The topic's partitions 0..count-1 as TopicPartition keys; () if the topic is not known (yet). Built once
        per metadata update: the producer asks for every record."""
        tps = self._topic_partitions.get(topic)
        if tps is None:
            tps = tuple(TopicPartition(topic, p) for p in range(self.partition_count(topic)))
            if tps:
                self._topic_partitions[topic] = tps
        return tps

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        """One partition's info, or None if unknown."""
        return self._partitions.get(topic, {}).get(partition)

    def leader_for(self, topic: str, partition: int) -> PartitionInfo | None:
        """The partition's info if it has a leader among the known brokers, else None."""
        info = self.partition(topic, partition)
        if info is None or info.leader == NO_LEADER or info.leader not in self.brokers:
            return None
        return info

    async def refresh(self, topics: Iterable[str] | None = None) -> MetadataResponse:
        """Ask for fresh metadata about `topics` (None: all topics) and update this view.

        Refreshes run one at a time. Raises KafkaConnectionError if no broker answers."""
        wanted = None if topics is None else sorted(set(topics))
        async with self._refresh_lock:
            response = await self._fetch(MetadataRequest(
                topics=wanted, allow_auto_topic_creation=self.allow_auto_topic_creation and wanted is not None))
            self._apply(response, replace_all=wanted is None)
            return response

    async def connection(self, broker_id: int) -> BrokerConnection:
        """A connected, pooled connection to a known broker."""
        broker = self.brokers.get(broker_id)
        if broker is None:
            raise KafkaConnectionError(f"broker {broker_id} is not in the cluster metadata")
        return await self.connection_to(broker.host, broker.port)

    def open_connection(self, broker_id: int) -> BrokerConnection | None:
        """The pooled connection to a known broker if it is open now (no waiting), else None."""
        broker = self.brokers.get(broker_id)
        connection = None if broker is None else self._connections.get((broker.host, broker.port))
        return None if connection is None or connection.closed else connection

    async def connection_to(self, host: str, port: int) -> BrokerConnection:
        """A connected, pooled connection to an address; a closed one is replaced."""
        key = (host, port)
        lock = self._connecting.setdefault(key, asyncio.Lock())
        async with lock:
            connection = self._connections.get(key)
            if connection is None or connection.closed:
                connection = BrokerConnection(
                    host, port, client_id=self.client_id, request_timeout_ms=self.request_timeout_ms, tls=self.tls,
                    sasl=self.sasl
                )
                await connection.connect()
                self._connections[key] = connection
            return connection

    async def close(self) -> None:
        """Close every pooled connection."""
        connections, self._connections = self._connections, {}
        await asyncio.gather(*(c.close() for c in connections.values()))

    async def _fetch(self, request: MetadataRequest) -> MetadataResponse:
        candidates = [(b.host, b.port) for b in self.brokers.values()]
        candidates += [address for address in self.bootstrap if address not in candidates]
        errors = []
        for host, port in candidates:
            try:
                connection = await self.connection_to(host, port)
                response = await connection.request(request)
            except AuthenticationFailedError:
                raise  # the credentials are wrong everywhere: no other broker is asked
            except (KafkaConnectionError, KafkaError) as e:
                errors.append(f"{host}:{port}: {e}")
                continue
            if response.brokers:
                return response
            # A broker that has not had the controller's UpdateMetadata yet (just started) knows no brokers and no
            # topics; its answer is ignored, as Kafka's clients ignore an empty metadata response.
            errors.append(f"{host}:{port}: knows no brokers yet (starting up)")
        raise KafkaConnectionError("no broker answered a Metadata request: " + "; ".join(errors))

    def _apply(self, response: MetadataResponse, *, replace_all: bool) -> None:
        self.brokers = {b.node_id: b for b in response.brokers}
        self.controller_id = response.controller_id
        self._topic_partitions.clear()
        if replace_all:
            self._partitions.clear()
            self.topic_errors.clear()
        for topic in response.topics:
            error = ErrorCode.from_code(topic.error_code)
            if error != ErrorCode.NONE:
                self._partitions.pop(topic.name, None)
                self.topic_errors[topic.name] = error
                continue
            self.topic_errors.pop(topic.name, None)
            self._partitions[topic.name] = {
                p.partition: PartitionInfo(
                    topic=topic.name,
                    partition=p.partition,
                    leader=p.leader,
                    leader_epoch=p.leader_epoch,
                    replicas=tuple(p.replicas),
                    isr=tuple(p.isr),
                    offline_replicas=tuple(p.offline_replicas),
                    error=ErrorCode.from_code(p.error_code),
                )
                for p in topic.partitions
            }
