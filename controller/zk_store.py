"""`ControllerZkStore`: the active controller's reads of ZooKeeper and every write it makes there.

Every write is fenced (KAFKA-6082): a transaction that also checks the version of /controller_epoch the
controller got when elected, so a deposed controller cannot change anything, and it is refused at once while
this broker does not act as the controller (its session suspended). Partition state znodes are written only
here, conditionally on the version they were read at: the one place to change for batching or pipelining them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Protocol

from controller import zkdata
from controller.context import ControllerContext, TopicPartitionKey
from controller.election import LeaderAndIsr
from controller.event_manager import ControllerMovedError
from controller.zk import (
    BadVersionError,
    CheckOp,
    CreateOp,
    DeleteOp,
    NoNodeError,
    Op,
    OpResult,
    SetOp,
    ZkClient,
    ZkError,
)
from controller.zkdata import BrokerInfo, LeaderIsrAndControllerEpoch, PendingDeletion, TopicAssignment

log = logging.getLogger("controller")


class StoreHost(Protocol):
    """What the store needs of the controller."""

    broker_id: int
    inter_broker_listener_name: str
    context: ControllerContext

    @property
    def is_active(self) -> bool: ...


class ControllerZkStore:
    """Reads and fenced writes of the znodes the controller owns."""

    def __init__(self, zk: ZkClient, host: StoreHost) -> None:
        self.zk = zk
        self._host = host

    # -- fenced writes ----------------------------------------------------------------------

    async def fenced_multi(self, ops: list[Op]) -> list[OpResult]:
        """Apply ops atomically, only if /controller_epoch is still the version we were elected with, and
        only while this broker acts as the controller (not while its session is suspended).

        Errors of the ops keep their `op_index` into `ops`."""
        host = self._host
        if not host.is_active:
            raise ControllerMovedError(f"broker {host.broker_id} does not act as the controller now")
        check = CheckOp(zkdata.CONTROLLER_EPOCH_PATH, host.context.epoch_zk_version)
        try:
            return (await self.zk.multi([check, *ops]))[1:]
        except ZkError as e:
            if e.op_index == 0 and isinstance(e, BadVersionError | NoNodeError):
                raise ControllerMovedError(
                    f"controller epoch {host.context.epoch} is fenced: /controller_epoch changed"
                ) from None
            if e.op_index is not None:
                e.op_index -= 1
            raise

    async def write_partition_states(
        self, changes: list[tuple[TopicPartitionKey, LeaderIsrAndControllerEpoch, LeaderAndIsr]]
    ) -> list[LeaderIsrAndControllerEpoch | BaseException]:
        """Write partitions' new leader, leader epoch and ISR, each if its state znode is still at the version it
        was read at; per change, the state written (with its new znode version) or the error (BadVersionError if
        the znode moved on). The writes are pipelined, each its own fenced transaction."""
        return await asyncio.gather(*(self._write_partition_state(*change) for change in changes),
                                    return_exceptions=True)

    async def _write_partition_state(
        self, tp: TopicPartitionKey, read: LeaderIsrAndControllerEpoch, new: LeaderAndIsr
    ) -> LeaderIsrAndControllerEpoch:
        state = LeaderIsrAndControllerEpoch(
            leader=new.leader, leader_epoch=new.leader_epoch, isr=tuple(new.isr),
            controller_epoch=self._host.context.epoch,
        )
        path = zkdata.partition_state_path(*tp)
        (stat,) = await self.fenced_multi([SetOp(path, zkdata.encode_partition_state(state), read.zk_version)])
        return replace(state, zk_version=stat_version(stat))

    async def create_partition_states(
        self, topic: str, states: Mapping[int, LeaderIsrAndControllerEpoch], existing: set[str] | None,
        extra: Iterable[Op] = (),
    ) -> None:
        """Create the first states of new partitions, with `extra` ops in the same transaction before them;
        `existing` are the children of the topic's partitions znode (None if that does not exist either)."""
        await self.fenced_multi([*extra, *partition_state_ops(topic, states, existing)])

    async def write_topic(self, topic: str, assignment: TopicAssignment) -> None:
        """Rewrite a topic's znode: its replicas, a reassignment's adding and removing replicas, its topic id."""
        await self.fenced_multi([SetOp(zkdata.topic_path(topic), zkdata.encode_topic_znode(assignment))])

    async def delete_topic(self, topic: str, pending: Mapping[int, set[PendingDeletion]]) -> None:
        """Remove a deleted topic's znodes (its assignment and partition states, its config, its
        /admin/delete_topics entry) and write the pending replica deletions of brokers that were down, in one
        transaction."""
        zk = self.zk
        ops: list[Op] = []
        try:
            partitions = await zk.get_children(zkdata.topic_partitions_path(topic))
        except NoNodeError:
            partitions = None
        paths = [f"{zkdata.topic_partitions_path(topic)}/{child}" for child in partitions or ()]
        for path, children in zip(paths, await asyncio.gather(*map(zk.get_children, paths)), strict=True):
            ops.extend(DeleteOp(f"{path}/{child}") for child in children)
            ops.append(DeleteOp(path))
        if partitions is not None:
            ops.append(DeleteOp(zkdata.topic_partitions_path(topic)))
        ops.append(DeleteOp(zkdata.topic_path(topic)))
        for path in (zkdata.topic_config_path(topic), zkdata.delete_topic_path(topic)):
            if await zk.exists(path) is not None:
                ops.append(DeleteOp(path))
        ops.extend([op for broker, records in sorted(pending.items())
                    for op in await self._pending_deletion_ops(broker, records)])
        await self.fenced_multi(ops)

    async def write_pending_deletions(self, broker_id: int, records: set[PendingDeletion]) -> None:
        """Replace a broker's pending replica deletions (removing its znode when there are none)."""
        await self.fenced_multi(await self._pending_deletion_ops(broker_id, records))

    async def _pending_deletion_ops(self, broker_id: int, records: set[PendingDeletion]) -> list[Op]:
        path = zkdata.pending_replica_deletions_path(broker_id)
        exists = await self.zk.exists(path) is not None
        if not records:
            return [DeleteOp(path)] if exists else []
        data = zkdata.encode_pending_deletions(records)
        return [SetOp(path, data) if exists else CreateOp(path, data)]

    async def delete_if_exists(self, path: str) -> None:
        """Remove an admin znode the controller is done with."""
        with contextlib.suppress(NoNodeError):
            await self.fenced_multi([DeleteOp(path)])

    async def set_or_delete(self, path: str, data: bytes | None) -> None:
        """Rewrite an admin znode the controller works through, or remove it (data None) once done."""
        if data is None:
            await self.delete_if_exists(path)
            return
        exists = await self.zk.exists(path) is not None
        await self.fenced_multi([SetOp(path, data) if exists else CreateOp(path, data)])

    # -- reads ------------------------------------------------------------------------------

    async def read_partition_states(
        self, partitions: list[TopicPartitionKey]
    ) -> dict[TopicPartitionKey, LeaderIsrAndControllerEpoch]:
        """The state znodes of partitions (those that exist and parse)."""
        found = await asyncio.gather(*(self.zk.get_or_none(zkdata.partition_state_path(*tp)) for tp in partitions))
        states: dict[TopicPartitionKey, LeaderIsrAndControllerEpoch] = {}
        for tp, got in zip(partitions, found, strict=True):
            if got is None:
                continue
            try:
                states[tp] = zkdata.decode_partition_state(got[0], got[1].version)
            except zkdata.ZkDataError as e:
                log.error("Controller %d ignores the state of %s-%d: %s", self._host.broker_id, *tp, e)
        return states

    async def read_live_brokers(self) -> dict[int, BrokerInfo]:
        ids = [int(name) for name in await self.zk.get_children(zkdata.BROKER_IDS_PATH) if name.isdigit()]
        found = await asyncio.gather(*(self.zk.get_or_none(zkdata.broker_path(b)) for b in ids))
        brokers: dict[int, BrokerInfo] = {}
        for broker_id, got in zip(ids, found, strict=True):
            if got is None:
                continue
            try:
                brokers[broker_id] = zkdata.decode_broker(broker_id, got[0], got[1].czxid,
                                                          self._host.inter_broker_listener_name)
            except zkdata.ZkDataError as e:
                log.error("Controller %d ignores broker %d: %s", self._host.broker_id, broker_id, e)
        return brokers

    async def read_assignment(self, topic: str) -> TopicAssignment | None:
        """The topic's znode, None if the topic does not exist (or its znode does not parse)."""
        got = await self.zk.get_or_none(zkdata.topic_path(topic))
        if got is None:
            return None
        try:
            return zkdata.decode_topic_znode(got[0])
        except zkdata.ZkDataError as e:
            log.error("Controller %d ignores topic %s: %s", self._host.broker_id, topic, e)
            return None

    async def read_pending_deletions(self) -> dict[int, set[PendingDeletion]]:
        """Every broker's pending replica deletions."""
        pending: dict[int, set[PendingDeletion]] = {}
        for name in await self.zk.get_children(zkdata.PENDING_REPLICA_DELETIONS_PATH):
            got = await self.zk.get_or_none(f"{zkdata.PENDING_REPLICA_DELETIONS_PATH}/{name}")
            if got is None or not name.isdigit():
                continue
            try:
                pending[int(name)] = set(zkdata.decode_pending_deletions(got[0]))
            except zkdata.ZkDataError as e:
                log.error("Controller %d ignores the pending deletions of broker %s: %s", self._host.broker_id,
                          name, e)
        return pending


def partition_state_ops(
    topic: str, states: Mapping[int, LeaderIsrAndControllerEpoch], existing: set[str] | None
) -> list[Op]:
    """Creates for the partition znodes and state znodes of `states`; `existing` are the children of the
    topic's partitions znode (None if that does not exist either)."""
    ops: list[Op] = [CreateOp(zkdata.topic_partitions_path(topic))] if existing is None else []
    for partition, state in sorted(states.items()):
        if str(partition) not in (existing or ()):
            ops.append(CreateOp(zkdata.topic_partition_path(topic, partition)))
        ops.append(CreateOp(zkdata.partition_state_path(topic, partition), zkdata.encode_partition_state(state)))
    return ops


def stat_version(result: OpResult) -> int:
    assert result is not None and not isinstance(result, str)
    return result.version
