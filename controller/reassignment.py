"""`ReassignmentManager`: moving a partition's replicas to a target set (Kafka's onPartitionReassignment, with the
topic znode's adding/removing replicas of KIP-455). ORS is the original replica set, TRS the target, RS the
assigned one, AR = TRS - ORS the replicas added and RR = ORS - TRS those removed:

Phase A, while TRS is not all in the ISR:
  A1/A2  RS = TRS + ORS (with AR and RR) in the topic znode and in the context;
  A4     the replicas in AR become NewReplica;
  A3     the leader epoch goes up and every live replica of RS gets LeaderAndIsr: the new ones start following.
Phase B, once TRS is in the ISR (checked on ISR change notifications, broker start-ups and failover):
  B1/B2  TRS is Online, RS = TRS in the context;
  B3     a leader outside TRS (or not live) is replaced by the first live TRS replica in the ISR; otherwise the leader
         epoch goes up; TRS gets LeaderAndIsr;
  B4     RR leaves the ISR (leader epoch + 1);
  B5     RR is deleted (StopReplica with delete; a broker that is down deletes it when back);
  B6/B7  RS = TRS in the topic znode, and the partition leaves /admin/reassign_partitions (the znode goes with
         its last partition); every broker gets the new metadata.

Reassignments come from /admin/reassign_partitions or from AlterPartitionReassignments (KIP-455), which may also
change the target of one in progress (replicas no longer wanted are stopped and deleted at once) or cancel it (null
replicas: the target becomes ORS again); the latest request for a partition wins over its znode entry.
ListPartitionReassignments lists those in progress (RS, AR, RR).

The topic znode is written with RS = TRS last: it is the only place ORS is kept, so a new controller resumes any
reassignment from ZooKeeper. A target broker that is down holds phase A until it comes back. Topic deletion waits
for its topic's reassignments.
"""

from __future__ import annotations

import logging

from controller.activity import ControllerActivity
from controller.channel import ControllerBrokerRequestBatch
from controller.context import ControllerContext, PartitionReassignment
from controller.election import LeaderAndIsr, reassign_partition_election
from controller.partition_state_machine import Decide, PartitionChange, PartitionStateMachine
from controller.replica_state_machine import Replica, ReplicaState, ReplicaStateMachine
from controller.request_sender import BrokerRequestSender
from controller.topic_deletion import TopicDeletionManager
from controller.zk_store import ControllerZkStore
from protocol.apis.reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
    alter_partition_reassignments_error,
    list_partition_reassignments_error,
)
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition
from zk import znodes
from zk.client import ZkClient
from zk.znodes import LeaderIsrAndControllerEpoch, TopicAssignment

log = logging.getLogger("controller")
Outcome = tuple[ErrorCode, str]


class ReassignmentManager:
    """Starts, resumes and completes partition reassignments."""

    def __init__(self, context: ControllerContext, activity: ControllerActivity, zk: ZkClient,
                 store: ControllerZkStore, requests: BrokerRequestSender, partition_states: PartitionStateMachine,
                 replica_states: ReplicaStateMachine, deletion: TopicDeletionManager) -> None:
        self._context = context
        self._activity = activity
        self._zk = zk
        self._store = store
        self._requests = requests
        self._partition_states = partition_states
        self._replica_states = replica_states
        self._deletion = deletion

    def load(self, topic: str, znode: TopicAssignment) -> None:
        """Reassignments in progress recorded in a topic znode (adding/removing replicas) go into the context."""
        for partition, replicas in znode.partitions.items():
            adding, removing = znode.adding.get(partition, []), znode.removing.get(partition, [])
            if adding or removing:
                self._context.reassignments[TopicPartition(topic, partition)] = PartitionReassignment(
                    original=tuple(r for r in replicas if r not in adding),
                    target=tuple(r for r in replicas if r not in removing),
                )

    # -- /admin/reassign_partitions ---------------------------------------------------------

    async def process_reassign_partitions_znode(self) -> None:
        """Start the reassignments asked in /admin/reassign_partitions; drop the entries that are done, invalid,
        or of topics being deleted."""
        if not self._activity.is_active:
            return
        got = await self._zk.get_or_none(znodes.REASSIGN_PARTITIONS_PATH)
        if got is None:
            return
        try:
            wanted = {TopicPartition(*tp): target for tp, target in znodes.decode_reassignment(got[0]).items()}
        except znodes.ZkDataError as e:
            log.error("Controller %d removes the malformed %s: %s", self._activity.broker_id,
                      znodes.REASSIGN_PARTITIONS_PATH, e)
            await self._store.delete_if_exists(znodes.REASSIGN_PARTITIONS_PATH)
            return
        finished: list[TopicPartition] = []
        for tp, target in sorted(wanted.items()):
            problem = self._problem(tp, target)
            ongoing = self._context.reassignments.get(tp)
            if problem:
                log.error("Controller %d: reassignment of %s-%d to %s ignored: %s", self._activity.broker_id, *tp,
                          target, problem)
                finished.append(tp)
            elif ongoing is not None:
                if list(ongoing.target) != target:
                    log.warning("Controller %d: %s-%d is being reassigned to %s already; %s ignored",
                                self._activity.broker_id, *tp, list(ongoing.target), target)
            elif self._context.replicas(*tp) == target:
                finished.append(tp)
            else:
                log.info("Controller %d: reassigning %s-%d from %s to %s", self._activity.broker_id, *tp,
                         self._context.replicas(*tp), target)
                await self._reassign(tp, PartitionReassignment(tuple(self._context.replicas(*tp)), tuple(target)))
        await self._remove_from_znode(finished)

    def _problem(self, tp: TopicPartition, target: list[int]) -> str:
        context = self._context
        if tp.topic in context.topics_to_delete:
            return "the topic is being deleted"
        if tp.partition not in context.assignments.get(tp.topic, {}):
            return "no such partition"
        if not target:
            return "no replicas"
        if len(set(target)) != len(target):
            return "a replica is given twice"
        return ""

    async def _remove_from_znode(self, partitions: list[TopicPartition]) -> None:
        """Take finished partitions out of /admin/reassign_partitions; the znode goes with its last one."""
        if not partitions:
            return
        got = await self._zk.get_or_none(znodes.REASSIGN_PARTITIONS_PATH)
        if got is None:
            return
        try:
            remaining = {tp: r for tp, r in znodes.decode_reassignment(got[0]).items() if tp not in partitions}
        except znodes.ZkDataError:
            remaining = {}
        await self._store.set_or_delete(znodes.REASSIGN_PARTITIONS_PATH,
                                        znodes.encode_reassignment(remaining) if remaining else None)

    # -- AlterPartitionReassignments and ListPartitionReassignments (KIP-455) ----------------

    async def handle_alter_partition_reassignments(self, request: AlterPartitionReassignmentsRequest
                                                   ) -> AlterPartitionReassignmentsResponse:
        """AlterPartitionReassignments, processed as a controller event: per partition NONE (started, changed or
        cancelled) or why not. NOT_CONTROLLER elsewhere."""
        targets = {TopicPartition(t.name, p.partition_index): p.replicas for t in request.topics for p in t.partitions}
        outcomes = await self._activity.answer("AlterPartitionReassignments", lambda: self.alter(targets),
                                               lambda why: why)
        if isinstance(outcomes, str):
            return alter_partition_reassignments_error(request, ErrorCode.NOT_CONTROLLER, outcomes)
        by_topic: dict[str, list[ReassignablePartitionResponse]] = {}
        for (topic, partition), (code, why) in sorted(outcomes.items()):
            by_topic.setdefault(topic, []).append(ReassignablePartitionResponse(
                partition_index=partition, error_code=code, error_message=why or None))
        return AlterPartitionReassignmentsResponse(error_code=ErrorCode.NONE, error_message=None, responses=[
            ReassignableTopicResponse(name=topic, partitions=results) for topic, results in by_topic.items()])

    async def handle_list_partition_reassignments(self, request: ListPartitionReassignmentsRequest
                                                  ) -> ListPartitionReassignmentsResponse:
        """ListPartitionReassignments: the reassignments in progress among the partitions named (all if none
        are); partitions not being reassigned are left out. NOT_CONTROLLER elsewhere."""
        named = None if request.topics is None else {
            TopicPartition(t.name, p) for t in request.topics for p in t.partition_indexes}
        ongoing = await self._activity.answer("ListPartitionReassignments", lambda: self.ongoing(named),
                                              lambda why: why)
        if isinstance(ongoing, str):
            return list_partition_reassignments_error(request, ErrorCode.NOT_CONTROLLER, ongoing)
        by_topic: dict[str, list[OngoingPartitionReassignment]] = {}
        for (topic, partition), reassignment in sorted(ongoing.items()):
            by_topic.setdefault(topic, []).append(OngoingPartitionReassignment(
                partition_index=partition, replicas=reassignment.replicas, adding_replicas=reassignment.adding,
                removing_replicas=reassignment.removing))
        return ListPartitionReassignmentsResponse(error_code=ErrorCode.NONE, error_message=None, topics=[
            OngoingTopicReassignment(name=topic, partitions=partitions) for topic, partitions in by_topic.items()])

    async def ongoing(self, named: set[TopicPartition] | None) -> dict[TopicPartition, PartitionReassignment]:
        """The reassignments in progress (of the partitions named, if any are)."""
        return {tp: r for tp, r in self._context.reassignments.items() if named is None or tp in named}

    async def alter(self, targets: dict[TopicPartition, list[int] | None]) -> dict[TopicPartition, Outcome]:
        """Start, change or cancel (None) reassignments, as Kafka's controller does for the API: a new target
        replaces one in progress (keeping its original replicas), a cancel goes back to the original replicas,
        and either takes precedence over /admin/reassign_partitions, whose entry for the partition goes."""
        context = self._context
        outcomes: dict[TopicPartition, Outcome] = {}
        wanted: dict[TopicPartition, PartitionReassignment] = {}
        for tp, target in targets.items():
            problem = self._api_problem(tp, target)
            ongoing = context.reassignments.get(tp)
            if problem[0] == ErrorCode.NONE and target is None and ongoing is None:
                problem = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, f"No reassignment of {tp.topic}-{tp.partition} "
                                                                  "is in progress.")
            outcomes[tp] = problem
            if problem[0] == ErrorCode.NONE:
                original = ongoing.original if ongoing is not None else tuple(context.replicas(*tp))
                wanted[tp] = PartitionReassignment(original, original if target is None else tuple(target))
        await self._remove_from_znode(list(wanted))
        for tp, reassignment in sorted(wanted.items()):
            if tp in context.reassignments or context.replicas(*tp) != list(reassignment.target):
                log.info("Controller %d: reassigning %s-%d to %s (requested)", self._activity.broker_id, *tp,
                         list(reassignment.target))
                await self._replace(tp, reassignment)
        return outcomes

    def _api_problem(self, tp: TopicPartition, target: list[int] | None) -> Outcome:
        """Kafka's checks of an API reassignment (validateReplicas): the partition exists, the target has
        replicas, distinct and not negative, and the replicas it adds are on live brokers."""
        context = self._context
        if tp.topic in context.topics_to_delete or tp.partition not in context.assignments.get(tp.topic, {}):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
        if target is None:
            return ErrorCode.NONE, ""
        if not target:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Empty replica list specified in partition reassignment."
        if len(set(target)) != len(target):
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Duplicate replica ids in partition reassignment replica list: {target}")
        if any(r < 0 for r in target):
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Invalid broker id in replica list: {target}"
        ongoing = context.reassignments.get(tp)
        original = ongoing.original if ongoing is not None else context.replicas(*tp)
        added = [r for r in target if r not in original]
        if not set(added) <= set(context.live_brokers):
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Replica assignment has brokers that are not alive. "
                    f"Replica list: {added}, live broker list: {sorted(context.live_brokers)}")
        return ErrorCode.NONE, ""

    async def _replace(self, tp: TopicPartition, reassignment: PartitionReassignment) -> None:
        """Run an API reassignment: the replicas of the one in progress that it does not keep are stopped and
        deleted first (Kafka's updateCurrentReassignment), then it goes on as any other."""
        context = self._context
        dropped = [r for r in context.replicas(*tp) if r not in reassignment.replicas]
        if dropped:
            context.reassignments[tp] = reassignment
            context.assignments[tp.topic][tp.partition] = reassignment.replicas
            await self._write_assignment(tp.topic)
            reason = f"reassignment to {list(reassignment.target)}: replicas {dropped} no longer wanted"
            batch = self._requests.new_batch()
            changed: list[TopicPartition] = []
            state = context.states.get(tp)
            if state is not None and state.leader in dropped:
                changed = await self._partition_states.update_partition_states(
                    [tp], _leader_within(reassignment.replicas, context.electable(), reason))
            started = await self._drop_replicas(batch, tp, dropped, changed, reason)
            self._deletion.track(self._requests.send(batch).stop_replica, started)
        await self._reassign(tp, reassignment)

    # -- the phases -------------------------------------------------------------------------

    async def resume(self, partitions: list[TopicPartition] | None = None) -> None:
        """Carry on reassignments (all, or of `partitions`): at failover, when target brokers start, when ISRs
        change. Phase A is redone (the leader epoch goes up again) unless phase B can run."""
        context = self._context
        for tp in sorted(context.reassignments if partitions is None else set(partitions) & set(context.reassignments)):
            await self._reassign(tp, context.reassignments[tp])

    async def on_isr_changes(self, partitions: list[TopicPartition]) -> None:
        """ISRs changed: complete the reassignments whose target replicas have all joined."""
        context = self._context
        for tp in sorted(set(partitions) & set(context.reassignments)):
            if self._target_caught_up(tp):
                await self._complete(tp)

    async def on_brokers_started(self, started: list[int]) -> None:
        """Target brokers came back: their reassignments go on (Kafka's onBrokerStartup)."""
        context = self._context
        await self.resume([tp for tp, r in context.reassignments.items() if set(r.adding) & set(started)])

    async def _reassign(self, tp: TopicPartition, reassignment: PartitionReassignment) -> None:
        self._context.reassignments[tp] = reassignment
        if self._target_caught_up(tp):
            await self._complete(tp)
        else:
            await self._start(tp)

    def _target_caught_up(self, tp: TopicPartition) -> bool:
        """Phase B may run: every target replica is in the ISR, and a live target replica can lead."""
        context = self._context
        state = context.states.get(tp)
        reassignment = context.reassignments[tp]
        if state is None or not set(reassignment.target) <= set(state.isr):
            return False
        return reassign_partition_election(reassignment.target, state.isr, context.electable()) is not None

    async def _start(self, tp: TopicPartition) -> None:
        """Phase A: RS = TRS + ORS, new replicas started, leader epoch bumped and sent to RS."""
        context = self._context
        reassignment = context.reassignments[tp]
        context.assignments[tp.topic][tp.partition] = reassignment.replicas
        await self._write_assignment(tp.topic)
        self._replica_states.to_new(self._replica_states.in_state([(*tp, b) for b in reassignment.adding],
                                                                  ReplicaState.NON_EXISTENT))
        reason = (f"reassignment to {list(reassignment.target)}: replicas {reassignment.replicas} "
                  f"(adding {reassignment.adding}, removing {reassignment.removing})")
        changed = await self._partition_states.update_partition_states([tp], _bump_epoch(reason))
        batch = self._requests.new_batch()
        self._partition_states.queue_changes(batch, changed)
        self._requests.send(batch)
        log.info("Controller %d: %s-%d: waiting for %s to join the ISR", self._activity.broker_id, *tp,
                 reassignment.adding)

    async def _complete(self, tp: TopicPartition) -> None:
        """Phase B: leader within TRS, RR out of the ISR and deleted, RS = TRS everywhere."""
        context = self._context
        states = self._replica_states
        reassignment = context.reassignments[tp]
        target, removing = list(reassignment.target), reassignment.removing
        states.to_online(None, states.in_state([(*tp, b) for b in target], ReplicaState.NEW))
        context.assignments[tp.topic][tp.partition] = target
        batch = self._requests.new_batch()
        changed = await self._partition_states.update_partition_states(
            [tp], _leader_within(target, context.electable(), f"reassignment to {target} completing"))
        started = await self._drop_replicas(batch, tp, removing, changed,
                                            f"reassignment to {target}: replicas {removing} removed")
        del context.reassignments[tp]
        await self._write_assignment(tp.topic)
        self._deletion.track(self._requests.send(batch).stop_replica, started)
        await self._remove_from_znode([tp])
        log.info("Controller %d: %s-%d reassigned to %s", self._activity.broker_id, *tp, target)
        await self._deletion.resume()

    async def _drop_replicas(self, batch: ControllerBrokerRequestBatch, tp: TopicPartition, dropped: list[int],
                             changed: list[TopicPartition], reason: str) -> list[Replica]:
        """The dropped replicas leave the ISR, go offline and are deleted; the partition's changes (`changed`
        and the ISR's) are queued in the batch. Returns the replicas whose deletion started."""
        if dropped:
            changed = changed + await self._partition_states.update_partition_states([tp], _isr_without(dropped,
                                                                                                        reason))
        self._partition_states.queue_changes(batch, list(dict.fromkeys(changed)))
        removed = [(*tp, b) for b in dropped]
        self._replica_states.to_offline(None, removed)
        return await self._deletion.remove_replicas(batch, removed)

    async def _write_assignment(self, topic: str) -> None:
        context = self._context
        ongoing = {p: r for (t, p), r in context.reassignments.items() if t == topic}
        await self._store.write_topic(topic, TopicAssignment(
            partitions=dict(context.assignments[topic]),
            adding={p: r.adding for p, r in ongoing.items() if r.adding},
            removing={p: r.removing for p, r in ongoing.items() if r.removing},
            topic_id=context.topic_ids.get(topic),
        ))


def _bump_epoch(reason: str) -> Decide:
    async def decide(_tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> PartitionChange:
        return PartitionChange(LeaderAndIsr(state.leader, state.leader_epoch + 1, tuple(state.isr)), reason)

    return decide


def _leader_within(target: list[int], electable: set[int], reason: str) -> Decide:
    """B3: keep a live leader that is a target replica (a new leader epoch), else elect within the target."""

    async def decide(_tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> PartitionChange | None:
        current = LeaderAndIsr(state.leader, state.leader_epoch, tuple(state.isr))
        if state.leader in target and state.leader in electable:
            return PartitionChange(LeaderAndIsr(state.leader, state.leader_epoch + 1, current.isr), reason)
        election = reassign_partition_election(target, state.isr, electable)
        if election is None:
            return None
        return PartitionChange(election.state_after(current),
                               f"{reason}: leader {state.leader} is not a live target replica, broker "
                               f"{election.leader} elected", election)

    return decide


def _isr_without(removed: list[int], reason: str) -> Decide:
    """B4: the removed replicas leave the ISR (never emptying it)."""

    async def decide(_tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> PartitionChange | None:
        isr = tuple(r for r in state.isr if r not in removed)
        if not isr or isr == tuple(state.isr):
            return None
        return PartitionChange(LeaderAndIsr(state.leader, state.leader_epoch + 1, isr), reason)

    return decide
