"""The replicas a broker hosts, with their roles and offsets: DescribeReplicas (1000, minikafka's own api), which
the admin client reads (`minikafka topic describe --replicas`)."""

from __future__ import annotations

from dataclasses import field

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int32, Int64, message


@message
class DescribeReplicasRequest:
    """Ask a broker for the state of the replicas it hosts; topics None means all."""

    topics: list[str] | None = None


@message
class FollowerState:
    """What a leader knows of one follower."""

    broker_id: Int32
    log_end_offset: Int64
    last_caught_up_time_ms: Int64
    last_fetch_time_ms: Int64


@message
class EpochStart:
    """One entry of a replica's leader epoch cache: an epoch and the offset of the first record written in it."""

    epoch: Int32
    start_offset: Int64


@message
class DescribedReplica:
    """One hosted replica: role ("leader" or "follower"), offsets, on a leader its followers, and where each leader
    epoch starts in this replica's log (its leader epoch cache, oldest first)."""

    topic: str
    partition: Int32
    role: str
    leader: Int32
    leader_epoch: Int32
    log_end_offset: Int64
    high_watermark: Int64
    log_start_offset: Int64
    isr: list[Int32]
    followers: list[FollowerState]
    min_insync_replicas: Int32 = -1
    leader_epochs: list[EpochStart] = field(default_factory=list)


@message
class DescribeReplicasResponse:
    """The replicas hosted by broker_id, and the newest controller epoch it has seen."""

    broker_id: Int32
    partitions: list[DescribedReplica]
    controller_epoch: Int32 = -1


DESCRIBE_REPLICAS = Api(ApiKey.DESCRIBE_REPLICAS, "DescribeReplicas", DescribeReplicasRequest,
                        DescribeReplicasResponse)
