"""`PartitionStateMachine`: a partition's leader and ISR as the controller changes them (Kafka's
PartitionStateMachine), over the pure election rules of controller.election.

A partition is NonExistent (not assigned), New (assigned, no state znode yet), Online (its leader is a live
broker) or Offline (no leader, or a leader that is not registered); the state follows from the context, so it
is never out of step with it. The transitions:

- New -> Online: the first state (leader: the first live replica, ISR: the live replicas), created in ZooKeeper
  and sent to the replicas (LeaderAndIsr, is_new).
- Online/Offline -> Online/Offline: a new leader or ISR decided by an election strategy (offline partition,
  controlled shutdown, preferred replica, reassignment) or by brokers going away, each on the state just read
  from ZooKeeper, written conditionally on its version with the next leader epoch; a version conflict (the
  leader changed the ISR meanwhile) re-reads the state and decides again.
- any -> NonExistent: a deleted partition leaves the context.

Every change goes to the state-change log.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from controller.channel import ControllerBrokerRequestBatch
from controller.context import ControllerContext
from controller.election import (
    NO_LEADER,
    Election,
    LeaderAndIsr,
    after_broker_failure,
    offline_partition_election,
    unclean_leader_election_enabled,
)
from controller.replica_state_machine import ReplicaStateMachine
from controller.request_sender import BrokerRequestSender
from controller.zk_store import ControllerZkStore
from protocol.state_change import record_state_change
from protocol.topic_partition import TopicPartition
from zk import znodes
from zk.client import BadVersionError, NodeExistsError, NoNodeError, RolledBackError, ZkClient
from zk.topic_config import read_topic_config
from zk.znodes import LeaderIsrAndControllerEpoch

log = logging.getLogger("controller")

STATE_UPDATE_ATTEMPTS = 10  # version conflicts of a partition's state write before the controller gives up on it


class PartitionState(enum.Enum):
    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"


@dataclass(frozen=True, slots=True)
class PartitionChange:
    """A new leader/ISR the controller decided for a partition, and why."""

    state: LeaderAndIsr
    reason: str
    election: Election | None = None


Decide = Callable[[TopicPartition, LeaderIsrAndControllerEpoch], Awaitable[PartitionChange | None]]


class PartitionStateMachine:
    """Creates, elects, changes and forgets partition states; reads and writes them through the store."""

    def __init__(self, context: ControllerContext, broker_id: int, zk: ZkClient, store: ControllerZkStore,
                 requests: BrokerRequestSender, replica_states: ReplicaStateMachine, *,
                 unclean_leader_election_default: bool) -> None:
        self._context = context
        self._broker_id = broker_id
        self._zk = zk
        self._store = store
        self._requests = requests
        self._replica_states = replica_states
        #: unclean.leader.election.enable of the broker's server.properties, and with its dynamic configs over it
        #: (Notifications keeps it up to date): a topic without its own override takes the latter.
        self.static_unclean_leader_election = unclean_leader_election_default
        self.unclean_leader_election_default = unclean_leader_election_default
        self.unclean_leader_elections = 0  # how many unclean elections this broker made (Kafka's meter)

    def state(self, tp: TopicPartition) -> PartitionState:
        context = self._context
        if tp.partition not in context.assignments.get(tp.topic, {}):
            return PartitionState.NON_EXISTENT
        state = context.states.get(tp)
        if state is None:
            return PartitionState.NEW
        return PartitionState.ONLINE if state.leader in context.live_brokers else PartitionState.OFFLINE

    # -- New -> Online ----------------------------------------------------------------------

    def first_state(self, live_replicas: list[int]) -> LeaderIsrAndControllerEpoch:
        return LeaderIsrAndControllerEpoch(
            leader=live_replicas[0], leader_epoch=0, isr=tuple(live_replicas), controller_epoch=self._context.epoch
        )

    async def initialize_partitions(self, partitions: list[TopicPartition]) -> None:
        """Write the first state of partitions that have none (leader: the first live replica, ISR: the live
        replicas; Kafka's NewPartition -> OnlinePartition) and send it to their replicas."""
        context = self._context
        batch = self._requests.new_batch()
        by_topic: dict[str, dict[int, LeaderIsrAndControllerEpoch]] = {}
        for tp in partitions:
            if self.state(tp) is not PartitionState.NEW:
                continue
            live = context.live_replicas(*tp)
            if not live:
                log.error("Controller %d: no live replica of %s-%d to lead it", self._broker_id, *tp)
                continue
            by_topic.setdefault(tp.topic, {})[tp.partition] = self.first_state(live)
        for topic, states in by_topic.items():
            try:
                existing: set[str] | None = set(await self._zk.get_children(znodes.topic_partitions_path(topic)))
            except NoNodeError:
                existing = None
            try:
                failed = await self._store.create_partition_states(topic, states, existing)
            except NodeExistsError as e:
                log.warning("Controller %d: partition states of %s exist already: %s", self._broker_id, topic, e)
                continue
            if failed:
                self.log_not_initialized(topic, failed)
            self.record_new_states(batch, topic, {p: s for p, s in states.items() if p not in failed},
                                   "new partition")
        self._requests.send(batch)

    def log_not_initialized(self, topic: str, failed: Mapping[int, Exception]) -> None:
        """Partitions whose first state could not be written stay New (the next controller initialises them)."""
        for partition, error in sorted(failed.items()):
            log.error("Controller %d: the first state of %s-%d was not written, it stays New: %s",
                      self._broker_id, topic, partition, error)

    def record_new_states(
        self,
        batch: ControllerBrokerRequestBatch,
        topic: str,
        states: Mapping[int, LeaderIsrAndControllerEpoch],
        reason: str,
    ) -> None:
        """Remember the first states of new partitions, log them and queue their LeaderAndIsr (is_new)."""
        context = self._context
        self._replica_states.start_new(TopicPartition(topic, partition) for partition in states)
        for partition, state in sorted(states.items()):
            context.states[TopicPartition(topic, partition)] = state
            self.log_state_change(topic, partition, state, reason)
            replicas = context.replicas(topic, partition)
            live = context.live_replicas(topic, partition)
            batch.add_leader_and_isr(live, topic, partition, state, replicas, is_new=True)

    # -- Online/Offline -> Online/Offline ---------------------------------------------------

    async def read_partition_states(
        self, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """Read the state znodes of partitions into the context (and return them)."""
        states = await self._store.read_partition_states(partitions)
        self._context.states.update(states)
        return states

    async def update_partition_states(
        self, partitions: Iterable[TopicPartition], decide: Decide,
        just_read: Mapping[TopicPartition, LeaderIsrAndControllerEpoch] | None = None,
    ) -> list[TopicPartition]:
        """Change partition states as `decide` says, each on the state just read from ZooKeeper and written
        conditionally on its version, many partitions a fenced transaction (Kafka's updateLeaderAndIsr). A version
        conflict (the leader changed the ISR meanwhile) re-reads the state and decides again, up to
        STATE_UPDATE_ATTEMPTS conflicts a partition, its next writes in transactions of their own; the partitions
        of its transaction, rolled back with it, are read and decided again too. Logs every change to the
        state-change log; returns the partitions changed (their new states are in the context).

        `just_read`: states this event has just read from ZooKeeper (the failover reads every partition's). The
        first round decides on them instead of reading them again; one that a conflict shows to be out of date
        already is read and decided again, not counted as a conflict."""
        context = self._context
        pending = list(dict.fromkeys(partitions))
        conflicts: dict[TopicPartition, int] = {}
        changed: list[TopicPartition] = []
        # Each used once: a partition decided again is read
        known = {tp: just_read[tp] for tp in pending if tp in just_read} if just_read else {}
        while pending:
            unread = [tp for tp in pending if tp not in known]
            current = await self.read_partition_states(unread) if unread else {}
            reused = {tp: known.pop(tp) for tp in pending if tp in known}
            current.update(reused)
            proposals: list[tuple[TopicPartition, LeaderIsrAndControllerEpoch, PartitionChange]] = []
            for tp in pending:
                state = current.get(tp)
                if state is None:
                    continue
                if state.controller_epoch > context.epoch:
                    # Kafka's doElectLeaderForPartitions: a newer controller wrote it, so this one went through a
                    # soft failure; leave the partition alone (the epoch check of any write fences this term).
                    log.error("Controller %d leaves %s-%d alone: its state was written by controller epoch %d, "
                              "newer than ours (%d)", self._broker_id, *tp, state.controller_epoch, context.epoch)
                    continue
                change = await decide(tp, state)
                if change is not None:
                    proposals.append((tp, state, change))
            results = await self._store.write_partition_states(
                [(tp, state, change.state) for tp, state, change in proposals], contended=conflicts.keys()
            )
            pending = []
            for (tp, state, change), result in zip(proposals, results, strict=True):
                if isinstance(result, RolledBackError):
                    # Not written because another partition of its transaction conflicted: read and decided again,
                    # not counted against it.
                    pending.append(tp)
                    continue
                if isinstance(result, BadVersionError) and tp in reused:
                    pending.append(tp)  # the state changed since this event read it: read it now, not counted
                    continue
                if isinstance(result, BadVersionError):
                    conflicts[tp] = conflicts.get(tp, 0) + 1
                    if conflicts[tp] < STATE_UPDATE_ATTEMPTS:
                        log.info("Controller %d: the state of %s-%d changed meanwhile; deciding again",
                                 self._broker_id, *tp)
                        pending.append(tp)
                    else:
                        log.error("Controller %d gave up changing the state of %s-%d after %d version conflicts",
                                  self._broker_id, *tp, STATE_UPDATE_ATTEMPTS)
                    continue
                if isinstance(result, BaseException):
                    raise result
                context.states[tp] = result
                changed.append(tp)
                unclean = change.election is not None and change.election.unclean
                if unclean:
                    self.unclean_leader_elections += 1
                    log.warning("Controller %d: %s-%d: %s", self._broker_id, *tp, change.reason)
                self.log_state_change(*tp, result, change.reason, previous_leader=state.leader,
                                      previous_leader_epoch=state.leader_epoch, previous_isr=list(state.isr),
                                      unclean=unclean)
        return changed

    def recovery_decider(self, cause: str, gone: Collection[int] | None = None) -> Decide:
        """Decide the state of partitions after brokers went away (`gone`), or, with `gone` None, of partitions
        whose leader is not live: Kafka's OfflinePartition -> OnlinePartition election and, for dead followers,
        OfflineReplica (leave the ISR, never emptying it). One leader epoch bump per change."""
        unclean_cache: dict[str, bool] = {}
        context = self._context

        async def decide(tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> PartitionChange | None:
            topic, partition = tp
            replicas = context.replicas(topic, partition)
            live = context.electable()
            current = LeaderAndIsr(state.leader, state.leader_epoch, tuple(state.isr))
            dead = set(gone) if gone is not None else {current.leader} - {NO_LEADER} - set(context.live_brokers)
            # Followers first, the leader last: when nobody can replace it, the old leader stays the ISR's last
            # member (it holds every committed record).
            order = sorted(b for b in dead if b != current.leader and b in current.isr)
            if current.leader in dead:
                order.append(current.leader)
            proposed, election = current, None
            for broker in order:
                after = after_broker_failure(proposed, replicas, live, broker, unclean_leader_election=False)
                if after is not None:
                    proposed, election = after[0], after[1] or election
            if not proposed.online:
                election = offline_partition_election(replicas, proposed.isr, live, unclean_leader_election=False)
                if election is None and await self.unclean_enabled(topic, unclean_cache):
                    election = offline_partition_election(replicas, proposed.isr, live, unclean_leader_election=True)
                if election is not None:
                    proposed = LeaderAndIsr(election.leader, proposed.leader_epoch, election.isr)
            if (proposed.leader, proposed.isr) == (current.leader, current.isr):
                return None
            new = LeaderAndIsr(proposed.leader, current.leader_epoch + 1, proposed.isr)
            return PartitionChange(new, recovery_reason(cause, current, new, election), election)

        return decide

    async def unclean_enabled(self, topic: str, cache: dict[str, bool]) -> bool:
        """The topic's unclean.leader.election.enable, read from ZooKeeper when needed (as Kafka does)."""
        if topic not in cache:
            try:
                config = await read_topic_config(self._zk, topic)
            except znodes.ZkDataError as e:
                log.error("Controller %d cannot read the config of topic %s: %s", self._broker_id, topic, e)
                config = {}
            cache[topic] = unclean_leader_election_enabled(config, self.unclean_leader_election_default)
        return cache[topic]

    async def elect_offline_partitions(
        self, partitions: list[TopicPartition], cause: str,
        just_read: Mapping[TopicPartition, LeaderIsrAndControllerEpoch] | None = None,
    ) -> list[TopicPartition]:
        """Elect leaders for partitions without a live leader (Kafka's triggerOnlinePartitionStateChange);
        `just_read` as for :meth:`update_partition_states`."""
        if not partitions:
            return []
        return await self.update_partition_states(partitions, self.recovery_decider(cause), just_read)

    def queue_changes(
        self, batch: ControllerBrokerRequestBatch, partitions: Iterable[TopicPartition], exclude: int | None = None
    ) -> None:
        """LeaderAndIsr with the partitions' current states to their live replicas (but `exclude`), and
        UpdateMetadata with them to every live broker."""
        context = self._context
        for topic, partition in partitions:
            hosts = [r for r in context.live_replicas(topic, partition) if r != exclude]
            state = context.states[(topic, partition)]
            batch.add_leader_and_isr(hosts, topic, partition, state, context.replicas(topic, partition))

    # -- the state-change log ---------------------------------------------------------------

    def log_state_change(
        self, topic: str, partition: int, state: LeaderIsrAndControllerEpoch, reason: str, **details: object
    ) -> None:
        record_state_change(source="controller", broker_id=self._broker_id, topic=topic, partition=partition,
                            controller_epoch=state.controller_epoch, leader_epoch=state.leader_epoch,
                            leader=state.leader, isr=state.isr, reason=reason, zk_version=state.zk_version,
                            **details)


def recovery_reason(cause: str, old: LeaderAndIsr, new: LeaderAndIsr, election: Election | None) -> str:
    """Why a partition state changed after brokers went or came, for the state-change log."""
    if election is not None and election.unclean:
        return (
            f"unclean election ({cause}): broker {election.leader}, not in the ISR {list(old.isr)}, became leader; "
            "data loss possible"
        )
    if election is not None:
        was = f"leader {old.leader}" if old.online else "no leader"
        return f"{cause}: {was}, broker {election.leader} elected leader from the live ISR members {list(new.isr)}"
    if old.online and not new.online:
        return (
            f"{cause}: leader {old.leader} gone and no live ISR member to replace it (unclean leader election "
            f"disabled): partition offline, the ISR keeps {list(new.isr)}"
        )
    removed = sorted(set(old.isr) - set(new.isr))
    return f"{cause}: broker(s) {removed} removed from the ISR"
