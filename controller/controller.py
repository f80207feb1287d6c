"""`KafkaController`: runs in every broker; the one that wins /controller is active.

Single writer, as Kafka's ControllerEventManager: every ZooKeeper watch, session event and request
becomes an event on one queue, consumed by one task, so handlers never interleave. Every write the
active controller makes to ZooKeeper is a transaction that also checks the version of
/controller_epoch it got when elected (KAFKA-6082), so a deposed controller cannot change anything.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from broker.state_change import record_state_change
from controller import zkdata
from controller.assignment import (
    assign_replicas,
    topics_collide,
    validate_assignment,
    validate_topic_name,
)
from controller.channel import ControllerBrokerRequestBatch, ControllerChannelManager
from controller.zk import (
    BadVersionError,
    CheckOp,
    CreateOp,
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
from protocol.messages import CreatableTopic, CreatableTopicResult, CreateTopicsRequest, CreateTopicsResponse

log = logging.getLogger("controller")

NO_NUM_PARTITIONS = -1  # CreateTopics: use the default partition count (or the explicit assignment)
NO_REPLICATION_FACTOR = -1

TopicConfigValidator = Callable[[dict[str, str]], object]  # raises ValueError (LogConfigError) for a bad config


class ControllerMovedError(Exception):
    """This broker is no longer the controller: its epoch was fenced or /controller names another broker."""


@dataclass
class ControllerContext:
    """The active controller's view of the cluster, read from ZooKeeper at election and kept up to date."""

    epoch: int = 0
    epoch_zk_version: int = 0
    live_brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    states: dict[tuple[str, int], LeaderIsrAndControllerEpoch] = field(default_factory=dict)

    def partitions(self, topics: Iterable[str] | None = None) -> list[tuple[str, int]]:
        names = sorted(self.assignments) if topics is None else topics
        return [(t, p) for t in names for p in sorted(self.assignments.get(t, {}))]

    def replicas(self, topic: str, partition: int) -> list[int]:
        return self.assignments[topic][partition]

    def live_replicas(self, topic: str, partition: int) -> list[int]:
        return [r for r in self.replicas(topic, partition) if r in self.live_brokers]


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
    """Controller election, the controller event queue, topic creation and broker changes."""

    def __init__(
        self,
        broker_id: int,
        zk: ZkClient,
        channel: ControllerChannelManager,
        default_log_config_validator: TopicConfigValidator,
        *,
        default_num_partitions: int = 1,
        default_replication_factor: int = 1,
    ) -> None:
        self.broker_id = broker_id
        self.zk = zk
        self.channel = channel
        self.validate_config = default_log_config_validator
        self.default_num_partitions = default_num_partitions
        self.default_replication_factor = default_replication_factor
        self.context = ControllerContext()  # meaningful while active; read-only outside this class
        self._active = False
        self._epoch = 0
        self._controller_id = -1
        self._events: asyncio.Queue[_Event] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._controller_watch: Watch | None = None
        self._active_watches: list[Watch] = []

    @property
    def is_active(self) -> bool:
        """True while this broker is the controller."""
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
                else:
                    log.exception("Controller %d failed processing %s", self.broker_id, event.name)
                if self._active:  # the view may be half-updated: let a fresh election rebuild it
                    await self._step_down()
            else:
                if event.future is not None and not event.future.done():
                    event.future.set_result(result)

    def _on_controller_znode(self, data: bytes | None, _stat: object) -> None:
        self._enqueue("ControllerChange", lambda: self._process_controller_change(data))

    def _on_session_event(self, state: ZkState) -> None:
        if state is ZkState.LOST:  # the session expired: /controller of ours is gone
            self._enqueue("SessionExpired", self._resign)
        elif state in (ZkState.CONNECTED, ZkState.NEW_SESSION):  # an election may have been missed meanwhile
            self._enqueue("Reelect", self._elect)

    def _on_broker_ids(self, _children: list[str]) -> None:
        self._enqueue("BrokerChange", self._process_broker_change)

    def _on_topics(self, _children: list[str]) -> None:
        self._enqueue("TopicChange", self._process_topic_change)

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
        """Become the active controller: read the cluster from ZooKeeper and tell every live broker."""
        self._active = True
        self._epoch = epoch
        self.context = ControllerContext(epoch=epoch, epoch_zk_version=epoch_zk_version)
        log.info("Broker %d is the controller now, controller epoch %d", self.broker_id, epoch)
        # Watch first, then read: a change in between is an event that finds the view up to date or fixes it.
        self._active_watches = [
            await self.zk.watch_children(zkdata.BROKER_IDS_PATH, self._on_broker_ids),
            await self.zk.watch_children(zkdata.TOPICS_PATH, self._on_topics),
        ]
        self.context.live_brokers = await self._read_live_brokers()
        for broker in self.context.live_brokers.values():
            self.channel.add_broker(broker.id, broker.host, broker.port)
        await self._read_topics(await self.zk.get_children(zkdata.TOPICS_PATH))
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
        batch.send()
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
        """Apply ops atomically, only if /controller_epoch is still the version we were elected with.

        Errors of the ops keep their `op_index` into `ops`."""
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
        self.context.live_brokers = current
        for broker_id in new + bounced:
            self.channel.add_broker(broker_id, current[broker_id].host, current[broker_id].port)
        if dead:
            self._on_broker_failure(dead)
        if new or bounced:
            await self._on_broker_startup(new + bounced)

    def _on_broker_failure(self, dead: list[int]) -> None:
        """Tell the live brokers which brokers and replicas are gone."""
        affected = [
            tp
            for tp in self.context.partitions()
            if tp in self.context.states and set(self.context.replicas(*tp)) & set(dead)
        ]
        batch = self._new_batch()
        batch.add_update_metadata(self.context.live_brokers, self._partition_infos(affected))
        batch.send()

    async def _on_broker_startup(self, started: list[int]) -> None:
        """Send the other brokers the new live set, the started ones the full metadata and their replicas
        (Kafka's onBrokerStartup); then create the states of partitions that had no live replica before."""
        partitions = [tp for tp in self.context.partitions() if tp in self.context.states]
        batch = self._new_batch()
        batch.add_update_metadata(set(self.context.live_brokers) - set(started))
        batch.send()
        batch.add_update_metadata(started, self._partition_infos(partitions))
        batch.send()
        for topic, partition in partitions:
            hosts = [r for r in self.context.replicas(topic, partition) if r in started]
            if hosts:
                state = self.context.states[(topic, partition)]
                batch.add_leader_and_isr(hosts, topic, partition, state, self.context.replicas(topic, partition))
        batch.send()
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

    async def _initialize_partitions(self, partitions: list[tuple[str, int]]) -> None:
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
        batch.send()

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
        acks = batch.send()
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

    def _log_state_change(self, topic: str, partition: int, state: LeaderIsrAndControllerEpoch, reason: str) -> None:
        record_state_change(source="controller", broker_id=self.broker_id, topic=topic, partition=partition,
                            controller_epoch=state.controller_epoch, leader_epoch=state.leader_epoch,
                            leader=state.leader, isr=state.isr, reason=reason, zk_version=state.zk_version)

    async def _read_live_brokers(self) -> dict[int, BrokerInfo]:
        ids = [int(name) for name in await self.zk.get_children(zkdata.BROKER_IDS_PATH) if name.isdigit()]
        found = await asyncio.gather(*(self.zk.get_or_none(zkdata.broker_path(b)) for b in ids))
        brokers: dict[int, BrokerInfo] = {}
        for broker_id, got in zip(ids, found, strict=True):
            if got is None:
                continue
            try:
                brokers[broker_id] = zkdata.decode_broker(broker_id, got[0], got[1].czxid)
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
