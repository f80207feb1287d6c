"""Leader elections asked of the controller: ElectLeaders (43), preferred or unclean.

On Kafka's wire: v0-2, the versions Kafka 3.9 serves (v0 elects preferred leaders only and has no error for the
request as a whole; v2+ flexible)."""

from __future__ import annotations

from enum import IntEnum, unique

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int8, Int16, Int32, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec


@unique
class ElectionType(IntEnum):
    """ElectLeaders election_type, Kafka's numbers."""

    PREFERRED = 0
    UNCLEAN = 1


@message
class TopicPartitions:
    """Some partitions of one topic."""

    topic: str
    partitions: list[Int32]


@message
class ElectLeadersRequest:
    """Elect leaders (served by the controller): the preferred replica, or for partitions without a live leader
    any live replica (unclean). topic_partitions None means every partition."""

    election_type: Int8
    topic_partitions: list[TopicPartitions] | None
    timeout_ms: Int32


@message
class PartitionResult:
    """The outcome for one partition: NONE (elected), ELECTION_NOT_NEEDED, or why not, in error_message."""

    partition_id: Int32
    error_code: Int16
    error_message: str | None = None


@message
class ReplicaElectionResult:
    """The outcomes for the partitions of one topic."""

    topic: str
    partition_result: list[PartitionResult]


@message
class ElectLeadersResponse:
    """Request-level error and per-partition results."""

    error_code: Int16
    replica_election_results: list[ReplicaElectionResult]
    throttle_time_ms: Int32 = 0


def elect_leaders_error(request: ElectLeadersRequest, code: ErrorCode, message: str | None) -> ElectLeadersResponse:
    """The answer to an ElectLeaders that failed as a whole: the error, and for every partition named (Kafka's
    getErrorResponse)."""
    return ElectLeadersResponse(error_code=code, replica_election_results=[ReplicaElectionResult(
        topic=t.topic, partition_result=[PartitionResult(partition_id=p, error_code=code, error_message=message)
                                         for p in t.partitions]) for t in request.topic_partitions or ()])


def _kafka_request(message: Message, version: int) -> ElectLeadersRequest:
    named = message["topic_partitions"]
    return ElectLeadersRequest(
        election_type=message["election_type"] if version >= 1 else ElectionType.PREFERRED,
        topic_partitions=None if named is None else [TopicPartitions(topic=t["topic"], partitions=t["partitions"])
                                                     for t in named],
        timeout_ms=message["timeout_ms"])


def _kafka_response(body: ElectLeadersResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "error_code": body.error_code, "replica_election_results": [
        {"topic": r.topic, "partition_result": [
            {"partition_id": p.partition_id, "error_code": p.error_code, "error_message": p.error_message}
            for p in r.partition_result]} for r in body.replica_election_results]}


ELECT_LEADERS = Api(ApiKey.ELECT_LEADERS, "ElectLeaders", ElectLeadersRequest, ElectLeadersResponse,
                    elect_leaders_error, kafka=spec_codec("ElectLeaders", _kafka_request, _kafka_response))
