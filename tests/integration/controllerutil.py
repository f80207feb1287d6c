"""Stand-in brokers around real KafkaControllers, against a real ZooKeeper: each node has its own ZooKeeper session
(optionally through a ZkProxy the test can cut), its registration and its controller; the brokers themselves are
a fake network that records and answers the controllers' requests. Waits on them are short (`until`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from broker.log.config import LogConfig
from broker.registration import register_broker
from controller.channel import ControllerChannelManager
from controller.controller import KafkaController
from protocol.apis.replica_control import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from protocol.apis.topics import CreatableReplicaAssignment, CreatableTopic, CreateTopicsRequest
from protocol.endpoint import EndPoint
from protocol.errors import ErrorCode
from tests.integration.zkproxy import ZkProxy
from tests.polling import eventually
from zk import znodes
from zk.client import CreateOp, SetOp, ZkClient, ZkState
from zk.ops import MAX_REQUEST_BYTES
from zk.znodes import LeaderIsrAndControllerEpoch

if TYPE_CHECKING:
    from tests.integration.conftest import ZkSessionFactory

#: Stand-in brokers answer at once: a wait on them fails after this long.
TIMEOUT = 10.0
PORT_BASE = 9000  # broker N "listens" on PORT_BASE + N


def endpoints(broker_id: int) -> list[EndPoint]:
    """What broker N registers: its one PLAINTEXT listener."""
    return [EndPoint("PLAINTEXT", "127.0.0.1", PORT_BASE + broker_id)]


class FakeNetwork:
    """Connections to stand-in brokers: every request is recorded and answered with success, except that
    brokers in `unreachable` drop and refuse connections and requests to brokers in `stalled` get no answer."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, Any]] = []  # (destination broker id, request)
        self.unreachable: set[int] = set()
        self.stalled: set[int] = set()

    def connect(self, host: str, port: int) -> FakeConnection:
        return FakeConnection(self, port - PORT_BASE)

    def requests(self, kind: type, to: int | None = None) -> list[Any]:
        return [r for dest, r in self.sent if isinstance(r, kind) and to in (None, dest)]

    def destinations(self, kind: type) -> list[int]:
        return sorted(dest for dest, r in self.sent if isinstance(r, kind))

    def knows_live_brokers(self, broker_ids: list[int], epoch: int) -> bool:
        """Whether the latest UpdateMetadata each of these brokers got lists exactly them as live, from the
        controller of this epoch."""
        for broker_id in broker_ids:
            received = self.requests(UpdateMetadataRequest, to=broker_id)
            if not received or received[-1].controller_epoch != epoch:
                return False
            live = [(b.id, [e.port for e in b.endpoints]) for b in received[-1].live_brokers]
            if live != [(b, [PORT_BASE + b]) for b in broker_ids]:
                return False
        return True


@dataclass
class FakeConnection:
    network: FakeNetwork
    broker_id: int

    async def connect(self) -> None:
        if self.broker_id in self.network.unreachable:
            raise OSError(f"connection to broker {self.broker_id} refused")

    async def request(self, body: object) -> object:
        if self.broker_id in self.network.unreachable:
            raise OSError(f"connection to broker {self.broker_id} lost")
        if self.broker_id in self.network.stalled:
            await asyncio.Future()
        self.network.sent.append((self.broker_id, body))
        if isinstance(body, LeaderAndIsrRequest):
            return LeaderAndIsrResponse(error_code=ErrorCode.NONE, partition_errors=[])
        if isinstance(body, StopReplicaRequest):
            return StopReplicaResponse(error_code=ErrorCode.NONE, partition_errors=[])
        return UpdateMetadataResponse(error_code=ErrorCode.NONE)

    async def close(self) -> None:
        pass


async def until(predicate: Callable[[], Any] | Callable[[], Awaitable[Any]], what: str) -> Any:
    """Poll a (sync or async) predicate every 10 ms until it holds (tests.polling.eventually); returns its answer."""
    return await eventually(predicate, what, timeout_s=TIMEOUT, interval_s=0.01)


@dataclass
class Node:
    id: int
    zk: ZkClient
    controller: KafkaController
    epoch: int  # the broker epoch: czxid of its current registration
    proxy: ZkProxy | None = None


@dataclass
class Cluster:
    """Stand-in brokers, each with its own ZooKeeper session (optionally through a ZkProxy), registration and
    KafkaController. Like a broker, a node registers again when its session was replaced by a new one."""

    zk_session: ZkSessionFactory
    network: FakeNetwork = field(default_factory=FakeNetwork)
    nodes: dict[int, Node] = field(default_factory=dict)
    observer: ZkClient = None  # type: ignore[assignment]
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack)
    _tasks: list[asyncio.Task[Any]] = field(default_factory=list)

    async def __aenter__(self) -> Cluster:
        self.observer = await self._stack.enter_async_context(self.zk_session())
        return self

    async def __aexit__(self, *exc: object) -> None:
        for broker_id in list(self.nodes):
            await self.stop(broker_id)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._stack.aclose()

    async def start(self, *broker_ids: int, proxied: bool = False, session_timeout_ms: int = 4000,
                    max_request_bytes: int = MAX_REQUEST_BYTES) -> None:
        for broker_id in broker_ids:
            proxy = ZkProxy(self.observer.connect) if proxied else None
            connect = await proxy.start() if proxy is not None else self.observer.connect
            zk = ZkClient(connect, chroot=self.observer.chroot, session_timeout_ms=session_timeout_ms,
                          max_request_bytes=max_request_bytes)
            await zk.start()
            epoch = await register_broker(zk, broker_id, endpoints(broker_id))
            channel = ControllerChannelManager(broker_id, self.network.connect, backoff_ms=10, max_backoff_ms=50)
            controller = KafkaController(broker_id, zk, channel, LogConfig().with_topic_overrides)
            node = Node(broker_id, zk, controller, epoch, proxy)
            zk.add_state_listener(lambda state, node=node: self._on_state(node, state))
            await controller.startup()
            self.nodes[broker_id] = node

    def _on_state(self, node: Node, state: ZkState) -> None:
        if state is ZkState.NEW_SESSION:
            self._tasks.append(asyncio.get_running_loop().create_task(self._register_again(node)))

    async def _register_again(self, node: Node) -> None:
        node.epoch = await register_broker(node.zk, node.id, endpoints(node.id))

    async def stop(self, broker_id: int) -> None:
        """The broker goes: its controller resigns, its session (and its ephemeral znodes) ends at once."""
        node = self.nodes.pop(broker_id)
        await node.controller.shutdown()
        await node.zk.close()
        if node.proxy is not None:
            await node.proxy.close()

    async def active_controller(self, live: list[int] | None = None, epoch: int | None = None) -> Node:
        """The one active controller, once it knows the live brokers (default: every node) and has told them."""
        expected = sorted(self.nodes) if live is None else live

        def settled() -> bool:
            active = [n for n in self.nodes.values() if n.controller.is_active]
            return (
                len(active) == 1
                and (epoch is None or active[0].controller.epoch == epoch)
                and sorted(active[0].controller.context.live_brokers) == expected
                and self.network.knows_live_brokers(expected, active[0].controller.epoch)
            )

        await until(settled, f"one active controller that knows the live brokers {expected}")
        return next(n for n in self.nodes.values() if n.controller.is_active)

    async def znode(self, path: str) -> bytes | None:
        got = await self.observer.get_or_none(path)
        return got[0] if got is not None else None

    async def state(self, topic: str, partition: int) -> LeaderIsrAndControllerEpoch:
        data, stat = await self.observer.get(znodes.partition_state_path(topic, partition))
        return znodes.decode_partition_state(data, stat.version)

    async def leader_changes_isr(self, topic: str, partition: int, isr: list[int], *, notify: bool = True) -> None:
        """What a partition leader does when its ISR shrinks or expands (Kafka <= 2.6): a write of the state
        znode conditional on its version, then an /isr_change_notification sequential znode."""
        state = await self.state(topic, partition)
        ops: list[Any] = [
            SetOp(
                znodes.partition_state_path(topic, partition),
                znodes.encode_partition_state(replace(state, isr=tuple(isr))),
                state.zk_version,
            )
        ]
        if notify:
            notification = znodes.encode_isr_change([(topic, partition)])
            ops.append(CreateOp(znodes.isr_change_sequence_path(), notification, sequence=True))
        await self.observer.multi(ops)

    def leader_and_isr(self, to: int, topic: str, partition: int) -> list[tuple[int, int, list[int], int]]:
        """(leader, leader_epoch, isr, controller_epoch) of each LeaderAndIsr the broker got for the partition."""
        return [
            (s.leader, s.leader_epoch, s.isr, s.controller_epoch)
            for r in self.network.requests(LeaderAndIsrRequest, to=to)
            for s in r.partition_states
            if (s.topic, s.partition) == (topic, partition)
        ]

    def latest_metadata(self, to: int, topic: str, partition: int) -> Any:
        """The broker's latest UpdateMetadata state for the partition, None if it got none."""
        for request in reversed(self.network.requests(UpdateMetadataRequest, to=to)):
            for s in request.partition_states:
                if (s.topic, s.partition) == (topic, partition):
                    return s
        return None


def assigned(name: str, assignment: dict[int, list[int]], **configs: str) -> CreatableTopic:
    return CreatableTopic(
        name=name,
        num_partitions=-1,
        replication_factor=-1,
        assignments=[CreatableReplicaAssignment(partition=p, broker_ids=ids) for p, ids in assignment.items()],
        configs={k.replace("_", "."): v for k, v in configs.items()},
    )


async def create(node: Node, *topics: CreatableTopic) -> None:
    response = await node.controller.create_topics(CreateTopicsRequest(topics=list(topics), timeout_ms=5000))
    assert [(r.name, r.error_code) for r in response.topics] == [(t.name, ErrorCode.NONE) for t in topics]


def no_children(zk: ZkClient, path: str) -> Callable[[], Awaitable[bool]]:
    """A predicate for `until`: the znode at `path` has no children."""

    async def check() -> bool:
        return await zk.get_children(path) == []

    return check
