"""Leader elections asked of the controller: ElectLeaders (43), preferred or unclean. minikafka's own protocol
only."""

from __future__ import annotations

from enum import IntEnum, unique

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int8, Int16, Int32, message


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


ELECT_LEADERS = Api(ApiKey.ELECT_LEADERS, "ElectLeaders", ElectLeadersRequest, ElectLeadersResponse)
