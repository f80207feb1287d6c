"""`PreferredElection`: preferred replica elections, by hand and by the automatic leader rebalance; ElectLeaders
also serves unclean elections asked for by hand.

- Preferred replica election (ElectLeaders PREFERRED, or /admin/preferred_replica_election as seed 001
  describes): the first replica of the assignment becomes leader only if it is live (and not shutting down) and in
  the ISR, with the next leader epoch; the ISR stays. Each partition gets an outcome: elected, not needed (it leads
  already), or not eligible and why.
- Unclean election by hand (ElectLeaders UNCLEAN): a partition without a live leader gets one, from its live ISR
  members if it can, else from any live replica (records it lacks are lost); only when explicitly asked.
- Auto rebalance (auto.leader.rebalance.enable, Kafka's checkAndTriggerAutoLeaderRebalance): 5 s after this broker
  became the controller and then every leader.imbalance.check.interval.seconds, for each broker the share of the
  partitions it is the preferred replica of that it does not lead is its imbalance; above
  leader.imbalance.per.broker.percentage, a preferred replica election runs for those partitions (not while any
  reassignment is in progress, and not for topics being deleted).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from controller.activity import ControllerActivity
from controller.context import ControllerContext
from controller.election import (
    LeaderAndIsr,
    offline_partition_election,
    preferred_replica_election,
    preferred_replica_ineligibility,
)
from controller.event_manager import ControllerEventManager
from controller.partition_state_machine import Decide, PartitionChange, PartitionState, PartitionStateMachine
from controller.request_sender import BrokerRequestSender
from controller.zk_store import ControllerZkStore
from protocol.apis.elections import (
    ElectionType,
    ElectLeadersRequest,
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
)
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition
from zk import znodes
from zk.client import ZkClient
from zk.znodes import LeaderIsrAndControllerEpoch

log = logging.getLogger("controller")

FIRST_REBALANCE_CHECK_S = 5.0  # as Kafka's scheduleAutoLeaderRebalanceTask at failover
Outcome = tuple[ErrorCode, str]


class PreferredElection:
    """Preferred (and unclean) elections by hand, and the periodic leader rebalance."""

    def __init__(self, context: ControllerContext, activity: ControllerActivity, zk: ZkClient,
                 store: ControllerZkStore, events: ControllerEventManager, requests: BrokerRequestSender,
                 partition_states: PartitionStateMachine, *, auto_rebalance: bool, check_interval_s: float,
                 imbalance_percentage: int) -> None:
        self._context = context
        self._activity = activity
        self._zk = zk
        self._store = store
        self._events = events
        self._requests = requests
        self._partition_states = partition_states
        self.auto_rebalance = auto_rebalance
        self.check_interval_s = check_interval_s
        self.imbalance_percentage = imbalance_percentage
        self._timer: asyncio.Task[None] | None = None

    # -- elections --------------------------------------------------------------------------

    async def handle_elect_leaders(self, request: ElectLeadersRequest) -> ElectLeadersResponse:
        """ElectLeaders, processed as a controller event: per partition NONE (elected), ELECTION_NOT_NEEDED,
        or why not; every partition if none are named. NOT_CONTROLLER elsewhere."""
        try:
            election_type = ElectionType(request.election_type)
        except ValueError:
            return ElectLeadersResponse(error_code=ErrorCode.INVALID_REQUEST, replica_election_results=[])
        partitions = None if request.topic_partitions is None else [
            TopicPartition(t.topic, p) for t in request.topic_partitions for p in t.partitions]
        outcomes = await self._activity.answer("ElectLeaders",
                                               lambda: self.elect(election_type, partitions, "requested"),
                                               lambda _why: None)
        if outcomes is None:
            return ElectLeadersResponse(error_code=ErrorCode.NOT_CONTROLLER, replica_election_results=[])
        by_topic: dict[str, list[PartitionResult]] = {}
        for (topic, partition), (code, why) in sorted(outcomes.items()):
            by_topic.setdefault(topic, []).append(PartitionResult(partition_id=partition, error_code=code,
                                                                  error_message=why))
        return ElectLeadersResponse(error_code=ErrorCode.NONE, replica_election_results=[
            ReplicaElectionResult(topic=topic, partition_result=results) for topic, results in by_topic.items()])

    async def elect(self, election_type: ElectionType, partitions: Iterable[TopicPartition] | None,
                    trigger: str) -> dict[TopicPartition, Outcome]:
        """Run an election for the partitions (every partition if None); the outcome of each."""
        context = self._context
        outcomes: dict[TopicPartition, Outcome] = {}
        wanted = context.serving_partitions() if partitions is None else list(dict.fromkeys(partitions))
        candidates = []
        for tp in wanted:
            exists = self._partition_states.state(tp) in (PartitionState.ONLINE, PartitionState.OFFLINE)
            if not exists or tp.topic in context.topics_to_delete:
                outcomes[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
            else:
                candidates.append(tp)
        decide = (self._preferred if election_type == ElectionType.PREFERRED else self._unclean)(outcomes, trigger)
        changed = await self._partition_states.update_partition_states(candidates, decide)
        batch = self._requests.new_batch()
        self._partition_states.queue_changes(batch, changed)
        self._requests.send(batch)
        elected = [tp for tp in changed if outcomes[tp][0] == ErrorCode.NONE]
        if elected:
            log.info("Controller %d: %s election (%s) elected leaders of %s", self._activity.broker_id,
                     election_type.name.lower(), trigger, elected)
        return outcomes

    def _preferred(self, outcomes: dict[TopicPartition, Outcome], trigger: str) -> Decide:
        context = self._context

        async def decide(tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> PartitionChange | None:
            replicas = context.replicas(*tp)
            live = context.electable()
            if replicas and state.leader == replicas[0] and state.leader in live:
                outcomes[tp] = (ErrorCode.ELECTION_NOT_NEEDED, f"preferred replica {replicas[0]} is the leader already")
                return None
            election = preferred_replica_election(replicas, state.isr, live)
            if election is None:
                outcomes[tp] = (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                                preferred_replica_ineligibility(replicas, state.isr, live))
                return None
            outcomes[tp] = (ErrorCode.NONE, f"preferred replica {election.leader} elected")
            current = LeaderAndIsr(state.leader, state.leader_epoch, tuple(state.isr))
            return PartitionChange(election.state_after(current),
                                   f"preferred replica election ({trigger}): leader {state.leader} -> "
                                   f"preferred replica {election.leader}", election)

        return decide

    def _unclean(self, outcomes: dict[TopicPartition, Outcome], trigger: str) -> Decide:
        context = self._context

        async def decide(tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> PartitionChange | None:
            if state.leader in context.live_brokers:
                outcomes[tp] = (ErrorCode.ELECTION_NOT_NEEDED, f"leader {state.leader} is live")
                return None
            replicas, live = context.replicas(*tp), context.electable()
            election = (offline_partition_election(replicas, state.isr, live, unclean_leader_election=False)
                        or offline_partition_election(replicas, state.isr, live, unclean_leader_election=True))
            if election is None:
                outcomes[tp] = (ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, f"no live replica among {replicas}")
                return None
            how = (f"replica {election.leader}, not in the ISR {list(state.isr)}, elected: records it lacks are lost"
                   if election.unclean else f"replica {election.leader} elected from the live ISR members")
            outcomes[tp] = (ErrorCode.NONE, how)
            current = LeaderAndIsr(state.leader, state.leader_epoch, tuple(state.isr))
            return PartitionChange(election.state_after(current), f"unclean election by hand ({trigger}): {how}",
                                   election)

        return decide

    # -- /admin/preferred_replica_election --------------------------------------------------

    async def process_preferred_election_znode(self) -> None:
        """Elect the preferred replicas of the partitions written in /admin/preferred_replica_election, then
        remove it (Kafka's PreferredReplicaElection event)."""
        if not self._activity.is_active:
            return
        got = await self._zk.get_or_none(znodes.PREFERRED_REPLICA_ELECTION_PATH)
        if got is None:
            return
        try:
            partitions = [TopicPartition(*tp) for tp in znodes.decode_partition_list(got[0])]
        except znodes.ZkDataError as e:
            log.error("Controller %d ignores %s: %s", self._activity.broker_id, znodes.PREFERRED_REPLICA_ELECTION_PATH,
                      e)
            partitions = []
        outcomes = await self.elect(ElectionType.PREFERRED, partitions, "/admin/preferred_replica_election")
        for tp, (code, why) in sorted(outcomes.items()):
            if code not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED):
                log.info("Controller %d: preferred replica of %s-%d not elected: %s", self._activity.broker_id, *tp,
                         why)
        await self._store.delete_if_exists(znodes.PREFERRED_REPLICA_ELECTION_PATH)

    # -- auto rebalance ---------------------------------------------------------------------

    def start(self) -> None:
        """A new term: schedule the rebalance checks (if auto.leader.rebalance.enable)."""
        self.stop()
        if self.auto_rebalance:
            self._timer = asyncio.get_running_loop().create_task(self._schedule(), name="auto-leader-rebalance")

    def stop(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    async def _schedule(self) -> None:
        await asyncio.sleep(FIRST_REBALANCE_CHECK_S)
        while True:
            self._events.put("AutoPreferredReplicaLeaderElection", self.check_imbalance)
            await asyncio.sleep(self.check_interval_s)

    def imbalanced_partitions(self) -> list[TopicPartition]:
        """The partitions led by another broker than their preferred replica, for each preferred replica whose
        share of such partitions exceeds leader.imbalance.per.broker.percentage."""
        context = self._context
        by_preferred: dict[int, list[TopicPartition]] = {}
        for tp in context.serving_partitions():
            replicas = context.replicas(*tp)
            if tp in context.states and replicas:
                by_preferred.setdefault(replicas[0], []).append(tp)
        imbalanced = []
        for broker, partitions in sorted(by_preferred.items()):
            not_led = [tp for tp in partitions if context.states[tp].leader != broker]
            if len(not_led) / len(partitions) > self.imbalance_percentage / 100 and broker in context.electable():
                imbalanced += not_led
        return imbalanced

    async def check_imbalance(self) -> None:
        if not self._activity.is_active or self._context.reassignments:
            return
        imbalanced = self.imbalanced_partitions()
        if imbalanced:
            log.info("Controller %d: leader imbalance above %d%% for %s: preferred replica election",
                     self._activity.broker_id, self.imbalance_percentage, imbalanced)
            await self.elect(ElectionType.PREFERRED, imbalanced, "auto rebalance")
