"""`ControllerZkStore`: the active controller's reads of ZooKeeper and every write it makes there.

Every write is fenced (KAFKA-6082): a transaction that also checks the version of /controller_epoch the
controller got when elected, so a deposed controller cannot change anything, and it is refused at once while
this broker does not act as the controller (its session suspended). Partition state znodes are written only
here, conditionally on the version they were read at: the one place to change for batching or pipelining them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Protocol

from controller import zkdata
from controller.context import ControllerContext, TopicPartitionKey
from controller.election import LeaderAndIsr
from controller.event_manager import ControllerMovedError
from controller.zk import BadVersionError, CheckOp, CreateOp, NoNodeError, Op, OpResult, SetOp, ZkClient, ZkError
from controller.zkdata import BrokerInfo, LeaderIsrAndControllerEpoch

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

    async def write_partition_state(
        self, tp: TopicPartitionKey, read: LeaderIsrAndControllerEpoch, new: LeaderAndIsr
    ) -> LeaderIsrAndControllerEpoch:
        """Write a partition's new leader, leader epoch and ISR, if its state znode is still at the version it
        was read at (BadVersionError otherwise); returns the state written, with its new znode version."""
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

    async def read_assignment(self, topic: str) -> dict[int, list[int]] | None:
        """The topic's replica assignment, None if the topic does not exist (or its znode does not parse)."""
        got = await self.zk.get_or_none(zkdata.topic_path(topic))
        if got is None:
            return None
        try:
            return zkdata.decode_topic_assignment(got[0])
        except zkdata.ZkDataError as e:
            log.error("Controller %d ignores topic %s: %s", self._host.broker_id, topic, e)
            return None


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
