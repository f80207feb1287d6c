"""`KafkaController`: runs in every broker; the one that wins /controller is active. This module wires the
controller's rooms together and holds what makes a broker the controller: the election through /controller,
the term (/controller_epoch), the session events, and failover and resignation.

The rooms, each over the pure election and assignment rules (controller.election, controller.assignment):

    event_manager.py            one queue, one consumer: every watch, session event, timer and request
    activity.py                 whether this broker acts as the controller now; requests answered as events
    context.py                  the active controller's view of the cluster, one per broker, reset at each term
    zk_store.py                 its reads of ZooKeeper and every (fenced) write it makes there
    channel.py                  its requests to brokers, batched per broker
    request_sender.py           the batches of the current term, sent while this broker acts as the controller
    partition_state_machine.py  partition leader/ISR changes and elections
    replica_state_machine.py    replica states
    broker_lifecycle.py         brokers starting, failing, bouncing and shutting down under control
    topic_creation.py           CreateTopics and the topics in /brokers/topics
    partition_addition.py       CreatePartitions
    topic_deletion.py           DeleteTopics, /admin/delete_topics, and the deletions left to brokers that were down
    reassignment.py             /admin/reassign_partitions and AlterPartitionReassignments: moving replicas,
                                changing the replication factor
    preferred_election.py       ElectLeaders, /admin/preferred_replica_election and the auto leader rebalance
    notifications.py            ISR change and config change notifications

Session events: SUSPENDED stops acting at once; CONNECTED with the same session and nothing changed resumes the
term (reading everything again); LOST / NEW_SESSION resigns and stands for election again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from controller.activity import ControllerActivity
from controller.broker_lifecycle import BrokerLifecycle
from controller.channel import ControllerChannelManager
from controller.context import ControllerContext
from controller.event_manager import ControllerEvent, ControllerEventManager, ControllerMovedError
from controller.notifications import Notifications
from controller.partition_addition import PartitionAddition
from controller.partition_state_machine import PartitionStateMachine
from controller.preferred_election import PreferredElection
from controller.reassignment import ReassignmentManager
from controller.replica_state_machine import ReplicaStateMachine
from controller.request_sender import BrokerRequestSender
from controller.topic_creation import TopicConfigValidator, TopicCreation
from controller.topic_deletion import TopicDeletionManager
from controller.zk_store import ControllerZkStore, stat_version
from protocol.apis.elections import ElectLeadersRequest, ElectLeadersResponse
from protocol.apis.reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from protocol.apis.replica_control import ControlledShutdownResponse
from protocol.apis.topics import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from zk import znodes
from zk.client import (
    BadVersionError,
    CreateOp,
    NodeExistsError,
    SetOp,
    Watch,
    ZkClient,
    ZkError,
    ZkState,
    ensure_top_level_paths,
)

log = logging.getLogger("controller")

__all__ = ["ControllerMovedError", "KafkaController"]

#: Partitions added to the failover's whole-state requests between two runs of the event loop.
WHOLE_STATE_SLICE = 1000


class KafkaController:
    """Controller election and failover, and the wiring of the controller's rooms."""

    def __init__(
        self,
        broker_id: int,
        zk: ZkClient,
        channel: ControllerChannelManager,
        default_log_config_validator: TopicConfigValidator,
        *,
        default_num_partitions: int = 1,
        default_replication_factor: int = 1,
        unclean_leader_election_enable: bool = False,
        inter_broker_listener_name: str = "PLAINTEXT",
        delete_topic_enable: bool = True,
        auto_leader_rebalance_enable: bool = False,
        leader_imbalance_check_interval_seconds: float = 300,
        leader_imbalance_per_broker_percentage: int = 10,
    ) -> None:
        self.broker_id = broker_id
        self.zk = zk
        self.channel = channel
        # What every room shares: the view (meaningful while active; read-only outside the controller), the queue,
        # whether this broker acts as the controller, ZooKeeper through the store, and brokers through the sender
        context = self.context = ControllerContext()
        events = self.events = ControllerEventManager(f"controller-{broker_id}", self._on_event_failure)
        activity = self.activity = ControllerActivity(broker_id, events)
        store = self.store = ControllerZkStore(zk, context, activity,
                                               inter_broker_listener_name=inter_broker_listener_name)
        requests = self.requests = BrokerRequestSender(channel, context, activity)
        # The rooms, each built after the rooms it calls
        self.replica_states = ReplicaStateMachine(context, broker_id)
        self.partition_states = PartitionStateMachine(
            context, broker_id, zk, store, requests, self.replica_states,
            unclean_leader_election_default=unclean_leader_election_enable)
        self.deletion = TopicDeletionManager(context, activity, zk, store, events, requests, self.replica_states,
                                             enabled=delete_topic_enable)
        self.reassignments = ReassignmentManager(context, activity, zk, store, requests, self.partition_states,
                                                 self.replica_states, self.deletion)
        self.brokers = BrokerLifecycle(context, activity, store, requests, channel, self.partition_states,
                                       self.replica_states, self.deletion, self.reassignments)
        self.topics = TopicCreation(context, activity, zk, store, requests, self.partition_states,
                                    self.replica_states, self.reassignments, self.step_down,
                                    default_log_config_validator, default_num_partitions=default_num_partitions,
                                    default_replication_factor=default_replication_factor)
        self.partitions = PartitionAddition(context, activity, store, self.partition_states, self.step_down)
        self.elections = PreferredElection(context, activity, zk, store, events, requests, self.partition_states,
                                           auto_rebalance=auto_leader_rebalance_enable,
                                           check_interval_s=leader_imbalance_check_interval_seconds,
                                           imbalance_percentage=leader_imbalance_per_broker_percentage)
        self.notifications = Notifications(context, activity, zk, store, requests, self.partition_states)
        self._epoch = 0
        self._controller_id = -1
        self._suspended_term: tuple[int, int] | None = None  # (epoch, epoch znode version) while suspended
        self._controller_watch: Watch | None = None
        self._active_watches: list[Watch] = []

    @property
    def is_active(self) -> bool:
        """True while this broker is the controller (false from the moment its session is suspended)."""
        return self.activity.is_active

    @property
    def epoch(self) -> int:
        """The controller epoch of this broker's latest term as controller (0 if never elected)."""
        return self._epoch

    @property
    def controller_id(self) -> int:
        """The controller's broker id as last seen in /controller, -1 if none."""
        return self._controller_id

    @property
    def unclean_leader_elections(self) -> int:
        """How many unclean leader elections this broker made as the controller (Kafka's meter)."""
        return self.partition_states.unclean_leader_elections

    # -- lifecycle ------------------------------------------------------------------------------

    async def startup(self) -> None:
        """Start the event loop and take part in the election (the /controller watch fires at once)."""
        await ensure_top_level_paths(self.zk)
        self.events.start()
        self.zk.add_state_listener(self._on_session_event)
        self._controller_watch = await self.zk.watch_data(znodes.CONTROLLER_PATH, self._on_controller_znode)

    async def shutdown(self) -> None:
        """Stop processing events and resign. /controller goes with this broker's ZooKeeper session."""
        self.zk.remove_state_listener(self._on_session_event)
        if self._controller_watch is not None:
            self._controller_watch.cancel()
        await self.events.stop(f"broker {self.broker_id} is shutting down")
        await self._resign()

    # -- requests -------------------------------------------------------------------------------

    async def create_topics(self, request: CreateTopicsRequest) -> CreateTopicsResponse:
        """Validate and create topics (see controller.topic_creation)."""
        return await self.topics.handle_create_topics(request)

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ControlledShutdownResponse:
        """A broker asks to shut down (see controller.broker_lifecycle)."""
        return await self.brokers.handle_controlled_shutdown(broker_id, broker_epoch)

    async def delete_topics(self, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
        """Queue topics for deletion and answer once they are gone (see controller.topic_deletion)."""
        return await self.deletion.handle_delete_topics(request)

    async def create_partitions(self, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
        """Add partitions to topics (see controller.partition_addition)."""
        return await self.partitions.handle_create_partitions(request)

    async def elect_leaders(self, request: ElectLeadersRequest) -> ElectLeadersResponse:
        """Preferred or unclean leader elections by hand (see controller.preferred_election)."""
        return await self.elections.handle_elect_leaders(request)

    async def alter_partition_reassignments(self, request: AlterPartitionReassignmentsRequest
                                            ) -> AlterPartitionReassignmentsResponse:
        """Start, change or cancel partition reassignments (see controller.reassignment)."""
        return await self.reassignments.handle_alter_partition_reassignments(request)

    async def list_partition_reassignments(self, request: ListPartitionReassignmentsRequest
                                           ) -> ListPartitionReassignmentsResponse:
        """The partition reassignments in progress (see controller.reassignment)."""
        return await self.reassignments.handle_list_partition_reassignments(request)

    # -- stepping down -------------------------------------------------------------------------

    async def step_down(self) -> None:
        """Resign and remove our /controller registration so that a fresh election takes place."""
        await self._resign()
        try:
            current = await self.zk.get_or_none(znodes.CONTROLLER_PATH)
            if (
                current is not None
                and znodes.decode_controller(current[0]) == self.broker_id
                and current[1].ephemeral_owner == self.zk.session_id
            ):
                await self.zk.delete(znodes.CONTROLLER_PATH, current[1].version)
        except ZkError as e:
            log.warning("Controller %d could not remove its /controller registration: %s", self.broker_id, e)

    # -- events ---------------------------------------------------------------------------------

    def _enqueue(self, name: str, run: Callable[[], Awaitable[Any]]) -> None:
        self.events.put(name, run)

    async def _on_event_failure(self, event: ControllerEvent, error: Exception) -> None:
        if isinstance(error, ControllerMovedError):
            log.info("Controller %d: %s", self.broker_id, error)
        elif self.activity.is_active:
            log.error("Controller %d failed processing %s", self.broker_id, event.name, exc_info=error)
        else:
            log.info("Controller %d: %s failed after it stopped acting: %s", self.broker_id, event.name, error)
        if self.activity.is_active:  # the view may be half-updated: let a fresh election rebuild it
            await self.step_down()

    def _on_controller_znode(self, data: bytes | None, _stat: object) -> None:
        self._enqueue("ControllerChange", lambda: self._process_controller_change(data))

    def _on_session_event(self, state: ZkState) -> None:
        if state is ZkState.SUSPENDED:
            # Cut off from ZooKeeper: the session may expire and another broker be elected any moment now.
            # Stop acting at once (no more writes, no more requests to brokers); a reconnection decides the rest.
            if self.activity.is_active:
                log.warning("Controller %d: ZooKeeper session suspended; stops acting as the controller (epoch %d)",
                            self.broker_id, self.context.epoch)
                self._suspended_term = (self.context.epoch, self.context.epoch_zk_version)
                self.activity.cut_off("its ZooKeeper session is suspended")
                self._enqueue("SessionSuspended", self._resign)
        elif state is ZkState.LOST:  # the session expired: /controller of ours is gone
            self._suspended_term = None
            self.activity.cut_off("its ZooKeeper session expired")
            self._enqueue("SessionExpired", self._resign)
        elif state is ZkState.NEW_SESSION:  # a new session: stand for election as any other candidate
            self._suspended_term = None
            self._enqueue("Reelect", self._elect)
        else:  # CONNECTED: the same session again; an election may have been missed meanwhile
            self._enqueue("Reconnected", self._process_reconnected)

    def _watch_handlers(self) -> dict[str, tuple[str, Callable[[], Awaitable[Any]]]]:
        """The watches of an active controller: path -> (event name, handler)."""
        return {
            znodes.BROKER_IDS_PATH: ("BrokerChange", self.brokers.process_broker_change),
            znodes.TOPICS_PATH: ("TopicChange", self.topics.process_topic_change),
            znodes.ISR_CHANGE_NOTIFICATION_PATH: ("IsrChangeNotification", self._process_isr_changes),
            znodes.CONFIG_CHANGES_PATH: ("ConfigChangeNotification", self.notifications.process_config_changes),
            znodes.DELETE_TOPICS_PATH: ("TopicDeletion", self.deletion.process_delete_topics_znode),
            znodes.REASSIGN_PARTITIONS_PATH: ("PartitionReassignment",
                                              self.reassignments.process_reassign_partitions_znode),
            znodes.PREFERRED_REPLICA_ELECTION_PATH: ("PreferredReplicaLeaderElection",
                                                     self.elections.process_preferred_election_znode),
        }

    async def _watch_children(self, path: str) -> None:
        name, handler = self._watch_handlers()[path]
        self._active_watches.append(await self.zk.watch_children(path, lambda _children: self._enqueue(name, handler)))

    async def _watch_data(self, path: str) -> None:
        name, handler = self._watch_handlers()[path]
        self._active_watches.append(
            await self.zk.watch_exists(path, lambda stat: stat is not None and self._enqueue(name, handler)))

    async def _process_isr_changes(self) -> None:
        """ISR change notifications; reassignments whose target replicas joined the ISR complete."""
        await self.reassignments.on_isr_changes(await self.notifications.process_isr_changes())

    # -- election -------------------------------------------------------------------------------

    async def _process_controller_change(self, data: bytes | None) -> None:
        if data is None:
            self._controller_id = -1
            if self.activity.is_active:
                await self._resign()
            await self._elect()
            return
        self._controller_id = znodes.decode_controller(data)
        if self.activity.is_active and self._controller_id != self.broker_id:
            await self._resign()

    async def _process_reconnected(self) -> None:
        """Connected again with the same session. A term suspended meanwhile resumes if /controller is still
        ours and /controller_epoch unchanged (nobody can have been elected while the session lived): the view
        is read again and sent to every broker, with the same epoch. Otherwise: an ordinary election."""
        term, self._suspended_term = self._suspended_term, None
        if term is not None and not self.activity.is_active and await self._holds_controller(term[1]):
            log.info("Controller %d: reconnected to ZooKeeper; resumes as the controller (epoch %d)",
                     self.broker_id, term[0])
            await self._on_controller_failover(*term)
            return
        await self._elect()

    async def _holds_controller(self, epoch_zk_version: int) -> bool:
        current = await self.zk.get_or_none(znodes.CONTROLLER_PATH)
        if current is None or znodes.decode_controller(current[0]) != self.broker_id:
            return False
        if current[1].ephemeral_owner != self.zk.session_id:
            return False
        epoch = await self.zk.get_or_none(znodes.CONTROLLER_EPOCH_PATH)
        return epoch is not None and epoch[1].version == epoch_zk_version

    async def _elect(self) -> None:
        current = await self.zk.get_or_none(znodes.CONTROLLER_PATH)
        if current is not None:
            data, stat = current
            self._controller_id = znodes.decode_controller(data)
            if (
                self._controller_id == self.broker_id
                and not self.activity.is_active
                and stat.ephemeral_owner == self.zk.session_id
            ):
                # Our own registration, left by a failed term of this session: remove it to elect anew.
                await self.zk.delete(znodes.CONTROLLER_PATH, stat.version)
            return
        try:
            epoch, epoch_zk_version = await self._register_controller_and_increment_epoch()
        except ControllerMovedError:
            current = await self.zk.get_or_none(znodes.CONTROLLER_PATH)
            self._controller_id = znodes.decode_controller(current[0]) if current is not None else -1
            return
        self._controller_id = self.broker_id
        await self._on_controller_failover(epoch, epoch_zk_version)

    async def _register_controller_and_increment_epoch(self) -> tuple[int, int]:
        """Create /controller and bump /controller_epoch in one transaction (Kafka's
        registerControllerAndIncrementControllerEpoch); returns the new epoch and its znode version."""
        current, expected_version = await self._read_controller_epoch()
        epoch = current + 1
        registration = znodes.encode_controller(self.broker_id, int(time.time() * 1000))
        try:
            results = await self.zk.multi(
                [
                    CreateOp(znodes.CONTROLLER_PATH, registration, ephemeral=True),
                    SetOp(znodes.CONTROLLER_EPOCH_PATH, znodes.encode_controller_epoch(epoch), expected_version),
                ]
            )
        except (NodeExistsError, BadVersionError):
            # Lost the race, unless an earlier attempt of ours went through (Kafka's checkControllerAndEpoch).
            controller = await self.zk.get_or_none(znodes.CONTROLLER_PATH)
            if controller is not None and znodes.decode_controller(controller[0]) == self.broker_id:
                data, stat = await self.zk.get(znodes.CONTROLLER_EPOCH_PATH)
                if znodes.decode_controller_epoch(data) == epoch:
                    return epoch, stat.version
            raise ControllerMovedError("another broker was elected controller") from None
        return epoch, stat_version(results[1])

    async def _read_controller_epoch(self) -> tuple[int, int]:
        """/controller_epoch and its znode version, creating it with the initial epoch if missing."""
        got = await self.zk.get_or_none(znodes.CONTROLLER_EPOCH_PATH)
        if got is None:
            initial = znodes.encode_controller_epoch(znodes.INITIAL_CONTROLLER_EPOCH)
            try:
                await self.zk.create(znodes.CONTROLLER_EPOCH_PATH, initial)
                return znodes.INITIAL_CONTROLLER_EPOCH, 0
            except NodeExistsError:
                got = await self.zk.get(znodes.CONTROLLER_EPOCH_PATH)
        data, stat = got
        return znodes.decode_controller_epoch(data), stat.version

    async def _on_controller_failover(self, epoch: int, epoch_zk_version: int) -> None:
        """Become the active controller: read the cluster from ZooKeeper, elect leaders for partitions without
        a live one, and tell every live broker everything (Kafka's onControllerFailover). The elected partitions
        are told first, on their own (Kafka sends them after the whole state), so that they are online again
        without waiting for every broker to go through every partition."""
        self.activity.start()
        self._epoch = epoch
        self.context.reset(epoch=epoch, epoch_zk_version=epoch_zk_version)
        self.replica_states.reset()
        context = self.context
        log.info("Broker %d is the controller now, controller epoch %d", self.broker_id, epoch)
        # Watch first, then read: a change in between is an event that finds the view up to date or fixes it.
        await self._watch_children(znodes.BROKER_IDS_PATH)
        await self._watch_children(znodes.TOPICS_PATH)
        context.live_brokers = await self.store.read_live_brokers()
        for broker in context.live_brokers.values():
            self.channel.add_broker(broker.id, broker.host, broker.port)
        await self.topics.read_topics(await self.zk.get_children(znodes.TOPICS_PATH))
        await self.deletion.read_queued_topics()
        await self.notifications.skip_config_changes_before_now()
        # Their first call comes at once: pending ISR change notifications (and deletions, reassignments and
        # preferred elections asked for) are processed after this.
        for path in (znodes.ISR_CHANGE_NOTIFICATION_PATH, znodes.CONFIG_CHANGES_PATH, znodes.DELETE_TOPICS_PATH):
            await self._watch_children(path)
        for path in (znodes.REASSIGN_PARTITIONS_PATH, znodes.PREFERRED_REPLICA_ELECTION_PATH):
            await self._watch_data(path)

        self.deletion.send_pending_deletions(context.live_brokers)
        # Decided on the states read_topics has just read, not read again
        elected = await self.partition_states.elect_offline_partitions(
            context.offline_partitions(), "controller failover", just_read=context.states
        )
        if elected:  # the partitions that were offline first, in requests of their own: they wait for nothing else
            urgent = self.requests.new_batch()
            self.partition_states.queue_changes(urgent, elected)
            self.requests.send(urgent)
        partitions = context.serving_partitions()
        batch = self.requests.new_batch()
        # One UpdateMetadata to every live broker with every partition: the elected ones named here, the others
        # added as their LeaderAndIsr is queued, a slice at a time with the event loop run in between, so that
        # the senders put the elected partitions' requests on the wire meanwhile (and this broker's own clients
        # are answered), rather than after the whole state is built
        batch.add_update_metadata(context.live_brokers, context.partition_infos(elected))
        told = set(elected)
        rest = [tp for tp in partitions if tp in context.states and tp not in told]
        for start in range(0, len(rest), WHOLE_STATE_SLICE):
            self.partition_states.queue_changes(batch, rest[start:start + WHOLE_STATE_SLICE])
            await asyncio.sleep(0)
        self.requests.send(batch)
        if elected:
            log.info("Controller %d elected leaders of %s at failover", self.broker_id, elected)
        await self.partition_states.initialize_partitions([tp for tp in partitions if tp not in context.states])
        await self.reassignments.resume()
        self.elections.start()

    async def _resign(self) -> None:
        """Stop acting as controller (Kafka's onControllerResignation)."""
        for watch in self._active_watches:
            watch.cancel()
        self._active_watches = []
        self.elections.stop()
        self.deletion.fail_waiters()
        await self.channel.shutdown()
        if self.activity.is_active:
            log.info("Broker %d resigned as the controller (epoch %d)", self.broker_id, self._epoch)
        self.activity.stop()
        self.context.reset()
        self.replica_states.reset()
