"""`BrokerLifecycle`: brokers coming, going, bouncing and shutting down under control (Kafka's onBrokerStartup,
onBrokerFailure and doControlledShutdown).

- broker failure (/brokers/ids): partitions the dead broker led get an offline-partition election (first live
  replica of the assignment in the ISR; unclean, if the topic allows it, else offline with the ISR keeping its
  last member); it leaves the ISR of the others. LeaderAndIsr goes to the live replicas, UpdateMetadata to every
  live broker.
- broker start-up, or a bounce (a new registration czxid, the broker epoch): a bounce is a failure followed by a
  start-up; a starting broker first deletes the replicas left to it (pending deletions), then gets the metadata
  and LeaderAndIsr for its replicas; offline partitions elect; deletions and reassignments waiting for it go on.
- controlled shutdown of a broker: move its leaderships to other live ISR members, drop it from the ISRs it
  follows in (StopReplica to it), answer the partitions it still leads.
"""

from __future__ import annotations

import logging

from controller.activity import ControllerActivity
from controller.channel import ControllerChannelManager
from controller.context import ControllerContext
from controller.election import LeaderAndIsr, controlled_shutdown_election, isr_without
from controller.partition_state_machine import Decide, PartitionChange, PartitionStateMachine
from controller.reassignment import ReassignmentManager
from controller.replica_state_machine import ReplicaStateMachine
from controller.request_sender import BrokerRequestSender
from controller.topic_deletion import TopicDeletionManager
from controller.zk_store import ControllerZkStore
from protocol.apis.replica_control import ControlledShutdownResponse, is_broker_epoch_stale
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition
from zk.znodes import LeaderIsrAndControllerEpoch

log = logging.getLogger("controller")


def shutdown_response(code: ErrorCode) -> ControlledShutdownResponse:
    return ControlledShutdownResponse(error_code=code, remaining_partitions=[])


class BrokerLifecycle:
    """Reacts to broker registrations changing and to brokers asking to shut down."""

    def __init__(self, context: ControllerContext, activity: ControllerActivity, store: ControllerZkStore,
                 requests: BrokerRequestSender, channel: ControllerChannelManager,
                 partition_states: PartitionStateMachine, replica_states: ReplicaStateMachine,
                 deletion: TopicDeletionManager, reassignments: ReassignmentManager) -> None:
        self._context = context
        self._activity = activity
        self._store = store
        self._requests = requests
        self._channel = channel
        self._partition_states = partition_states
        self._replica_states = replica_states
        self._deletion = deletion
        self._reassignments = reassignments

    # -- /brokers/ids -----------------------------------------------------------------------

    async def process_broker_change(self) -> None:
        if not self._activity.is_active:
            return
        current = await self._store.read_live_brokers()
        known = self._context.live_brokers
        dead = sorted(set(known) - set(current))
        bounced = sorted(b for b in current if b in known and current[b].epoch != known[b].epoch)
        new = sorted(b for b in current if b not in known)
        if not (dead or bounced or new):
            return
        log.info("Controller %d: new brokers %s, bounced %s, dead %s", self._activity.broker_id, new, bounced, dead)
        for broker_id in dead + bounced:
            await self._channel.remove_broker(broker_id)
        # A bounced broker (a new registration: its session expired, or it restarted faster than we looked)
        # is a failure followed by a start-up, as in Kafka (KIP-380): its leaderships move, then it follows.
        self._context.live_brokers = {b: info for b, info in current.items() if b not in bounced}
        self._context.shutting_down -= set(dead) | set(bounced)
        if dead or bounced:
            await self.on_broker_failure(sorted(dead + bounced))
        self._context.live_brokers = current
        for broker_id in new + bounced:
            self._channel.add_broker(broker_id, current[broker_id].host, current[broker_id].port)
        if new or bounced:
            await self.on_broker_startup(sorted(new + bounced))

    async def on_broker_failure(self, dead: list[int]) -> None:
        """Elect new leaders for the partitions the dead brokers led and remove them from ISRs (Kafka's
        onBrokerFailure / onReplicasBecomeOffline); tell the live replicas and every live broker. As in Kafka, the
        partitions that lost their leader go first, in requests of their own: their new leaders take over without
        waiting for the ISR changes of the partitions the dead brokers only followed."""
        context = self._context
        serving = context.serving_partitions()
        affected = [tp for tp in serving if tp in context.states and set(context.replicas(*tp)) & set(dead)]
        leaderless = [tp for tp in affected if context.states[tp].leader in dead]
        followed = [tp for tp in affected if context.states[tp].leader not in dead]
        decide = self._partition_states.recovery_decider(f"broker failure of {dead}", gone=dead)
        groups = [group for group in (leaderless, followed) if group]
        for partitions in groups or [[]]:  # with no partition to change, the live brokers still go to every broker
            changed = await self._partition_states.update_partition_states(partitions, decide)
            batch = self._requests.new_batch()
            self._partition_states.queue_changes(batch, changed)
            batch.add_update_metadata(context.live_brokers, context.partition_infos(partitions))
            self._requests.send(batch)
        self._replica_states.to_offline(None, self._replica_states.replicas_on(dead, serving))
        await self._deletion.on_brokers_failed(dead)

    async def on_broker_startup(self, started: list[int]) -> None:
        """Send the other brokers the new live set, the started ones the full metadata and their replicas'
        states, elect leaders for offline partitions (Kafka's onBrokerStartup); then create the states of
        partitions that had no live replica before."""
        context = self._context
        self._deletion.send_pending_deletions(started)  # before anything else reaches them
        elected = await self._partition_states.elect_offline_partitions(
            context.offline_partitions(), f"broker {started[0]} started" if len(started) == 1
            else f"brokers {started} started"
        )
        partitions = [tp for tp in context.serving_partitions() if tp in context.states]
        batch = self._requests.new_batch()
        batch.add_update_metadata(set(context.live_brokers) - set(started))
        self._requests.send(batch)
        batch.add_update_metadata(started, context.partition_infos(partitions))
        self._replica_states.to_online(batch, self._replica_states.replicas_on(started, partitions))
        self._partition_states.queue_changes(batch, elected)
        self._requests.send(batch)
        await self._partition_states.initialize_partitions(
            [tp for tp in context.serving_partitions() if tp not in context.states]
        )
        await self._deletion.resume()
        await self._reassignments.on_brokers_started(started)

    # -- controlled shutdown ----------------------------------------------------------------

    async def handle_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ControlledShutdownResponse:
        """A broker asks to shut down (Kafka's doControlledShutdown), processed as a controller event.

        Its leaderships of replicated partitions move to other live ISR members (leader epoch + 1), it leaves
        the ISRs of the partitions it follows (leader epoch + 1; StopReplica without delete to it), and every
        live broker gets UpdateMetadata. Answers the replicated partitions it still leads (those without another
        live ISR member): empty means it may go. NOT_CONTROLLER if this broker is not (or stops being) the
        controller, BROKER_NOT_AVAILABLE for an unregistered broker, STALE_BROKER_EPOCH for an epoch older than
        the broker's registration (a request from before a session expiry)."""
        return await self._activity.answer(f"ControlledShutdown of broker {broker_id}",
                                           lambda: self.process_controlled_shutdown(broker_id, broker_epoch),
                                           lambda _why: shutdown_response(ErrorCode.NOT_CONTROLLER))

    async def process_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ControlledShutdownResponse:
        if not self._activity.is_active:
            return shutdown_response(ErrorCode.NOT_CONTROLLER)
        context = self._context
        registered = context.live_brokers.get(broker_id)
        if registered is None:
            log.info("Controller %d: controlled shutdown of broker %d, which is not registered",
                     self._activity.broker_id, broker_id)
            return shutdown_response(ErrorCode.BROKER_NOT_AVAILABLE)
        if is_broker_epoch_stale(broker_epoch, registered.epoch):
            log.info("Controller %d: controlled shutdown of broker %d with stale broker epoch %d (registered %d)",
                     self._activity.broker_id, broker_id, broker_epoch, registered.epoch)
            return shutdown_response(ErrorCode.STALE_BROKER_EPOCH)
        log.info("Controller %d: controlled shutdown of broker %d (broker epoch %d)",
                 self._activity.broker_id, broker_id, broker_epoch)
        context.shutting_down.add(broker_id)
        # Replicated partitions with a state (Kafka's partitionsToActOn); the ones it does not lead now are
        # those it follows in: they get StopReplica (no delete), so that it stops fetching and stays out of the ISR.
        hosted = [
            tp
            for tp in context.serving_partitions()
            if tp in context.states and broker_id in context.replicas(*tp) and len(context.replicas(*tp)) > 1
        ]
        followed = {tp for tp in hosted if context.states[tp].leader != broker_id}
        changed = await self._partition_states.update_partition_states(
            hosted, self._controlled_shutdown_decider(broker_id)
        )
        batch = self._requests.new_batch()
        # Moved leaderships go to every live replica, the shutting-down broker included (it becomes a follower);
        # an ISR shrink goes to the others only, as Kafka's OfflineReplica transition.
        self._partition_states.queue_changes(batch, [tp for tp in changed if tp not in followed])
        self._partition_states.queue_changes(batch, [tp for tp in changed if tp in followed], exclude=broker_id)
        self._replica_states.to_offline(batch, [(t, p, broker_id) for t, p in hosted if (t, p) in followed])
        self._requests.send(batch)
        remaining = [tp for tp in hosted if context.states[tp].leader == broker_id]
        log.info("Controller %d: broker %d shutting down; moved %s, still leads %s", self._activity.broker_id,
                 broker_id, [tp for tp in changed if tp not in followed], remaining)
        return ControlledShutdownResponse(error_code=ErrorCode.NONE, remaining_partitions=remaining)

    def _controlled_shutdown_decider(self, broker_id: int) -> Decide:
        context = self._context

        async def decide(tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> PartitionChange | None:
            replicas = context.replicas(*tp)
            current = LeaderAndIsr(state.leader, state.leader_epoch, tuple(state.isr))
            if state.leader == broker_id:
                election = controlled_shutdown_election(replicas, current.isr, context.live_brokers,
                                                        context.shutting_down)
                if election is None:  # no other live ISR member: it keeps leading; the broker is told so
                    return None
                return PartitionChange(
                    election.state_after(current),
                    f"controlled shutdown of broker {broker_id}: leadership moved to broker {election.leader}",
                    election,
                )
            if broker_id in current.isr and len(current.isr) > 1:
                isr = isr_without(current.isr, broker_id)
                return PartitionChange(
                    LeaderAndIsr(current.leader, current.leader_epoch + 1, isr),
                    f"controlled shutdown of broker {broker_id}: removed from the ISR",
                )
            return None

        return decide
