"""`KafkaController`: runs in every broker; the one that wins /controller is active.

Single writer, as Kafka's ControllerEventManager: every ZooKeeper watch, session event and request
becomes an event on one queue, consumed by one task, so handlers never interleave. Every write the
active controller makes to ZooKeeper is a transaction that also checks the version of
/controller_epoch it got when elected (KAFKA-6082), so a deposed controller cannot change anything.

What the active controller does (Kafka 2.x, ZooKeeper mode):

- broker failure (/brokers/ids): partitions the dead broker led get an offline-partition election (first live
  replica of the assignment in the ISR; unclean, if the topic allows it, else offline with the ISR keeping its
  last member); it leaves the ISR of the others. Each change bumps the leader epoch and is written conditionally
  on the state znode's version, read from ZooKeeper just before (a leader's concurrent ISR write makes it re-read
  and decide again). LeaderAndIsr goes to the live replicas, UpdateMetadata to every live broker.
- broker start-up, or a bounce (a new registration czxid, the broker epoch): a bounce is a failure followed by a
  start-up; a starting broker gets the metadata and LeaderAndIsr for its replicas, and offline partitions elect.
- /config/changes notifications: a topic whose unclean.leader.election.enable turned on elects its offline
  partitions.
- /isr_change_notification: re-read the named partitions' states, send UpdateMetadata, delete the notifications.
- controlled shutdown of a broker: move its leaderships to other live ISR members, drop it from the ISRs it
  follows in (StopReplica to it), answer the partitions it still leads.
- session SUSPENDED: stop acting at once; CONNECTED with the same session and nothing changed: resume the term
  (reading everything again); LOST / NEW_SESSION: resign and stand for election again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from broker.state_change import record_state_change
from controller import zkdata
from controller.assignment import (
    assign_replicas,
    topics_collide,
    validate_assignment,
    validate_topic_name,
)
from controller.channel import BrokerRemovedError, ControllerBrokerRequestBatch, ControllerChannelManager
from controller.election import (
    NO_LEADER,
    Election,
    LeaderAndIsr,
    after_broker_failure,
    controlled_shutdown_election,
    isr_without,
    offline_partition_election,
)
from controller.topic_config import (
    CHANGE_EXPIRATION_MS,
    TOPIC_ENTITY,
    config_change_sequence,
    decode_config_change,
    read_topic_config,
    unclean_leader_election_enabled,
)
from controller.zk import (
    BadVersionError,
    CheckOp,
    CreateOp,
    DeleteOp,
    NodeExistsError,
    NoNodeError,
    Op,
    OpResult,
    SetOp,
    Watch,
    ZkClient,
    ZkError,
    ZkState,
    ensure_top_level_paths,
)
from controller.zkdata import BrokerInfo, LeaderIsrAndControllerEpoch
from protocol.errors import ErrorCode, KafkaError
from protocol.messages import (
    ControlledShutdownResponse,
    CreatableTopic,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    StopReplicaPartition,
    StopReplicaRequest,
    TopicPartition,
)

log = logging.getLogger("controller")

NO_NUM_PARTITIONS = -1  # CreateTopics: use the default partition count (or the explicit assignment)
NO_REPLICATION_FACTOR = -1
UNKNOWN_BROKER_EPOCH = -1  # ControlledShutdown from a broker that does not know its epoch: not checked (as Kafka)
STATE_UPDATE_ATTEMPTS = 10  # rounds of re-reading a partition state after version conflicts before giving up

TopicConfigValidator = Callable[[dict[str, str]], object]  # raises ValueError (LogConfigError) for a bad config
TopicPartitionKey = tuple[str, int]


class ControllerMovedError(Exception):
    """This broker is no longer the controller: its epoch was fenced or /controller names another broker."""


@dataclass
class ControllerContext:
    """The active controller's view of the cluster, read from ZooKeeper at election and kept up to date."""

    epoch: int = 0
    epoch_zk_version: int = 0
    live_brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    states: dict[TopicPartitionKey, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)  # brokers in controlled shutdown

    def partitions(self, topics: Iterable[str] | None = None) -> list[TopicPartitionKey]:
        names = sorted(self.assignments) if topics is None else topics
        return [(t, p) for t in names for p in sorted(self.assignments.get(t, {}))]

    def replicas(self, topic: str, partition: int) -> list[int]:
        return self.assignments[topic][partition]

    def live_replicas(self, topic: str, partition: int) -> list[int]:
        return [r for r in self.replicas(topic, partition) if r in self.live_brokers]

    def electable(self) -> set[int]:
        """Brokers that may become leader: live and not shutting down (Kafka's liveBrokerIds)."""
        return set(self.live_brokers) - self.shutting_down

    def offline_partitions(self, topics: Iterable[str] | None = None) -> list[TopicPartitionKey]:
        """Partitions without a live leader (NO_LEADER, or a leader that is not registered)."""
        return [tp for tp in self.partitions(topics) if tp in self.states and self.states[tp].leader not in
                self.live_brokers]


@dataclass(frozen=True, slots=True)
class _PartitionChange:
    """A new leader/ISR the controller decided for a partition, and why."""

    state: LeaderAndIsr
    reason: str
    election: Election | None = None


Decide = Callable[[TopicPartitionKey, LeaderIsrAndControllerEpoch], Awaitable[_PartitionChange | None]]


@dataclass(slots=True)
class _Event:
    """A unit of controller work; `future`, if any, gets its result."""

    name: str
    run: Callable[[], Awaitable[Any]]
    future: asyncio.Future[Any] | None = None

    def fail(self, error: Exception) -> None:
        if self.future is not None and not self.future.done():
            self.future.set_exception(error)


class KafkaController:
    """Controller election, the controller event queue, topic creation, broker changes, leader elections,
    ISR and config change notifications, and controlled shutdown."""

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
    ) -> None:
        self.broker_id = broker_id
        self.inter_broker_listener_name = inter_broker_listener_name  # the listener brokers are reached on
        self.zk = zk
        self.channel = channel
        self.validate_config = default_log_config_validator
        self.default_num_partitions = default_num_partitions
        self.default_replication_factor = default_replication_factor
        self.unclean_leader_election_default = unclean_leader_election_enable  # the broker-level default
        self.context = ControllerContext()  # meaningful while active; read-only outside this class
        self.unclean_leader_elections = 0  # how many unclean elections this broker made (Kafka's meter)
        self._active = False
        self._epoch = 0
        self._controller_id = -1
        self._suspended_term: tuple[int, int] | None = None  # (epoch, epoch znode version) while suspended
        self._last_config_change = -1  # sequence number of the newest /config/changes notification processed
        self._events: asyncio.Queue[_Event] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._controller_watch: Watch | None = None
        self._active_watches: list[Watch] = []

    @property
    def is_active(self) -> bool:
        """True while this broker is the controller (false from the moment its session is suspended)."""
        return self._active

    @property
    def epoch(self) -> int:
        """The controller epoch of this broker's latest term as controller (0 if never elected)."""
        return self._epoch

    @property
    def controller_id(self) -> int:
        """The controller's broker id as last seen in /controller, -1 if none."""
        return self._controller_id

    # -- lifecycle ------------------------------------------------------------------------------

    async def startup(self) -> None:
        """Start the event loop and take part in the election (the /controller watch fires at once)."""
        await ensure_top_level_paths(self.zk)
        self._task = asyncio.get_running_loop().create_task(self._process_events(), name=f"controller-{self.broker_id}")
        self.zk.add_state_listener(self._on_session_event)
        self._controller_watch = await self.zk.watch_data(zkdata.CONTROLLER_PATH, self._on_controller_znode)

    async def shutdown(self) -> None:
        """Stop processing events and resign. /controller goes with this broker's ZooKeeper session."""
        self.zk.remove_state_listener(self._on_session_event)
        if self._controller_watch is not None:
            self._controller_watch.cancel()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        while not self._events.empty():
            self._events.get_nowait().fail(ControllerMovedError(f"broker {self.broker_id} is shutting down"))
        await self._resign()

    # -- requests -------------------------------------------------------------------------------

    async def create_topics(self, request: CreateTopicsRequest) -> CreateTopicsResponse:
        """Validate and create topics (active controller only; otherwise NOT_CONTROLLER for each).

        Answers once every replica's broker acknowledged its LeaderAndIsr, or after request.timeout_ms
        (then REQUEST_TIMED_OUT for the topics not confirmed, as Kafka); at once if timeout_ms <= 0."""
        if self._task is None:
            return CreateTopicsResponse(topics=[_not_controller(t.name, self.broker_id) for t in request.topics])
        future = asyncio.get_running_loop().create_future()
        self._events.put_nowait(_Event("CreateTopics", lambda: self._process_create_topics(request), future))
        try:
            results, acks = await future
        except Exception:  # the handler failed, and the controller stepped down; or it shut down
            return CreateTopicsResponse(topics=[_not_controller(t.name, self.broker_id) for t in request.topics])
        waiting = {f for futures in acks.values() for f in futures}
        if waiting and request.timeout_ms > 0:
            done, _ = await asyncio.wait(waiting, timeout=request.timeout_ms / 1000)
            for result in results:
                if any(f not in done for f in acks.get(result.name, ())):
                    result.error_code = ErrorCode.REQUEST_TIMED_OUT
                    result.error_message = (
                        f"Topic {result.name!r} was created, but not every replica confirmed it within "
                        f"{request.timeout_ms} ms"
                    )
        return CreateTopicsResponse(topics=results)

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ControlledShutdownResponse:
        """A broker asks to shut down (Kafka's doControlledShutdown), processed as a controller event.

        Its leaderships of replicated partitions move to other live ISR members (leader epoch + 1), it leaves
        the ISRs of the partitions it follows (leader epoch + 1; StopReplica without delete to it), and every
        live broker gets UpdateMetadata. Answers the replicated partitions it still leads (those without another
        live ISR member): empty means it may go. NOT_CONTROLLER if this broker is not (or stops being) the
        controller, BROKER_NOT_AVAILABLE for an unregistered broker, STALE_BROKER_EPOCH for an epoch older than
        the broker's registration (a request from before a session expiry)."""
        if self._task is None or not self._active:
            return _shutdown_response(ErrorCode.NOT_CONTROLLER)
        future = asyncio.get_running_loop().create_future()
        self._events.put_nowait(
            _Event("ControlledShutdown", lambda: self._process_controlled_shutdown(broker_id, broker_epoch), future)
        )
        try:
            return await future
        except Exception as e:  # fenced, or failed and stepped down: the broker retries with the next controller
            log.info("Controller %d: controlled shutdown of broker %d failed: %s", self.broker_id, broker_id, e)
            return _shutdown_response(ErrorCode.NOT_CONTROLLER)

    # -- the event loop -------------------------------------------------------------------------

    def _enqueue(self, name: str, run: Callable[[], Awaitable[Any]]) -> None:
        self._events.put_nowait(_Event(name, run))

    async def _process_events(self) -> None:
        while True:
            event = await self._events.get()
            if event.future is not None and event.future.done():  # the requester gave up
                continue
            log.debug("Controller %d processing %s", self.broker_id, event.name)
            try:
                result = await event.run()
            except asyncio.CancelledError:
                event.fail(ControllerMovedError(f"broker {self.broker_id} is shutting down"))
                raise
            except Exception as e:
                event.fail(e)
                if isinstance(e, ControllerMovedError):
                    log.info("Controller %d: %s", self.broker_id, e)
                elif self._active:
                    log.exception("Controller %d failed processing %s", self.broker_id, event.name)
                else:
                    log.info("Controller %d: %s failed after it stopped acting: %s", self.broker_id, event.name, e)
                if self._active:  # the view may be half-updated: let a fresh election rebuild it
                    await self._step_down()
            else:
                if event.future is not None and not event.future.done():
                    event.future.set_result(result)

    def _on_controller_znode(self, data: bytes | None, _stat: object) -> None:
        self._enqueue("ControllerChange", lambda: self._process_controller_change(data))

    def _on_session_event(self, state: ZkState) -> None:
        if state is ZkState.SUSPENDED:
            # Cut off from ZooKeeper: the session may expire and another broker be elected any moment now.
            # Stop acting at once (no more writes, no more requests to brokers); a reconnection decides the rest.
            if self._active:
                log.warning("Controller %d: ZooKeeper session suspended; stops acting as the controller (epoch %d)",
                            self.broker_id, self.context.epoch)
                self._suspended_term = (self.context.epoch, self.context.epoch_zk_version)
                self._active = False
                self._enqueue("SessionSuspended", self._resign)
        elif state is ZkState.LOST:  # the session expired: /controller of ours is gone
            self._suspended_term = None
            self._active = False
            self._enqueue("SessionExpired", self._resign)
        elif state is ZkState.NEW_SESSION:  # a new session: stand for election as any other candidate
            self._suspended_term = None
            self._enqueue("Reelect", self._elect)
        else:  # CONNECTED: the same session again; an election may have been missed meanwhile
            self._enqueue("Reconnected", self._process_reconnected)

    def _on_broker_ids(self, _children: list[str]) -> None:
        self._enqueue("BrokerChange", self._process_broker_change)

    def _on_topics(self, _children: list[str]) -> None:
        self._enqueue("TopicChange", self._process_topic_change)

    def _on_isr_changes(self, _children: list[str]) -> None:
        self._enqueue("IsrChangeNotification", self._process_isr_changes)

    def _on_config_changes(self, _children: list[str]) -> None:
        self._enqueue("ConfigChangeNotification", self._process_config_changes)

    # -- election -------------------------------------------------------------------------------

    async def _process_controller_change(self, data: bytes | None) -> None:
        if data is None:
            self._controller_id = -1
            if self._active:
                await self._resign()
            await self._elect()
            return
        self._controller_id = zkdata.decode_controller(data)
        if self._active and self._controller_id != self.broker_id:
            await self._resign()

    async def _process_reconnected(self) -> None:
        """Connected again with the same session. A term suspended meanwhile resumes if /controller is still
        ours and /controller_epoch unchanged (nobody can have been elected while the session lived): the view
        is read again and sent to every broker, with the same epoch. Otherwise: an ordinary election."""
        term, self._suspended_term = self._suspended_term, None
        if term is not None and not self._active and await self._holds_controller(term[1]):
            log.info("Controller %d: reconnected to ZooKeeper; resumes as the controller (epoch %d)",
                     self.broker_id, term[0])
            await self._on_controller_failover(*term)
            return
        await self._elect()

    async def _holds_controller(self, epoch_zk_version: int) -> bool:
        current = await self.zk.get_or_none(zkdata.CONTROLLER_PATH)
        if current is None or zkdata.decode_controller(current[0]) != self.broker_id:
            return False
        if current[1].ephemeral_owner != self.zk.session_id:
            return False
        epoch = await self.zk.get_or_none(zkdata.CONTROLLER_EPOCH_PATH)
        return epoch is not None and epoch[1].version == epoch_zk_version

    async def _elect(self) -> None:
        current = await self.zk.get_or_none(zkdata.CONTROLLER_PATH)
        if current is not None:
            data, stat = current
            self._controller_id = zkdata.decode_controller(data)
            if (
                self._controller_id == self.broker_id
                and not self._active
                and stat.ephemeral_owner == self.zk.session_id
            ):
                # Our own registration, left by a failed term of this session: remove it to elect anew.
                await self.zk.delete(zkdata.CONTROLLER_PATH, stat.version)
            return
        try:
            epoch, epoch_zk_version = await self._register_controller_and_increment_epoch()
        except ControllerMovedError:
            current = await self.zk.get_or_none(zkdata.CONTROLLER_PATH)
            self._controller_id = zkdata.decode_controller(current[0]) if current is not None else -1
            return
        self._controller_id = self.broker_id
        await self._on_controller_failover(epoch, epoch_zk_version)

    async def _register_controller_and_increment_epoch(self) -> tuple[int, int]:
        """Create /controller and bump /controller_epoch in one transaction (Kafka's
        registerControllerAndIncrementControllerEpoch); returns the new epoch and its znode version."""
        current, expected_version = await self._read_controller_epoch()
        epoch = current + 1
        registration = zkdata.encode_controller(self.broker_id, int(time.time() * 1000))
        try:
            results = await self.zk.multi(
                [
                    CreateOp(zkdata.CONTROLLER_PATH, registration, ephemeral=True),
                    SetOp(zkdata.CONTROLLER_EPOCH_PATH, zkdata.encode_controller_epoch(epoch), expected_version),
                ]
            )
        except (NodeExistsError, BadVersionError):
            # Lost the race, unless an earlier attempt of ours went through (Kafka's checkControllerAndEpoch).
            controller = await self.zk.get_or_none(zkdata.CONTROLLER_PATH)
            if controller is not None and zkdata.decode_controller(controller[0]) == self.broker_id:
                data, stat = await self.zk.get(zkdata.CONTROLLER_EPOCH_PATH)
                if zkdata.decode_controller_epoch(data) == epoch:
                    return epoch, stat.version
            raise ControllerMovedError("another broker was elected controller") from None
        return epoch, _stat_version(results[1])

    async def _read_controller_epoch(self) -> tuple[int, int]:
        """/controller_epoch and its znode version, creating it with the initial epoch if missing."""
        got = await self.zk.get_or_none(zkdata.CONTROLLER_EPOCH_PATH)
        if got is None:
            initial = zkdata.encode_controller_epoch(zkdata.INITIAL_CONTROLLER_EPOCH)
            try:
                await self.zk.create(zkdata.CONTROLLER_EPOCH_PATH, initial)
                return zkdata.INITIAL_CONTROLLER_EPOCH, 0
            except NodeExistsError:
                got = await self.zk.get(zkdata.CONTROLLER_EPOCH_PATH)
        data, stat = got
        return zkdata.decode_controller_epoch(data), stat.version

    async def _on_controller_failover(self, epoch: int, epoch_zk_version: int) -> None:
        """Become the active controller: read the cluster from ZooKeeper, elect leaders for partitions without
        a live one, and tell every live broker everything (Kafka's onControllerFailover)."""
        self._active = True
        self._epoch = epoch
        self.context = ControllerContext(epoch=epoch, epoch_zk_version=epoch_zk_version)
        log.info("Broker %d is the controller now, controller epoch %d", self.broker_id, epoch)
        # Watch first, then read: a change in between is an event that finds the view up to date or fixes it.
        self._active_watches.append(await self.zk.watch_children(zkdata.BROKER_IDS_PATH, self._on_broker_ids))
        self._active_watches.append(await self.zk.watch_children(zkdata.TOPICS_PATH, self._on_topics))
        self.context.live_brokers = await self._read_live_brokers()
        for broker in self.context.live_brokers.values():
            self.channel.add_broker(broker.id, broker.host, broker.port)
        await self._read_topics(await self.zk.get_children(zkdata.TOPICS_PATH))
        # Config changes made before this term are in the topic configs read by the elections below.
        sequences = [config_change_sequence(c) for c in await self.zk.get_children(zkdata.CONFIG_CHANGES_PATH)]
        self._last_config_change = max((s for s in sequences if s is not None), default=-1)
        # Their first call comes at once: pending ISR change notifications are processed after this.
        self._active_watches.append(
            await self.zk.watch_children(zkdata.ISR_CHANGE_NOTIFICATION_PATH, self._on_isr_changes)
        )
        self._active_watches.append(await self.zk.watch_children(zkdata.CONFIG_CHANGES_PATH, self._on_config_changes))

        elected = await self._elect_offline_partitions(self.context.offline_partitions(), "controller failover")
        partitions = self.context.partitions()
        batch = self._new_batch()
        batch.add_update_metadata(self.context.live_brokers, self._partition_infos(partitions))
        for topic, partition in partitions:
            state = self.context.states.get((topic, partition))
            if state is not None:
                replicas = self.context.replicas(topic, partition)
                batch.add_leader_and_isr(
                    self.context.live_replicas(topic, partition), topic, partition, state, replicas
                )
        self._send(batch)
        if elected:
            log.info("Controller %d elected leaders of %s at failover", self.broker_id, elected)
        await self._initialize_partitions([tp for tp in partitions if tp not in self.context.states])

    async def _resign(self) -> None:
        """Stop acting as controller (Kafka's onControllerResignation)."""
        for watch in self._active_watches:
            watch.cancel()
        self._active_watches = []
        await self.channel.shutdown()
        if self._active:
            log.info("Broker %d resigned as the controller (epoch %d)", self.broker_id, self._epoch)
        self._active = False
        self.context = ControllerContext()

    async def _step_down(self) -> None:
        """Resign and remove our /controller registration so that a fresh election takes place."""
        await self._resign()
        try:
            current = await self.zk.get_or_none(zkdata.CONTROLLER_PATH)
            if (
                current is not None
                and zkdata.decode_controller(current[0]) == self.broker_id
                and current[1].ephemeral_owner == self.zk.session_id
            ):
                await self.zk.delete(zkdata.CONTROLLER_PATH, current[1].version)
        except ZkError as e:
            log.warning("Controller %d could not remove its /controller registration: %s", self.broker_id, e)

    async def _fenced_multi(self, ops: list[Op]) -> list[OpResult]:
        """Apply ops atomically, only if /controller_epoch is still the version we were elected with, and
        only while this broker acts as the controller (not while its session is suspended).

        Errors of the ops keep their `op_index` into `ops`."""
        if not self._active:
            raise ControllerMovedError(f"broker {self.broker_id} does not act as the controller now")
        check = CheckOp(zkdata.CONTROLLER_EPOCH_PATH, self.context.epoch_zk_version)
        try:
            return (await self.zk.multi([check, *ops]))[1:]
        except ZkError as e:
            if e.op_index == 0 and isinstance(e, BadVersionError | NoNodeError):
                raise ControllerMovedError(
                    f"controller epoch {self.context.epoch} is fenced: /controller_epoch changed"
                ) from None
            if e.op_index is not None:
                e.op_index -= 1
            raise

    # -- partition state changes ----------------------------------------------------------------

    async def _update_partition_states(
        self, partitions: Iterable[TopicPartitionKey], decide: Decide
    ) -> list[TopicPartitionKey]:
        """Change partition states as `decide` says, each on the state just read from ZooKeeper and written
        conditionally on its version in a fenced transaction (Kafka's updateLeaderAndIsr). A version conflict
        (the leader changed the ISR meanwhile) re-reads the state and decides again. Logs every change to the
        state-change log; returns the partitions changed (their new states are in the context)."""
        pending = list(dict.fromkeys(partitions))
        changed: list[TopicPartitionKey] = []
        for _ in range(STATE_UPDATE_ATTEMPTS):
            if not pending:
                break
            current = await self._read_partition_states(pending)
            proposals: list[tuple[TopicPartitionKey, LeaderIsrAndControllerEpoch, _PartitionChange]] = []
            for tp in pending:
                state = current.get(tp)
                if state is None:
                    continue
                if state.controller_epoch > self.context.epoch:
                    # Kafka's doElectLeaderForPartitions: a newer controller wrote it, so this one went through a
                    # soft failure; leave the partition alone (the epoch check of any write fences this term).
                    log.error("Controller %d leaves %s-%d alone: its state was written by controller epoch %d, "
                              "newer than ours (%d)", self.broker_id, *tp, state.controller_epoch, self.context.epoch)
                    continue
                change = await decide(tp, state)
                if change is not None:
                    proposals.append((tp, state, change))
            results = await asyncio.gather(
                *(self._write_partition_state(tp, state, change.state) for tp, state, change in proposals),
                return_exceptions=True,
            )
            pending = []
            for (tp, state, change), result in zip(proposals, results, strict=True):
                if isinstance(result, BadVersionError):
                    log.info("Controller %d: the state of %s-%d changed meanwhile; deciding again",
                             self.broker_id, *tp)
                    pending.append(tp)
                    continue
                if isinstance(result, BaseException):
                    raise result
                self.context.states[tp] = result
                changed.append(tp)
                unclean = change.election is not None and change.election.unclean
                if unclean:
                    self.unclean_leader_elections += 1
                    log.warning("Controller %d: %s-%d: %s", self.broker_id, *tp, change.reason)
                self._log_state_change(*tp, result, change.reason, previous_leader=state.leader,
                                       previous_leader_epoch=state.leader_epoch, previous_isr=list(state.isr),
                                       unclean=unclean)
        if pending:
            log.error("Controller %d gave up changing the states of %s after %d version conflicts",
                      self.broker_id, pending, STATE_UPDATE_ATTEMPTS)
        return changed

    async def _write_partition_state(
        self, tp: TopicPartitionKey, read: LeaderIsrAndControllerEpoch, new: LeaderAndIsr
    ) -> LeaderIsrAndControllerEpoch:
        state = LeaderIsrAndControllerEpoch(
            leader=new.leader, leader_epoch=new.leader_epoch, isr=tuple(new.isr), controller_epoch=self.context.epoch
        )
        path = zkdata.partition_state_path(*tp)
        (stat,) = await self._fenced_multi([SetOp(path, zkdata.encode_partition_state(state), read.zk_version)])
        return replace(state, zk_version=_stat_version(stat))

    async def _read_partition_states(
        self, partitions: list[TopicPartitionKey]
    ) -> dict[TopicPartitionKey, LeaderIsrAndControllerEpoch]:
        """Read the state znodes of partitions into the context (and return them)."""
        found = await asyncio.gather(*(self.zk.get_or_none(zkdata.partition_state_path(*tp)) for tp in partitions))
        states: dict[TopicPartitionKey, LeaderIsrAndControllerEpoch] = {}
        for tp, got in zip(partitions, found, strict=True):
            if got is None:
                continue
            try:
                states[tp] = self.context.states[tp] = zkdata.decode_partition_state(got[0], got[1].version)
            except zkdata.ZkDataError as e:
                log.error("Controller %d ignores the state of %s-%d: %s", self.broker_id, *tp, e)
        return states

    def _recovery_decider(self, cause: str, gone: Collection[int] | None = None) -> Decide:
        """Decide the state of partitions after brokers went away (`gone`), or, with `gone` None, of partitions
        whose leader is not live: Kafka's OfflinePartition -> OnlinePartition election and, for dead followers,
        OfflineReplica (leave the ISR, never emptying it). One leader epoch bump per change."""
        unclean_cache: dict[str, bool] = {}

        async def decide(tp: TopicPartitionKey, state: LeaderIsrAndControllerEpoch) -> _PartitionChange | None:
            topic, partition = tp
            replicas = self.context.replicas(topic, partition)
            live = self.context.electable()
            current = LeaderAndIsr(state.leader, state.leader_epoch, tuple(state.isr))
            dead = set(gone) if gone is not None else {current.leader} - {NO_LEADER} - set(self.context.live_brokers)
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
                if election is None and await self._unclean_enabled(topic, unclean_cache):
                    election = offline_partition_election(replicas, proposed.isr, live, unclean_leader_election=True)
                if election is not None:
                    proposed = LeaderAndIsr(election.leader, proposed.leader_epoch, election.isr)
            if (proposed.leader, proposed.isr) == (current.leader, current.isr):
                return None
            new = LeaderAndIsr(proposed.leader, current.leader_epoch + 1, proposed.isr)
            return _PartitionChange(new, _recovery_reason(cause, current, new, election), election)

        return decide

    async def _unclean_enabled(self, topic: str, cache: dict[str, bool]) -> bool:
        """The topic's unclean.leader.election.enable, read from ZooKeeper when needed (as Kafka does)."""
        if topic not in cache:
            try:
                config = await read_topic_config(self.zk, topic)
            except zkdata.ZkDataError as e:
                log.error("Controller %d cannot read the config of topic %s: %s", self.broker_id, topic, e)
                config = {}
            cache[topic] = unclean_leader_election_enabled(config, self.unclean_leader_election_default)
        return cache[topic]

    async def _elect_offline_partitions(
        self, partitions: list[TopicPartitionKey], cause: str
    ) -> list[TopicPartitionKey]:
        """Elect leaders for partitions without a live leader (Kafka's triggerOnlinePartitionStateChange)."""
        if not partitions:
            return []
        return await self._update_partition_states(partitions, self._recovery_decider(cause))

    def _queue_changes(
        self, batch: ControllerBrokerRequestBatch, partitions: Iterable[TopicPartitionKey], exclude: int | None = None
    ) -> None:
        """LeaderAndIsr with the partitions' current states to their live replicas (but `exclude`), and
        UpdateMetadata with them to every live broker."""
        for topic, partition in partitions:
            hosts = [r for r in self.context.live_replicas(topic, partition) if r != exclude]
            state = self.context.states[(topic, partition)]
            batch.add_leader_and_isr(hosts, topic, partition, state, self.context.replicas(topic, partition))

    def _send(self, batch: ControllerBrokerRequestBatch) -> dict[int, asyncio.Future[Any]]:
        """Send a batch, unless this broker stopped acting as the controller meanwhile (a suspended session):
        whatever it wrote is read again by the next term, which tells the brokers."""
        if not self._active:
            log.info("Controller %d does not act as the controller now: requests not sent", self.broker_id)
            return {}
        return batch.send()

    # -- broker and topic changes ---------------------------------------------------------------

    async def _process_broker_change(self) -> None:
        if not self._active:
            return
        current = await self._read_live_brokers()
        known = self.context.live_brokers
        dead = sorted(set(known) - set(current))
        bounced = sorted(b for b in current if b in known and current[b].epoch != known[b].epoch)
        new = sorted(b for b in current if b not in known)
        if not (dead or bounced or new):
            return
        log.info("Controller %d: new brokers %s, bounced %s, dead %s", self.broker_id, new, bounced, dead)
        for broker_id in dead + bounced:
            await self.channel.remove_broker(broker_id)
        # A bounced broker (a new registration: its session expired, or it restarted faster than we looked)
        # is a failure followed by a start-up, as in Kafka (KIP-380): its leaderships move, then it follows.
        self.context.live_brokers = {b: info for b, info in current.items() if b not in bounced}
        self.context.shutting_down -= set(dead) | set(bounced)
        if dead or bounced:
            await self._on_broker_failure(sorted(dead + bounced))
        self.context.live_brokers = current
        for broker_id in new + bounced:
            self.channel.add_broker(broker_id, current[broker_id].host, current[broker_id].port)
        if new or bounced:
            await self._on_broker_startup(sorted(new + bounced))

    async def _on_broker_failure(self, dead: list[int]) -> None:
        """Elect new leaders for the partitions the dead brokers led and remove them from ISRs (Kafka's
        onBrokerFailure / onReplicasBecomeOffline); tell the live replicas and every live broker."""
        affected = [
            tp
            for tp in self.context.partitions()
            if tp in self.context.states and set(self.context.replicas(*tp)) & set(dead)
        ]
        changed = await self._update_partition_states(
            affected, self._recovery_decider(f"broker failure of {dead}", gone=dead)
        )
        batch = self._new_batch()
        self._queue_changes(batch, changed)
        batch.add_update_metadata(self.context.live_brokers, self._partition_infos(affected))
        self._send(batch)

    async def _on_broker_startup(self, started: list[int]) -> None:
        """Send the other brokers the new live set, the started ones the full metadata and their replicas'
        states, elect leaders for offline partitions (Kafka's onBrokerStartup); then create the states of
        partitions that had no live replica before."""
        elected = await self._elect_offline_partitions(
            self.context.offline_partitions(), f"broker {started[0]} started" if len(started) == 1
            else f"brokers {started} started"
        )
        partitions = [tp for tp in self.context.partitions() if tp in self.context.states]
        batch = self._new_batch()
        batch.add_update_metadata(set(self.context.live_brokers) - set(started))
        self._send(batch)
        batch.add_update_metadata(started, self._partition_infos(partitions))
        for topic, partition in partitions:
            hosts = [r for r in self.context.replicas(topic, partition) if r in started]
            if hosts:
                state = self.context.states[(topic, partition)]
                batch.add_leader_and_isr(hosts, topic, partition, state, self.context.replicas(topic, partition))
        self._queue_changes(batch, elected)
        self._send(batch)
        await self._initialize_partitions([tp for tp in self.context.partitions() if tp not in self.context.states])

    async def _process_topic_change(self) -> None:
        if not self._active:
            return
        topics = set(await self.zk.get_children(zkdata.TOPICS_PATH))
        for topic in sorted(set(self.context.assignments) - topics):
            log.info("Controller %d: topic %s is gone", self.broker_id, topic)
            for partition in self.context.assignments.pop(topic):
                self.context.states.pop((topic, partition), None)
        new = sorted(topics - set(self.context.assignments))
        if new:
            log.info("Controller %d: new topics %s", self.broker_id, new)
            await self._read_topics(new)
            await self._initialize_partitions(
                [tp for tp in self.context.partitions(new) if tp not in self.context.states]
            )

    async def _initialize_partitions(self, partitions: list[TopicPartitionKey]) -> None:
        """Write the first state of partitions that have none (leader: the first live replica, ISR: the live
        replicas; Kafka's NewPartition -> OnlinePartition) and send it to their replicas."""
        batch = self._new_batch()
        by_topic: dict[str, dict[int, LeaderIsrAndControllerEpoch]] = {}
        for topic, partition in partitions:
            live = self.context.live_replicas(topic, partition)
            if not live:
                log.error("Controller %d: no live replica of %s-%d to lead it", self.broker_id, topic, partition)
                continue
            by_topic.setdefault(topic, {})[partition] = self._first_state(live)
        for topic, states in by_topic.items():
            try:
                existing: set[str] | None = set(await self.zk.get_children(zkdata.topic_partitions_path(topic)))
            except NoNodeError:
                existing = None
            try:
                await self._fenced_multi(_partition_state_ops(topic, states, existing))
            except NodeExistsError as e:
                log.warning("Controller %d: partition states of %s exist already: %s", self.broker_id, topic, e)
                continue
            self._record_new_states(batch, topic, states, "new partition")
        self._send(batch)

    # -- notifications --------------------------------------------------------------------------

    async def _process_isr_changes(self) -> None:
        """ISR changes written by partition leaders: read the named partitions' states into the context, send
        them to every live broker in UpdateMetadata, delete the notifications (Kafka's IsrChangeNotification)."""
        if not self._active:
            return
        names = [
            name
            for name in await self.zk.get_children(zkdata.ISR_CHANGE_NOTIFICATION_PATH)
            if name.startswith(zkdata.ISR_CHANGE_PREFIX)
        ]
        if not names:
            return
        paths = [f"{zkdata.ISR_CHANGE_NOTIFICATION_PATH}/{name}" for name in names]
        partitions: dict[TopicPartitionKey, None] = {}
        for path, got in zip(paths, await asyncio.gather(*map(self.zk.get_or_none, paths)), strict=True):
            if got is None:
                continue
            try:
                partitions.update(dict.fromkeys(zkdata.decode_isr_change(got[0])))
            except zkdata.ZkDataError as e:
                log.error("Controller %d ignores the ISR change notification %s: %s", self.broker_id, path, e)
        known = [(t, p) for t, p in partitions if p in self.context.assignments.get(t, {})]
        if known:
            await self._read_partition_states(known)
            log.info("Controller %d: ISR changes of %s", self.broker_id, known)
            batch = self._new_batch()
            batch.add_update_metadata(self.context.live_brokers, self._partition_infos(known))
            self._send(batch)
        await self._delete_notifications(paths)

    async def _delete_notifications(self, paths: list[str]) -> None:
        """Delete processed ISR change notifications, fenced (as Kafka's deleteIsrChangeNotifications)."""
        try:
            await self._fenced_multi([DeleteOp(path) for path in paths])
        except NoNodeError:  # some went meanwhile: delete the others one by one
            for path in paths:
                with contextlib.suppress(NoNodeError):
                    await self._fenced_multi([DeleteOp(path)])

    async def _process_config_changes(self) -> None:
        """New /config/changes notifications: re-read the named topics' configs; a topic whose unclean leader
        election is now enabled elects its offline partitions (Kafka's TopicUncleanLeaderElectionEnable). Old
        notifications are purged."""
        if not self._active:
            return
        children = await self.zk.get_children(zkdata.CONFIG_CHANGES_PATH)
        numbered = sorted((seq, name) for name in children if (seq := config_change_sequence(name)) is not None)
        topics: dict[str, None] = {}
        for seq, name in numbered:
            if seq <= self._last_config_change:
                continue
            got = await self.zk.get_or_none(f"{zkdata.CONFIG_CHANGES_PATH}/{name}")
            self._last_config_change = seq
            if got is None:
                continue
            try:
                entity_type, entity_name = decode_config_change(got[0])
            except zkdata.ZkDataError as e:
                log.error("Controller %d ignores the config change notification %s: %s", self.broker_id, name, e)
                continue
            if entity_type == TOPIC_ENTITY:
                topics[entity_name] = None
        cache: dict[str, bool] = {}
        for topic in topics:
            if topic not in self.context.assignments or not await self._unclean_enabled(topic, cache):
                continue
            offline = self.context.offline_partitions([topic])
            log.info("Controller %d: unclean.leader.election.enable is on for topic %s; offline partitions %s",
                     self.broker_id, topic, offline)
            elected = await self._elect_offline_partitions(
                offline, f"unclean.leader.election.enable turned on for topic {topic}"
            )
            batch = self._new_batch()
            self._queue_changes(batch, elected)
            self._send(batch)
        if topics:
            await self._purge_config_changes([name for _, name in numbered])

    async def _purge_config_changes(self, names: list[str]) -> None:
        """Delete notifications older than CHANGE_EXPIRATION_MS (every reader has seen them by then)."""
        now_ms = time.time() * 1000
        for name in names:
            path = f"{zkdata.CONFIG_CHANGES_PATH}/{name}"
            stat = await self.zk.exists(path)
            if stat is not None and now_ms - stat.ctime_ms > CHANGE_EXPIRATION_MS:
                with contextlib.suppress(NoNodeError):
                    await self.zk.delete(path)

    # -- controlled shutdown --------------------------------------------------------------------

    async def _process_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ControlledShutdownResponse:
        if not self._active:
            return _shutdown_response(ErrorCode.NOT_CONTROLLER)
        registered = self.context.live_brokers.get(broker_id)
        if registered is None:
            log.info("Controller %d: controlled shutdown of broker %d, which is not registered",
                     self.broker_id, broker_id)
            return _shutdown_response(ErrorCode.BROKER_NOT_AVAILABLE)
        if broker_epoch != UNKNOWN_BROKER_EPOCH and broker_epoch < registered.epoch:
            log.info("Controller %d: controlled shutdown of broker %d with stale broker epoch %d (registered %d)",
                     self.broker_id, broker_id, broker_epoch, registered.epoch)
            return _shutdown_response(ErrorCode.STALE_BROKER_EPOCH)
        log.info("Controller %d: controlled shutdown of broker %d (broker epoch %d)",
                 self.broker_id, broker_id, broker_epoch)
        self.context.shutting_down.add(broker_id)
        # Replicated partitions with a state (Kafka's partitionsToActOn); the ones it does not lead now are
        # those it follows in: they get StopReplica (no delete), so that it stops fetching and stays out of the ISR.
        hosted = [
            tp
            for tp in self.context.partitions()
            if tp in self.context.states and broker_id in self.context.replicas(*tp)
            and len(self.context.replicas(*tp)) > 1
        ]
        followed = [tp for tp in hosted if self.context.states[tp].leader != broker_id]
        changed = await self._update_partition_states(hosted, self._controlled_shutdown_decider(broker_id))
        batch = self._new_batch()
        # Moved leaderships go to every live replica, the shutting-down broker included (it becomes a follower);
        # an ISR shrink goes to the others only, as Kafka's OfflineReplica transition.
        self._queue_changes(batch, [tp for tp in changed if tp not in followed])
        self._queue_changes(batch, [tp for tp in changed if tp in followed], exclude=broker_id)
        self._send(batch)
        if followed and self._active:
            stop = StopReplicaRequest(
                controller_id=self.broker_id,
                controller_epoch=self.context.epoch,
                broker_epoch=registered.epoch,
                partitions=[
                    StopReplicaPartition(topic=t, partition=p, leader_epoch=self.context.states[(t, p)].leader_epoch,
                                         delete_partition=False)
                    for t, p in followed
                ],
            )
            try:
                self.channel.send(broker_id, stop)
            except BrokerRemovedError as e:
                log.info("Controller %d: %s", self.broker_id, e)
        remaining = [tp for tp in hosted if self.context.states[tp].leader == broker_id]
        log.info("Controller %d: broker %d shutting down; moved %s, still leads %s", self.broker_id, broker_id,
                 [tp for tp in changed if tp not in followed], remaining)
        return ControlledShutdownResponse(
            error_code=ErrorCode.NONE,
            remaining_partitions=[TopicPartition(topic=t, partition=p) for t, p in remaining],
        )

    def _controlled_shutdown_decider(self, broker_id: int) -> Decide:
        async def decide(tp: TopicPartitionKey, state: LeaderIsrAndControllerEpoch) -> _PartitionChange | None:
            replicas = self.context.replicas(*tp)
            current = LeaderAndIsr(state.leader, state.leader_epoch, tuple(state.isr))
            if state.leader == broker_id:
                election = controlled_shutdown_election(
                    replicas, current.isr, self.context.live_brokers, self.context.shutting_down
                )
                if election is None:  # no other live ISR member: it keeps leading; the broker is told so
                    return None
                return _PartitionChange(
                    election.state_after(current),
                    f"controlled shutdown of broker {broker_id}: leadership moved to broker {election.leader}",
                    election,
                )
            if broker_id in current.isr and len(current.isr) > 1:
                isr = isr_without(current.isr, broker_id)
                return _PartitionChange(
                    LeaderAndIsr(current.leader, current.leader_epoch + 1, isr),
                    f"controlled shutdown of broker {broker_id}: removed from the ISR",
                )
            return None

        return decide

    # -- topic creation -------------------------------------------------------------------------

    async def _process_create_topics(
        self, request: CreateTopicsRequest
    ) -> tuple[list[CreatableTopicResult], dict[str, list[asyncio.Future[Any]]]]:
        if not self._active:
            return [_not_controller(t.name, self.broker_id) for t in request.topics], {}
        counts = Counter(t.name for t in request.topics)
        results: list[CreatableTopicResult] = []
        created: dict[str, dict[int, LeaderIsrAndControllerEpoch]] = {}
        batch = self._new_batch()
        for index, topic in enumerate(request.topics):
            if counts[topic.name] > 1:
                results.append(
                    _result(
                        topic.name,
                        ErrorCode.INVALID_REQUEST,
                        f"Create topics request contains multiple entries for the topic {topic.name!r}",
                    )
                )
                continue
            try:
                assignment = self._validate_new_topic(topic)
                if not request.validate_only:
                    created[topic.name] = await self._write_new_topic(topic.name, assignment, topic.configs)
            except KafkaError as e:
                results.append(_result(topic.name, e.code, e.message))
                continue
            except ControllerMovedError as e:
                log.info("Controller %d: %s", self.broker_id, e)
                results.extend(_not_controller(t.name, self.broker_id) for t in request.topics[index:])
                await self._step_down()
                return results, {}
            results.append(
                CreatableTopicResult(
                    name=topic.name,
                    error_code=ErrorCode.NONE,
                    num_partitions=len(assignment),
                    replication_factor=len(assignment[0]),
                )
            )
            if topic.name in created:
                self._record_new_states(batch, topic.name, created[topic.name], "topic created")
        acks = self._send(batch)
        topic_acks: dict[str, list[asyncio.Future[Any]]] = {}
        for name, states in created.items():
            hosts = {r for p in states for r in self.context.replicas(name, p)}
            topic_acks[name] = [acks[b] for b in sorted(hosts) if b in acks]
        return results, topic_acks

    def _validate_new_topic(self, topic: CreatableTopic) -> dict[int, list[int]]:
        """The topic's replica assignment; raises KafkaError with the CreateTopics error code."""
        validate_topic_name(topic.name)
        if topic.name in self.context.assignments:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists.")
        for existing in self.context.assignments:
            if topics_collide(topic.name, existing):
                raise KafkaError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{topic.name}' collides with existing topic: {existing}"
                )
        live = sorted(self.context.live_brokers)
        if topic.assignments:
            if topic.num_partitions != NO_NUM_PARTITIONS or topic.replication_factor != NO_REPLICATION_FACTOR:
                raise KafkaError(
                    ErrorCode.INVALID_REQUEST,
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time.",
                )
            assignment = validate_assignment(((a.partition, a.broker_ids) for a in topic.assignments), live)
        else:
            num_partitions = topic.num_partitions
            replication_factor = topic.replication_factor
            if num_partitions == NO_NUM_PARTITIONS:
                num_partitions = self.default_num_partitions
            if replication_factor == NO_REPLICATION_FACTOR:
                replication_factor = self.default_replication_factor
            assignment = assign_replicas(live, num_partitions, replication_factor)
        try:
            self.validate_config(dict(topic.configs))
        except ValueError as e:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid config for topic '{topic.name}': {e}") from None
        return assignment

    async def _write_new_topic(
        self, topic: str, assignment: dict[int, list[int]], configs: Mapping[str, str]
    ) -> dict[int, LeaderIsrAndControllerEpoch]:
        """Write the topic's config, assignment and partition states in one fenced transaction."""
        states = {p: self._first_state(replicas) for p, replicas in assignment.items()}
        config_path = zkdata.topic_config_path(topic)
        config = zkdata.encode_topic_config(configs)
        config_op: Op = (
            SetOp(config_path, config) if await self.zk.exists(config_path) else CreateOp(config_path, config)
        )
        topic_op = CreateOp(zkdata.topic_path(topic), zkdata.encode_topic_assignment(assignment))
        try:
            await self._fenced_multi([config_op, topic_op, *_partition_state_ops(topic, states, None)])
        except NodeExistsError as e:
            if e.op_index == 1:  # created meanwhile by another tool; the TopicChange event will follow
                raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic}' already exists.") from None
            raise
        self.context.assignments[topic] = assignment
        return states

    # -- helpers --------------------------------------------------------------------------------

    def _new_batch(self) -> ControllerBrokerRequestBatch:
        return ControllerBrokerRequestBatch(self.channel, self.context.epoch, self.context.live_brokers)

    def _first_state(self, live_replicas: list[int]) -> LeaderIsrAndControllerEpoch:
        return LeaderIsrAndControllerEpoch(
            leader=live_replicas[0], leader_epoch=0, isr=tuple(live_replicas), controller_epoch=self.context.epoch
        )

    def _partition_infos(
        self, partitions: Iterable[tuple[str, int]]
    ) -> list[tuple[str, int, LeaderIsrAndControllerEpoch, list[int]]]:
        return [
            (t, p, self.context.states[(t, p)], self.context.replicas(t, p))
            for t, p in partitions
            if (t, p) in self.context.states
        ]

    def _record_new_states(
        self,
        batch: ControllerBrokerRequestBatch,
        topic: str,
        states: Mapping[int, LeaderIsrAndControllerEpoch],
        reason: str,
    ) -> None:
        """Remember the first states of new partitions, log them and queue their LeaderAndIsr (is_new)."""
        for partition, state in sorted(states.items()):
            self.context.states[(topic, partition)] = state
            self._log_state_change(topic, partition, state, reason)
            replicas = self.context.replicas(topic, partition)
            live = self.context.live_replicas(topic, partition)
            batch.add_leader_and_isr(live, topic, partition, state, replicas, is_new=True)

    def _log_state_change(
        self, topic: str, partition: int, state: LeaderIsrAndControllerEpoch, reason: str, **details: object
    ) -> None:
        record_state_change(source="controller", broker_id=self.broker_id, topic=topic, partition=partition,
                            controller_epoch=state.controller_epoch, leader_epoch=state.leader_epoch,
                            leader=state.leader, isr=state.isr, reason=reason, zk_version=state.zk_version,
                            **details)

    async def _read_live_brokers(self) -> dict[int, BrokerInfo]:
        ids = [int(name) for name in await self.zk.get_children(zkdata.BROKER_IDS_PATH) if name.isdigit()]
        found = await asyncio.gather(*(self.zk.get_or_none(zkdata.broker_path(b)) for b in ids))
        brokers: dict[int, BrokerInfo] = {}
        for broker_id, got in zip(ids, found, strict=True):
            if got is None:
                continue
            try:
                brokers[broker_id] = zkdata.decode_broker(broker_id, got[0], got[1].czxid,
                                                          self.inter_broker_listener_name)
            except zkdata.ZkDataError as e:
                log.error("Controller %d ignores broker %d: %s", self.broker_id, broker_id, e)
        return brokers

    async def _read_topics(self, topics: Iterable[str]) -> None:
        """Read the assignments and partition states of topics into the context."""
        for topic in topics:
            got = await self.zk.get_or_none(zkdata.topic_path(topic))
            if got is None:
                continue
            try:
                assignment = zkdata.decode_topic_assignment(got[0])
            except zkdata.ZkDataError as e:
                log.error("Controller %d ignores topic %s: %s", self.broker_id, topic, e)
                continue
            self.context.assignments[topic] = assignment
            paths = [zkdata.partition_state_path(topic, p) for p in assignment]
            found = await asyncio.gather(*map(self.zk.get_or_none, paths))
            for partition, got in zip(assignment, found, strict=True):
                if got is None:
                    continue
                data, stat = got
                try:
                    self.context.states[(topic, partition)] = zkdata.decode_partition_state(data, stat.version)
                except zkdata.ZkDataError as e:
                    log.error("Controller %d ignores the state of %s-%d: %s", self.broker_id, topic, partition, e)


def _partition_state_ops(
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


def _stat_version(result: OpResult) -> int:
    assert result is not None and not isinstance(result, str)
    return result.version


def _result(name: str, code: ErrorCode, message: str | None) -> CreatableTopicResult:
    return CreatableTopicResult(name=name, error_code=code, error_message=message)


def _not_controller(name: str, broker_id: int) -> CreatableTopicResult:
    return _result(name, ErrorCode.NOT_CONTROLLER, f"broker {broker_id} is not the controller")


def _shutdown_response(code: ErrorCode) -> ControlledShutdownResponse:
    return ControlledShutdownResponse(error_code=code, remaining_partitions=[])


def _recovery_reason(cause: str, old: LeaderAndIsr, new: LeaderAndIsr, election: Election | None) -> str:
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
