"""`TopicCreation`: CreateTopics requests, and topics that appear or go in /brokers/topics.

A topic is validated against the controller's view (name, collisions, live brokers, seed 001's assignment or an
explicit one, its configs), then its config, assignment and first partition states are written (one fenced
transaction, or for a large topic its config and assignment first, then its states in pipelined transactions:
controller.zk_store) and sent to the replicas. Topics written by other tools are picked up from the /brokers/topics
watch.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from controller.activity import ControllerActivity
from controller.assignment import assign_replicas, topics_collide, validate_assignment, validate_topic_name
from controller.context import ControllerContext
from controller.event_manager import ControllerMovedError
from controller.partition_state_machine import PartitionStateMachine
from controller.reassignment import ReassignmentManager
from controller.replica_state_machine import ReplicaStateMachine
from controller.request_sender import BrokerRequestSender
from controller.zk_store import ControllerZkStore
from protocol.apis.topics import CreatableTopic, CreatableTopicResult, CreateTopicsRequest, CreateTopicsResponse
from protocol.errors import ErrorCode, KafkaError
from zk import znodes
from zk.client import CreateOp, NodeExistsError, Op, SetOp, ZkClient
from zk.znodes import LeaderIsrAndControllerEpoch, TopicAssignment

log = logging.getLogger("controller")

NO_NUM_PARTITIONS = -1  # CreateTopics: use the default partition count (or the explicit assignment)
NO_REPLICATION_FACTOR = -1

TopicConfigValidator = Callable[[dict[str, str]], object]  # raises ValueError (LogConfigError) for a bad config
TopicAcks = dict[str, list[asyncio.Future[Any]]]


def topic_result(name: str, code: ErrorCode, message: str | None) -> CreatableTopicResult:
    return CreatableTopicResult(name=name, error_code=code, error_message=message)


def not_controller(name: str, broker_id: int) -> CreatableTopicResult:
    return topic_result(name, ErrorCode.NOT_CONTROLLER, f"broker {broker_id} is not the controller")


class TopicCreation:
    """Creates topics, and follows the topics in ZooKeeper."""

    def __init__(self, context: ControllerContext, activity: ControllerActivity, zk: ZkClient,
                 store: ControllerZkStore, requests: BrokerRequestSender, partition_states: PartitionStateMachine,
                 replica_states: ReplicaStateMachine, reassignments: ReassignmentManager,
                 step_down: Callable[[], Awaitable[None]], validate_config: TopicConfigValidator, *,
                 default_num_partitions: int, default_replication_factor: int) -> None:
        self._context = context
        self._activity = activity
        self._zk = zk
        self._store = store
        self._requests = requests
        self._partition_states = partition_states
        self._replica_states = replica_states
        self._reassignments = reassignments
        self._step_down = step_down  # resign: a fresh election takes place
        self.validate_config = validate_config
        self.default_num_partitions = default_num_partitions
        self.default_replication_factor = default_replication_factor

    # -- CreateTopics -----------------------------------------------------------------------

    async def handle_create_topics(self, request: CreateTopicsRequest) -> CreateTopicsResponse:
        """Validate and create topics (active controller only; otherwise NOT_CONTROLLER for each).

        Answers once every replica's broker acknowledged its LeaderAndIsr, or after request.timeout_ms
        (then REQUEST_TIMED_OUT for the topics not confirmed, as Kafka); at once if timeout_ms <= 0."""
        results, acks = await self._activity.answer(
            "CreateTopics", lambda: self.process_create_topics(request),
            lambda why: ([topic_result(t.name, ErrorCode.NOT_CONTROLLER, why) for t in request.topics], {}))
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

    async def process_create_topics(self, request: CreateTopicsRequest) -> tuple[list[CreatableTopicResult], TopicAcks]:
        if not self._activity.is_active:
            return [not_controller(t.name, self._activity.broker_id) for t in request.topics], {}
        counts = Counter(t.name for t in request.topics)
        results: list[CreatableTopicResult] = []
        created: dict[str, dict[int, LeaderIsrAndControllerEpoch]] = {}
        batch = self._requests.new_batch()
        for index, topic in enumerate(request.topics):
            if counts[topic.name] > 1:
                results.append(topic_result(
                    topic.name,
                    ErrorCode.INVALID_REQUEST,
                    f"Create topics request contains multiple entries for the topic {topic.name!r}",
                ))
                continue
            try:
                assignment = self._validate_new_topic(topic)
                if not request.validate_only:
                    created[topic.name] = await self._write_new_topic(topic.name, assignment, topic.configs)
            except KafkaError as e:
                results.append(topic_result(topic.name, e.code, e.message))
                continue
            except ControllerMovedError as e:
                log.info("Controller %d: %s", self._activity.broker_id, e)
                results.extend(not_controller(t.name, self._activity.broker_id) for t in request.topics[index:])
                await self._step_down()
                return results, {}
            new = created.get(topic.name, assignment)
            results.append(CreatableTopicResult(
                name=topic.name,
                error_code=ErrorCode.NONE if len(new) == len(assignment) else ErrorCode.UNKNOWN_SERVER_ERROR,
                error_message=None if len(new) == len(assignment) else (
                    f"Topic '{topic.name}' was created, but the first states of {len(assignment) - len(new)} of its "
                    "partitions could not be written; the next controller initialises them"),
                num_partitions=len(assignment),
                replication_factor=len(assignment[0]),
                topic_id=self._context.topic_ids.get(topic.name, "") if topic.name in created else "",
            ))
            if topic.name in created:
                self._partition_states.record_new_states(batch, topic.name, created[topic.name], "topic created")
        acks = self._requests.send(batch).leader_and_isr
        topic_acks: TopicAcks = {}
        for name, states in created.items():
            hosts = {r for p in states for r in self._context.replicas(name, p)}
            topic_acks[name] = [acks[b] for b in sorted(hosts) if b in acks]
        return results, topic_acks

    def _validate_new_topic(self, topic: CreatableTopic) -> dict[int, list[int]]:
        """The topic's replica assignment; raises KafkaError with the CreateTopics error code."""
        context = self._context
        validate_topic_name(topic.name)
        if topic.name in context.topics_to_delete:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' is marked for deletion.")
        if topic.name in context.assignments:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists.")
        for existing in context.assignments:
            if topics_collide(topic.name, existing):
                raise KafkaError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{topic.name}' collides with existing topic: {existing}"
                )
        live = sorted(context.live_brokers)
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
        """Write the topic's config and assignment, then its partition states; returns the states written (a
        partition whose state could not be written is New, initialised by the next controller)."""
        states = {p: self._partition_states.first_state(replicas) for p, replicas in assignment.items()}
        config_path = znodes.topic_config_path(topic)
        config = znodes.encode_topic_config(configs)
        config_op: Op = (
            SetOp(config_path, config) if await self._zk.exists(config_path) else CreateOp(config_path, config)
        )
        topic_id = znodes.new_topic_id()
        topic_op = CreateOp(znodes.topic_path(topic), znodes.encode_topic_znode(TopicAssignment(assignment,
                                                                                                topic_id=topic_id)))
        try:
            failed = await self._store.create_partition_states(topic, states, None, extra=[config_op, topic_op])
        except NodeExistsError as e:
            if e.op_index == 1:  # created meanwhile by another tool; the TopicChange event will follow
                raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic}' already exists.") from None
            raise
        self._context.assignments[topic] = assignment
        self._context.topic_ids[topic] = topic_id
        if failed:
            self._partition_states.log_not_initialized(topic, failed)
        return {p: state for p, state in states.items() if p not in failed}

    # -- /brokers/topics --------------------------------------------------------------------

    async def read_topics(self, topics: list[str]) -> None:
        """Read the assignments, topic ids, reassignments in progress and partition states of topics into the
        context; the replicas of partitions with a state are initialized in the replica state machine. A topic
        without a topic id (written before topics had one, or by another tool) gets one, as in Kafka 2.8+."""
        context = self._context
        found = await self._store.read_assignments(topics)
        for topic, znode in found.items():
            if znode.topic_id is None:
                znode = replace(znode, topic_id=znodes.new_topic_id())
                await self._store.write_topic(topic, znode)
                log.info("Controller %d: topic %s gets topic id %s", self._activity.broker_id, topic, znode.topic_id)
            context.assignments[topic] = znode.partitions
            context.topic_ids[topic] = znode.topic_id
            self._reassignments.load(topic, znode)
        states = await self._store.read_partition_states(context.partitions(list(found)))
        context.states.update(states)
        self._replica_states.initialize(states)

    async def process_topic_change(self) -> None:
        if not self._activity.is_active:
            return
        context = self._context
        topics = set(await self._zk.get_children(znodes.TOPICS_PATH))
        for topic in sorted(set(context.assignments) - topics):
            log.info("Controller %d: topic %s is gone", self._activity.broker_id, topic)
            self._replica_states.forget(context.partitions([topic]))
            for partition in context.assignments.pop(topic):
                context.states.pop((topic, partition), None)
                context.reassignments.pop((topic, partition), None)
            context.topic_ids.pop(topic, None)
            context.topics_to_delete.discard(topic)
        new = sorted(topics - set(context.assignments))
        if new:
            log.info("Controller %d: new topics %s", self._activity.broker_id, new)
            await self.read_topics(new)
            await self._partition_states.initialize_partitions(
                [tp for tp in context.partitions(new) if tp not in context.states]
            )
