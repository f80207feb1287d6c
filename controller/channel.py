"""Controller -> broker requests: one queue and one sender task per live broker, and per-broker batching.

As in Kafka's ControllerChannelManager, each broker gets its own sender so a slow or dead broker
delays nobody else; a broker's requests go out one at a time in order, each retried (reconnecting
with backoff) until it is answered or the broker is removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from protocol.apis.replica_control import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LiveBroker,
    LiveLeader,
    StopReplicaPartition,
    StopReplicaRequest,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from protocol.codec import ValidationError
from protocol.errors import KafkaError
from protocol.topic_partition import TopicPartition
from zk.znodes import BrokerInfo, LeaderIsrAndControllerEpoch

log = logging.getLogger("controller.channel")


class Connection(Protocol):
    """What the channel needs of transport.connection.BrokerConnection."""

    async def connect(self) -> None: ...

    async def request(self, body: object) -> Any: ...

    async def close(self) -> None: ...


ConnectionFactory = Callable[[str, int], Connection]


class BrokerRemovedError(Exception):
    """The broker left the channel (it died, or this controller resigned) before the request was answered."""


@dataclass(slots=True)
class _Pending:
    request: object
    future: asyncio.Future[Any]


def _fail(future: asyncio.Future[Any], error: Exception) -> None:
    if not future.done():
        future.set_exception(error)
        future.exception()  # nobody may be waiting (UpdateMetadata): no "exception was never retrieved"


class _BrokerSender:
    """The queue and sender task of one broker."""

    def __init__(self, broker_id: int, host: str, port: int, manager: ControllerChannelManager) -> None:
        self.broker_id = broker_id
        self.host = host
        self.port = port
        self.manager = manager
        self.queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self.connection: Connection | None = None
        self.current: _Pending | None = None
        self.stopping = False  # checked between attempts too: a cancellation can be lost (see stop)
        self.task = asyncio.get_running_loop().create_task(self._run(), name=f"controller-send-{broker_id}")

    async def _run(self) -> None:
        failures = 0  # consecutive failed attempts: the backoff doubles with each, up to the maximum
        while not self.stopping:
            self.current = pending = await self.queue.get()
            while not pending.future.done():
                if self.stopping:
                    return  # stop() fails what is left, this request included
                try:
                    response = await self._send(pending.request)
                except (KafkaError, ValidationError) as e:  # refused as a whole, or does not encode: final
                    log.error("Broker %d refused %s: %s", self.broker_id, type(pending.request).__name__, e)
                    _fail(pending.future, e)
                except Exception as e:
                    delay = min(self.manager.backoff_s * 2 ** min(failures, 16), self.manager.max_backoff_s)
                    failures += 1
                    log.log(
                        logging.WARNING if failures == 1 else logging.DEBUG,
                        "Controller %d cannot send %s to broker %d at %s:%d (attempt %d): %s; retrying in %.0f ms",
                        self.manager.controller_id,
                        type(pending.request).__name__,
                        self.broker_id,
                        self.host,
                        self.port,
                        failures,
                        e,
                        delay * 1000,
                    )
                    await self._disconnect()
                    await asyncio.sleep(delay)
                else:
                    if failures:
                        log.info("Controller %d reaches broker %d again", self.manager.controller_id, self.broker_id)
                    failures = 0
                    if not pending.future.done():
                        pending.future.set_result(response)
            self.current = None

    async def _send(self, request: object) -> Any:
        if self.connection is None:
            connection = self.manager.connect(self.host, self.port)
            await connection.connect()
            self.connection = connection
        return await self.connection.request(request)

    async def _disconnect(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                await connection.close()

    async def stop(self) -> None:
        """End the sender. Besides the cancellation, the flag: code under an attempt may turn a cancellation into
        an ordinary failure (Python 3.11's asyncio.wait_for does when the awaited work ends at that moment), and a
        sender that took it for a failed attempt would retry a removed broker for ever while this waited."""
        self.stopping = True
        self.task.cancel()
        # not suppress(CancelledError): that would swallow a cancellation of the caller too (the controller's
        # event task, stopped while removing a broker, went on processing events)
        await asyncio.gather(self.task, return_exceptions=True)
        await self._disconnect()
        error = BrokerRemovedError(f"broker {self.broker_id} was removed from the controller channel")
        pending = [self.current] if self.current is not None else []
        while not self.queue.empty():
            pending.append(self.queue.get_nowait())
        for item in pending:
            _fail(item.future, error)


class ControllerChannelManager:
    """Sends controller requests to live brokers. `connect(host, port)` makes an unconnected
    transport.connection.BrokerConnection (or anything with its connect/request/close)."""

    def __init__(
        self, controller_id: int, connect: ConnectionFactory, *, backoff_ms: int = 50, max_backoff_ms: int = 1000
    ) -> None:
        self.controller_id = controller_id
        self.connect = connect
        self.backoff_s = backoff_ms / 1000
        self.max_backoff_s = max_backoff_ms / 1000
        self._senders: dict[int, _BrokerSender] = {}

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self._senders)

    def add_broker(self, broker_id: int, host: str, port: int) -> None:
        """Start a sender for the broker (no-op if it has one)."""
        if broker_id not in self._senders:
            self._senders[broker_id] = _BrokerSender(broker_id, host, port, self)

    async def remove_broker(self, broker_id: int) -> None:
        """Stop the broker's sender; its unanswered requests fail with BrokerRemovedError."""
        sender = self._senders.pop(broker_id, None)
        if sender is not None:
            await sender.stop()

    def send(self, broker_id: int, request: object) -> asyncio.Future[Any]:
        """Queue a request for the broker; the future gets its response body."""
        sender = self._senders.get(broker_id)
        if sender is None:
            raise BrokerRemovedError(f"broker {broker_id} is not in the controller channel")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        sender.queue.put_nowait(_Pending(request, future))
        return future

    async def shutdown(self) -> None:
        """Remove every broker."""
        for broker_id in list(self._senders):
            await self.remove_broker(broker_id)


@dataclass(slots=True)
class SentRequests:
    """The response futures of a sent batch, by broker id."""

    leader_and_isr: dict[int, asyncio.Future[Any]]
    stop_replica: dict[int, asyncio.Future[Any]]


class ControllerBrokerRequestBatch:
    """Collects partition states per broker, then sends one LeaderAndIsr per broker, one UpdateMetadata per
    broker to update and one StopReplica per broker to stop replicas on (Kafka's ControllerBrokerRequestBatch):
    every request the controller sends to brokers goes through a batch. Brokers not in `live_brokers` are
    skipped."""

    def __init__(
        self,
        channel: ControllerChannelManager,
        controller_epoch: int,
        live_brokers: Mapping[int, BrokerInfo],
        topic_ids: Mapping[str, str] | None = None,
    ) -> None:
        self.channel = channel
        self.controller_epoch = controller_epoch
        self.live_brokers = live_brokers
        self.topic_ids = topic_ids if topic_ids is not None else {}
        self._leader_and_isr: dict[int, dict[TopicPartition, LeaderAndIsrPartitionState]] = {}
        self._update_metadata_brokers: set[int] = set()
        self._update_metadata_partitions: dict[TopicPartition, UpdateMetadataPartitionState] = {}
        self._stop_replica: dict[int, dict[TopicPartition, StopReplicaPartition]] = {}

    def add_leader_and_isr(
        self,
        broker_ids: Iterable[int],
        topic: str,
        partition: int,
        state: LeaderIsrAndControllerEpoch,
        replicas: list[int],
        is_new: bool = False,
    ) -> None:
        """Tell these brokers (the partition's live replicas) to lead or follow; every live broker also
        gets the partition in its UpdateMetadata, as in Kafka."""
        wire = LeaderAndIsrPartitionState(is_new=is_new, topic_id=self.topic_ids.get(topic, ""),
                                          **self._fields(topic, partition, state, replicas))
        for broker_id in broker_ids:
            if broker_id in self.live_brokers:
                self._leader_and_isr.setdefault(broker_id, {})[TopicPartition(topic, partition)] = wire
        self.add_update_metadata(self.live_brokers, [(topic, partition, state, replicas)])

    def add_update_metadata(
        self,
        broker_ids: Iterable[int],
        partitions: Iterable[tuple[str, int, LeaderIsrAndControllerEpoch, list[int]]] = (),
    ) -> None:
        """Send these brokers an UpdateMetadata with the live brokers and every partition added to the batch
        (`partitions` as (topic, partition, state, replicas)); with no partitions, just the live brokers."""
        self._update_metadata_brokers.update(b for b in broker_ids if b in self.live_brokers)
        for topic, partition, state, replicas in partitions:
            offline = [r for r in replicas if r not in self.live_brokers]
            self._update_metadata_partitions[TopicPartition(topic, partition)] = UpdateMetadataPartitionState(
                offline_replicas=offline, topic_id=self.topic_ids.get(topic, ""),
                **self._fields(topic, partition, state, replicas)
            )

    def add_stop_replica(self, broker_id: int, topic: str, partition: int, leader_epoch: int, *, delete: bool,
                         topic_id: str | None = None) -> None:
        """Tell a live broker to stop its replica of the partition (and delete it, with `delete`); only a replica
        of the topic's incarnation `topic_id` (by default the topic's current one, if it has an id)."""
        if broker_id in self.live_brokers:
            self._stop_replica.setdefault(broker_id, {})[TopicPartition(topic, partition)] = StopReplicaPartition(
                topic=topic, partition=partition, leader_epoch=leader_epoch, delete_partition=delete,
                topic_id=topic_id if topic_id is not None else self.topic_ids.get(topic, ""),
            )

    def send(self) -> SentRequests:
        """Queue the requests; returns the LeaderAndIsr and StopReplica response futures by broker id."""
        controller_id = self.channel.controller_id
        acks: dict[int, asyncio.Future[Any]] = {}
        for broker_id, states in sorted(self._leader_and_isr.items()):
            leaders = sorted({s.leader for s in states.values() if s.leader in self.live_brokers})
            request = LeaderAndIsrRequest(
                controller_id=controller_id,
                controller_epoch=self.controller_epoch,
                broker_epoch=self.live_brokers[broker_id].epoch,
                partition_states=list(states.values()),
                live_leaders=[
                    LiveLeader(broker_id=b, host=self.live_brokers[b].host, port=self.live_brokers[b].port)
                    for b in leaders
                ],
            )
            acks[broker_id] = self.channel.send(broker_id, request)
        live = [LiveBroker(id=b.id, endpoints=_endpoints(b)) for _, b in sorted(self.live_brokers.items())]
        for broker_id in sorted(self._update_metadata_brokers):
            request = UpdateMetadataRequest(
                controller_id=controller_id,
                controller_epoch=self.controller_epoch,
                broker_epoch=self.live_brokers[broker_id].epoch,
                partition_states=list(self._update_metadata_partitions.values()),
                live_brokers=live,
            )
            self.channel.send(broker_id, request)
        stops: dict[int, asyncio.Future[Any]] = {}
        for broker_id, partitions in sorted(self._stop_replica.items()):
            stops[broker_id] = self.channel.send(broker_id, StopReplicaRequest(
                controller_id=controller_id,
                controller_epoch=self.controller_epoch,
                broker_epoch=self.live_brokers[broker_id].epoch,
                partitions=list(partitions.values()),
            ))
        self._leader_and_isr.clear()
        self._update_metadata_brokers.clear()
        self._update_metadata_partitions.clear()
        self._stop_replica.clear()
        return SentRequests(acks, stops)

    @staticmethod
    def _fields(topic: str, partition: int, state: LeaderIsrAndControllerEpoch, replicas: list[int]) -> dict[str, Any]:
        return {
            "topic": topic,
            "partition": partition,
            "controller_epoch": state.controller_epoch,
            "leader": state.leader,
            "leader_epoch": state.leader_epoch,
            "isr": list(state.isr),
            "zk_version": state.zk_version,
            "replicas": list(replicas),
        }


def _endpoints(broker: BrokerInfo) -> list[UpdateMetadataEndpoint]:
    """Every advertised endpoint of a broker; a registration without endpoints has the one it was read for."""
    if not broker.endpoints:
        return [UpdateMetadataEndpoint(listener="PLAINTEXT", host=broker.host, port=broker.port)]
    return [UpdateMetadataEndpoint(listener=e.listener_name, host=e.host, port=e.port,
                                   security_protocol=e.security_protocol) for e in broker.endpoints]
