"""`ControllerZkStore`: the active controller's reads of ZooKeeper and every write it makes there.

Every write is fenced (KAFKA-6082): a transaction that also checks the version of /controller_epoch the
controller got when elected, so a deposed controller cannot change anything, and it is refused at once while
this broker does not act as the controller (its session suspended). Partition state znodes are written only
here, conditionally on the version they were read at.

Writes whose operations grow with a topic's partition count (creating its partition states, deleting it, deleting
ISR change notifications) go as several fenced transactions, each under the ZooKeeper request budget, pipelined
(`fenced_transactions`). What one transaction did atomically is then done in steps, ordered so that a controller
failing between any two leaves a state the next one reads and completes: a topic's znode before its partitions'
states (partitions without a state are New and initialised at failover), a partition's znode with its state; on
deletion, each partition's state before its znode, and the topic's znode and its /admin/delete_topics entry last
(a topic queued for deletion that still exists is deleted again by the next controller).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace

from controller.activity import ControllerActivity
from controller.context import ControllerContext
from controller.election import LeaderAndIsr
from controller.event_manager import ControllerMovedError
from protocol.topic_partition import TopicPartition
from zk import znodes
from zk.client import (
    BadVersionError,
    CheckOp,
    CreateOp,
    DeleteOp,
    NoNodeError,
    Op,
    OpResult,
    RolledBackError,
    SetOp,
    ZkClient,
    ZkError,
)
from zk.znodes import BrokerInfo, LeaderIsrAndControllerEpoch, PendingDeletion, TopicAssignment

log = logging.getLogger("controller")

# What a znode holds, about, at most, for packing bulk reads (ZkClient.get_many): a partition's state (its ISR a
# few broker ids); a topic's assignment or a broker's pending deletions (a few thousand partitions; a larger one
# only makes one answer larger than estimated, still under jute.maxbuffer).
PARTITION_STATE_BYTES = 256
LARGE_ZNODE_BYTES = 64 * 1024


class ControllerZkStore:
    """Reads and fenced writes of the znodes the controller owns."""

    def __init__(self, zk: ZkClient, context: ControllerContext, activity: ControllerActivity, *,
                 inter_broker_listener_name: str) -> None:
        self.zk = zk
        self._context = context
        self._activity = activity
        self._inter_broker_listener_name = inter_broker_listener_name  # the listener brokers are reached on

    # -- fenced writes ----------------------------------------------------------------------

    async def fenced_multi(self, ops: list[Op]) -> list[OpResult]:
        """Apply ops atomically, only if /controller_epoch is still the version we were elected with, and
        only while this broker acts as the controller (not while its session is suspended).

        Errors of the ops keep their `op_index` into `ops`."""
        check = self._fence()
        try:
            return (await self.zk.multi([check, *ops]))[1:]
        except ZkError as e:
            raise self._fenced(e) from None

    def _fence(self) -> CheckOp:
        """The check that heads every write: /controller_epoch at the version this controller was elected with.
        ControllerMovedError at once while this broker does not act as the controller."""
        if not self._activity.is_active:
            raise ControllerMovedError(f"broker {self._activity.broker_id} does not act as the controller now")
        return CheckOp(znodes.CONTROLLER_EPOCH_PATH, self._context.epoch_zk_version)

    async def fenced_transactions(
        self, groups: Sequence[Sequence[Op]], *, head_first: bool = False
    ) -> list[list[OpResult] | ZkError]:
        """Apply groups of ops, each group atomically, in as few fenced transactions under the request budget as
        they fit in, pipelined in order (each transaction sees the effects of those before it; one that fails does
        not stop the next). Per group, the results of its ops, or its error: the failing op's (`op_index` into the
        group), RolledBackError for the other groups of a failed transaction.

        With `head_first`, the transaction holding the first group is applied before the others are sent, and its
        error is raised (nothing else was sent): the others depend on its having succeeded. ControllerMovedError
        if this controller is fenced, once every transaction sent is answered."""
        check = self._fence()
        runs = self.zk.transactions(groups, prefix=[check])
        outcomes: list[list[OpResult] | ZkError] = []
        if head_first and runs:
            head = await self.zk.multi_pipelined([self._transaction(check, groups, runs[0])])
            error = self._fenced_error(head[0])
            if error is not None:
                raise error
            outcomes += self._group_outcomes(groups, runs[0], head[0])
            runs = runs[1:]
        answers = await self.zk.multi_pipelined([self._transaction(check, groups, run) for run in runs])
        for run, answer in zip(runs, answers, strict=True):
            error = self._fenced_error(answer)
            if isinstance(error, ControllerMovedError):
                raise error
            outcomes += self._group_outcomes(groups, run, answer)
        return outcomes

    @staticmethod
    def _transaction(check: CheckOp, groups: Sequence[Sequence[Op]], run: range) -> list[Op]:
        return [check, *(op for index in run for op in groups[index])]

    def _fenced_error(self, answer: list[OpResult] | ZkError) -> ZkError | ControllerMovedError | None:
        """A transaction's error (see _fenced); None if it was applied."""
        return self._fenced(answer) if isinstance(answer, ZkError) else None

    def _fenced(self, answer: ZkError) -> ZkError | ControllerMovedError:
        """A fenced transaction's error: ControllerMovedError if it failed on the fence, else the error with its
        `op_index` into the ops after the fence."""
        if answer.op_index == 0 and isinstance(answer, BadVersionError | NoNodeError):
            return ControllerMovedError(
                f"controller epoch {self._context.epoch} is fenced: /controller_epoch changed")
        if answer.op_index is not None:
            answer.op_index -= 1
        return answer

    @staticmethod
    def _group_outcomes(
        groups: Sequence[Sequence[Op]], run: range, answer: list[OpResult] | ZkError
    ) -> list[list[OpResult] | ZkError]:
        """Split a transaction's answer (fence removed) by the groups it held."""
        outcomes: list[list[OpResult] | ZkError] = []
        start = 1 if not isinstance(answer, ZkError) else 0
        for index in run:
            size = len(groups[index])
            if not isinstance(answer, ZkError):
                outcomes.append(answer[start:start + size])
            elif answer.op_index is None:  # the transaction as a whole failed (no session): so did every group
                outcomes.append(answer)
            elif start <= answer.op_index < start + size:
                error = copy.copy(answer)
                error.op_index = answer.op_index - start
                outcomes.append(error)
            else:
                outcomes.append(RolledBackError(f"rolled back with a failed operation: {answer}"))
            start += size
        return outcomes

    async def write_partition_states(
        self, changes: list[tuple[TopicPartition, LeaderIsrAndControllerEpoch, LeaderAndIsr]],
        contended: Collection[TopicPartition] = (),
    ) -> list[LeaderIsrAndControllerEpoch | ZkError]:
        """Write partitions' new leader, leader epoch and ISR, each if its state znode is still at the version it
        was read at; per change, the state written (with its new znode version) or the error: BadVersionError if
        the znode moved on, RolledBackError if another partition's write in the same transaction failed (this one
        was not written and is still to do).

        Many partitions a fenced transaction, under the request budget, pipelined (`fenced_transactions`): each
        write is still conditional on its own version and fenced by the controller epoch, as with a transaction a
        partition; a transaction applies all of its writes or none. The `contended` partitions (whose writes
        conflicted before) go each in a transaction of its own: one whose state keeps changing rolls back nobody
        else's write."""
        if not changes:
            return []
        epoch = self._context.epoch
        states = [LeaderIsrAndControllerEpoch(leader=new.leader, leader_epoch=new.leader_epoch, isr=tuple(new.isr),
                                              controller_epoch=epoch) for _tp, _read, new in changes]
        groups = [[SetOp(znodes.partition_state_path(*tp), znodes.encode_partition_state(state), read.zk_version)]
                  for (tp, read, _new), state in zip(changes, states, strict=True)]
        apart = [index for index, (tp, _read, _new) in enumerate(changes) if tp in contended]
        together = [index for index, (tp, _read, _new) in enumerate(changes) if tp not in contended]
        answers = await asyncio.gather(self.fenced_transactions([groups[index] for index in together]),
                                       *(self.fenced_transactions([groups[index]]) for index in apart),
                                       return_exceptions=True)  # every transaction sent is answered before a raise
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer
        outcomes = dict(zip(together, answers[0], strict=True))
        outcomes.update((index, answer[0]) for index, answer in zip(apart, answers[1:], strict=True))
        return [outcome if isinstance(outcome := outcomes[index], ZkError)
                else replace(state, zk_version=stat_version(outcome[0])) for index, state in enumerate(states)]

    async def create_partition_states(
        self, topic: str, states: Mapping[int, LeaderIsrAndControllerEpoch], existing: set[str] | None,
        extra: Iterable[Op] = (),
    ) -> dict[int, ZkError]:
        """Create the first states of new partitions, with `extra` ops in the same transaction before them;
        `existing` are the children of the topic's partitions znode (None if that does not exist either).

        The transaction with `extra` (and the topics's partitions znode, if missing) is applied first, and its
        error raised; then the rest, pipelined. Returns the partitions whose state could not be written, with
        why (they are still New)."""
        head, groups = partition_state_groups(topic, states, existing)
        outcomes = await self.fenced_transactions([[*extra, *head], *groups], head_first=True)
        return {partition: outcome for partition, outcome in zip(sorted(states), outcomes[1:], strict=True)
                if isinstance(outcome, ZkError)}

    async def write_topic(self, topic: str, assignment: TopicAssignment) -> None:
        """Rewrite a topic's znode: its replicas, a reassignment's adding and removing replicas, its topic id."""
        await self.fenced_multi([SetOp(znodes.topic_path(topic), znodes.encode_topic_znode(assignment))])

    async def delete_topic(self, topic: str, pending: Mapping[int, set[PendingDeletion]]) -> None:
        """Remove a deleted topic's znodes (its assignment and partition states, its config, its
        /admin/delete_topics entry) and write the pending replica deletions of brokers that were down.

        In steps, each a group of a fenced transaction: the pending deletions first (the next controller could
        not tell which replicas were left once their partitions' states are gone), then each partition's state
        and znode, the partitions znode, and last the topic's znode, config and queue entry together; a step
        fails (and with it the ones depending on it) while anything under it is left. Raises the first error."""
        zk = self.zk
        try:
            partitions = await zk.get_children(znodes.topic_partitions_path(topic))
        except NoNodeError:
            partitions = None
        groups: list[list[Op]] = [await self._pending_deletion_ops(broker, records)
                                  for broker, records in sorted(pending.items())]
        paths = [f"{znodes.topic_partitions_path(topic)}/{child}" for child in partitions or ()]
        for path, children in zip(paths, await zk.get_children_many(paths, names_bytes=64), strict=True):
            if children is not None:  # gone meanwhile (only this controller deletes them: not expected)
                groups.append([*(DeleteOp(f"{path}/{child}") for child in children), DeleteOp(path)])
        if partitions is not None:
            groups.append([DeleteOp(znodes.topic_partitions_path(topic))])
        last: list[Op] = [DeleteOp(znodes.topic_path(topic))]
        for path in (znodes.topic_config_path(topic), znodes.delete_topic_path(topic)):
            if await zk.exists(path) is not None:
                last.append(DeleteOp(path))
        groups.append(last)
        for outcome in await self.fenced_transactions([group for group in groups if group]):
            if isinstance(outcome, ZkError):
                raise outcome

    async def write_pending_deletions(self, broker_id: int, records: set[PendingDeletion]) -> None:
        """Replace a broker's pending replica deletions (removing its znode when there are none)."""
        await self.fenced_multi(await self._pending_deletion_ops(broker_id, records))

    async def _pending_deletion_ops(self, broker_id: int, records: set[PendingDeletion]) -> list[Op]:
        path = znodes.pending_replica_deletions_path(broker_id)
        exists = await self.zk.exists(path) is not None
        if not records:
            return [DeleteOp(path)] if exists else []
        data = znodes.encode_pending_deletions(records)
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
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """The state znodes of partitions (those that exist and parse), read in few requests."""
        found = await self.zk.get_many([znodes.partition_state_path(*tp) for tp in partitions],
                                       data_bytes=PARTITION_STATE_BYTES)
        states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        for tp, got in zip(partitions, found, strict=True):
            if got is None:
                continue
            try:
                states[tp] = znodes.decode_partition_state(got[0], got[1].version)
            except znodes.ZkDataError as e:
                log.error("Controller %d ignores the state of %s-%d: %s", self._activity.broker_id, *tp, e)
        return states

    async def read_live_brokers(self) -> dict[int, BrokerInfo]:
        ids = [int(name) for name in await self.zk.get_children(znodes.BROKER_IDS_PATH) if name.isdigit()]
        found = await self.zk.get_many([znodes.broker_path(b) for b in ids])
        brokers: dict[int, BrokerInfo] = {}
        for broker_id, got in zip(ids, found, strict=True):
            if got is None:
                continue
            try:
                brokers[broker_id] = znodes.decode_broker(broker_id, got[0], got[1].czxid,
                                                          self._inter_broker_listener_name)
            except znodes.ZkDataError as e:
                log.error("Controller %d ignores broker %d: %s", self._activity.broker_id, broker_id, e)
        return brokers

    async def read_assignments(self, topics: Sequence[str]) -> dict[str, TopicAssignment]:
        """The znodes of topics (those that exist and parse), read in few requests."""
        found = await self.zk.get_many([znodes.topic_path(topic) for topic in topics], data_bytes=LARGE_ZNODE_BYTES)
        assignments: dict[str, TopicAssignment] = {}
        for topic, got in zip(topics, found, strict=True):
            if got is None:
                continue
            try:
                assignments[topic] = znodes.decode_topic_znode(got[0])
            except znodes.ZkDataError as e:
                log.error("Controller %d ignores topic %s: %s", self._activity.broker_id, topic, e)
        return assignments

    async def read_pending_deletions(self) -> dict[int, set[PendingDeletion]]:
        """Every broker's pending replica deletions."""
        pending: dict[int, set[PendingDeletion]] = {}
        names = [name for name in await self.zk.get_children(znodes.PENDING_REPLICA_DELETIONS_PATH) if name.isdigit()]
        found = await self.zk.get_many([f"{znodes.PENDING_REPLICA_DELETIONS_PATH}/{name}" for name in names],
                                       data_bytes=LARGE_ZNODE_BYTES)
        for name, got in zip(names, found, strict=True):
            if got is None:
                continue
            try:
                pending[int(name)] = set(znodes.decode_pending_deletions(got[0]))
            except znodes.ZkDataError as e:
                log.error("Controller %d ignores the pending deletions of broker %s: %s", self._activity.broker_id,
                          name, e)
        return pending


def partition_state_groups(
    topic: str, states: Mapping[int, LeaderIsrAndControllerEpoch], existing: set[str] | None
) -> tuple[list[Op], list[list[Op]]]:
    """The creates for the partition znodes and state znodes of `states`: the topic's partitions znode if it
    does not exist (`existing` None; else its children), then per partition in order, its znode (if missing)
    with its state."""
    head: list[Op] = [CreateOp(znodes.topic_partitions_path(topic))] if existing is None else []
    groups: list[list[Op]] = []
    for partition, state in sorted(states.items()):
        group: list[Op] = []
        if str(partition) not in (existing or ()):
            group.append(CreateOp(znodes.topic_partition_path(topic, partition)))
        group.append(CreateOp(znodes.partition_state_path(topic, partition), znodes.encode_partition_state(state)))
        groups.append(group)
    return head, groups


def stat_version(result: OpResult) -> int:
    assert result is not None and not isinstance(result, str)
    return result.version
