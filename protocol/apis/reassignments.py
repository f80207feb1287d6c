"""Partition reassignments asked of the controller (KIP-455): AlterPartitionReassignments (45) starts, changes or
cancels (null replicas) the reassignment of partitions; ListPartitionReassignments (46) lists those in progress.

On Kafka's wire: v0 of each, the version Kafka 3.9 serves (flexible)."""

from __future__ import annotations

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int16, Int32, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec


@message
class ReassignablePartition:
    """The target replicas of one partition; None cancels its reassignment in progress."""

    partition_index: Int32
    replicas: list[Int32] | None


@message
class ReassignableTopic:
    """The partitions of one topic to reassign."""

    name: str
    partitions: list[ReassignablePartition]


@message
class AlterPartitionReassignmentsRequest:
    """Start, change or cancel reassignments (served by the controller)."""

    timeout_ms: Int32
    topics: list[ReassignableTopic]


@message
class ReassignablePartitionResponse:
    """The outcome for one partition: NONE (started or cancelled), or why not."""

    partition_index: Int32
    error_code: Int16
    error_message: str | None = None


@message
class ReassignableTopicResponse:
    """The outcomes for the partitions of one topic."""

    name: str
    partitions: list[ReassignablePartitionResponse]


@message
class AlterPartitionReassignmentsResponse:
    """Request-level error (NOT_CONTROLLER) and per-partition outcomes."""

    error_code: Int16
    error_message: str | None
    responses: list[ReassignableTopicResponse]


@message
class ListPartitionReassignmentsTopics:
    """Some partitions of one topic."""

    name: str
    partition_indexes: list[Int32]


@message
class ListPartitionReassignmentsRequest:
    """The reassignments in progress among the partitions named (all of them if None)."""

    timeout_ms: Int32
    topics: list[ListPartitionReassignmentsTopics] | None


@message
class OngoingPartitionReassignment:
    """A reassignment in progress: the replicas assigned now (target and original), those added, those removed."""

    partition_index: Int32
    replicas: list[Int32]
    adding_replicas: list[Int32]
    removing_replicas: list[Int32]


@message
class OngoingTopicReassignment:
    """The reassignments in progress of one topic."""

    name: str
    partitions: list[OngoingPartitionReassignment]


@message
class ListPartitionReassignmentsResponse:
    """Request-level error (NOT_CONTROLLER) and the reassignments in progress."""

    error_code: Int16
    error_message: str | None
    topics: list[OngoingTopicReassignment]


def alter_partition_reassignments_error(request: AlterPartitionReassignmentsRequest, code: ErrorCode,
                                        error_message: str | None) -> AlterPartitionReassignmentsResponse:
    """The answer to an AlterPartitionReassignments that failed as a whole (Kafka's getErrorResponse)."""
    return AlterPartitionReassignmentsResponse(error_code=code, error_message=error_message, responses=[
        ReassignableTopicResponse(name=t.name, partitions=[ReassignablePartitionResponse(
            partition_index=p.partition_index, error_code=code, error_message=error_message) for p in t.partitions])
        for t in request.topics])


def list_partition_reassignments_error(_request: ListPartitionReassignmentsRequest, code: ErrorCode,
                                       error_message: str | None) -> ListPartitionReassignmentsResponse:
    """The answer to a ListPartitionReassignments that failed."""
    return ListPartitionReassignmentsResponse(error_code=code, error_message=error_message, topics=[])


def _kafka_alter_request(body: Message, _version: int) -> AlterPartitionReassignmentsRequest:
    return AlterPartitionReassignmentsRequest(timeout_ms=body["timeout_ms"], topics=[ReassignableTopic(
        name=t["name"], partitions=[ReassignablePartition(partition_index=p["partition_index"], replicas=p["replicas"])
                                    for p in t["partitions"]]) for t in body["topics"]])


def _kafka_alter_response(body: AlterPartitionReassignmentsResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "error_code": body.error_code, "error_message": body.error_message,
            "responses": [{"name": t.name, "partitions": [
                {"partition_index": p.partition_index, "error_code": p.error_code, "error_message": p.error_message}
                for p in t.partitions]} for t in body.responses]}


def _kafka_list_request(body: Message, _version: int) -> ListPartitionReassignmentsRequest:
    named = body["topics"]
    return ListPartitionReassignmentsRequest(timeout_ms=body["timeout_ms"], topics=None if named is None else [
        ListPartitionReassignmentsTopics(name=t["name"], partition_indexes=t["partition_indexes"]) for t in named])


def _kafka_list_response(body: ListPartitionReassignmentsResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "error_code": body.error_code, "error_message": body.error_message,
            "topics": [{"name": t.name, "partitions": [
                {"partition_index": p.partition_index, "replicas": p.replicas, "adding_replicas": p.adding_replicas,
                 "removing_replicas": p.removing_replicas} for p in t.partitions]} for t in body.topics]}


ALTER_PARTITION_REASSIGNMENTS = Api(
    ApiKey.ALTER_PARTITION_REASSIGNMENTS, "AlterPartitionReassignments", AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse, alter_partition_reassignments_error,
    kafka=spec_codec("AlterPartitionReassignments", _kafka_alter_request, _kafka_alter_response))
LIST_PARTITION_REASSIGNMENTS = Api(
    ApiKey.LIST_PARTITION_REASSIGNMENTS, "ListPartitionReassignments", ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse, list_partition_reassignments_error,
    kafka=spec_codec("ListPartitionReassignments", _kafka_list_request, _kafka_list_response))
