"""`PartitionAddition`: CreatePartitions, adding partitions to a topic (never removing any).

New partitions are placed by the replica assignment over the live brokers (controller.assignment), continuing the
partition numbering as in a topic created with that many, with the topic's replication factor; or the explicit
assignment given. The topic znode gets them (fenced), then they are created as any new partition (NewPartition ->
OnlinePartition). Refused: a topic that does not exist or is being deleted, one being reassigned, a count that is
not larger than the current one, an assignment that does not fit.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from controller.activity import ControllerActivity
from controller.assignment import InvalidReplicaAssignmentError, assign_replicas, validate_replicas
from controller.context import ControllerContext
from controller.event_manager import ControllerMovedError
from controller.partition_state_machine import PartitionStateMachine
from controller.zk_store import ControllerZkStore
from protocol.apis.topics import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.topic_partition import TopicPartition
from zk.znodes import TopicAssignment

log = logging.getLogger("controller")


def partitions_result(name: str, code: ErrorCode, message: str | None = None) -> CreatePartitionsTopicResult:
    return CreatePartitionsTopicResult(name=name, error_code=code, error_message=message)


class PartitionAddition:
    """Adds partitions to topics."""

    def __init__(self, context: ControllerContext, activity: ControllerActivity, store: ControllerZkStore,
                 partition_states: PartitionStateMachine, step_down: Callable[[], Awaitable[None]]) -> None:
        self._context = context
        self._activity = activity
        self._store = store
        self._partition_states = partition_states
        self._step_down = step_down  # resign: a fresh election takes place

    async def handle_create_partitions(self, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
        """CreatePartitions, processed as a controller event (NOT_CONTROLLER for every topic elsewhere)."""
        results = await self._activity.answer(
            "CreatePartitions", lambda: self.process_create_partitions(request),
            lambda why: [partitions_result(t.name, ErrorCode.NOT_CONTROLLER, why) for t in request.topics])
        return CreatePartitionsResponse(results=results)

    async def process_create_partitions(self, request: CreatePartitionsRequest) -> list[CreatePartitionsTopicResult]:
        results = []
        for index, topic in enumerate(request.topics):
            if not self._activity.is_active:
                results.append(partitions_result(topic.name, ErrorCode.NOT_CONTROLLER,
                                                 f"broker {self._activity.broker_id} is not the controller"))
                continue
            try:
                added = self._validate(topic, [t.name for t in request.topics[:index]])
                if not request.validate_only:
                    await self._add(topic.name, added)
            except KafkaError as e:
                results.append(partitions_result(topic.name, e.code, e.message))
                continue
            except ControllerMovedError as e:
                log.info("Controller %d: %s", self._activity.broker_id, e)
                results += [partitions_result(t.name, ErrorCode.NOT_CONTROLLER, str(e)) for t in request.topics[index:]]
                await self._step_down()
                return results
            results.append(partitions_result(topic.name, ErrorCode.NONE))
        return results

    def _validate(self, topic: CreatePartitionsTopic, earlier: list[str]) -> dict[int, list[int]]:
        """The new partitions' replicas; raises KafkaError with the CreatePartitions error code."""
        context = self._context
        name = topic.name
        if name in earlier:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Topic '{name}' is given more than once.")
        if name not in context.assignments:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        if name in context.topics_to_delete:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"The topic '{name}' is queued for deletion.")
        if any(t == name for t, _ in context.reassignments):
            raise KafkaError(ErrorCode.REASSIGNMENT_IN_PROGRESS,
                             f"A partition reassignment is in progress for the topic '{name}'.")
        current = len(context.assignments[name])
        if topic.count == current:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
        if topic.count < current:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic currently has {current} partitions, which is "
                                                           f"higher than the requested {topic.count}.")
        replication_factor = len(context.replicas(name, 0))
        adding = topic.count - current
        live = sorted(context.live_brokers)
        if topic.assignments is None:
            return assign_replicas(live, adding, replication_factor, first_partition=current)
        if len(topic.assignments) != adding:
            raise InvalidReplicaAssignmentError(
                f"Increasing the number of partitions by {adding} but {len(topic.assignments)} assignments provided.")
        added = {}
        for partition, assignment in enumerate(topic.assignments, start=current):
            added[partition] = validate_replicas(partition, assignment.broker_ids, live)
            if len(added[partition]) != replication_factor:
                raise InvalidReplicaAssignmentError(
                    f"Inconsistent replication factor between partitions, partition 0 has {replication_factor} "
                    f"while partition {partition} has {len(added[partition])}.")
        return added

    async def _add(self, topic: str, added: dict[int, list[int]]) -> None:
        context = self._context
        assignment = {**context.assignments[topic], **added}
        await self._store.write_topic(topic, TopicAssignment(assignment, topic_id=context.topic_ids.get(topic)))
        context.assignments[topic] = assignment
        log.info("Controller %d: topic %s has %d partitions now: added %s", self._activity.broker_id, topic,
                 len(assignment), added)
        await self._partition_states.initialize_partitions([TopicPartition(topic, p) for p in sorted(added)])
