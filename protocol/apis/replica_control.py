"""The controller's requests to brokers (Kafka's control requests): LeaderAndIsr (4), StopReplica (5) and
UpdateMetadata (6), each fenced by the controller epoch; and a broker's ControlledShutdown (7) to the controller.
minikafka's own protocol only."""

from __future__ import annotations

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int16, Int32, Int64, message
from protocol.topic_partition import TopicPartition

LEADER_DURING_DELETE = -2  # UpdateMetadata leader of a partition whose topic is being deleted


#: The broker epoch of a controller request (or ControlledShutdown) that does not know it: never stale (Kafka's
#: AbstractControlRequest.UNKNOWN_BROKER_EPOCH).
UNKNOWN_BROKER_EPOCH = -1


def is_broker_epoch_stale(request_epoch: int, current_epoch: int) -> bool:
    """Kafka's isBrokerEpochStale: a request for an older registration of the broker (KIP-380). A newer one is not
    stale: the controller may see a new registration before the broker has learnt its own epoch."""
    return request_epoch != UNKNOWN_BROKER_EPOCH and request_epoch < current_epoch


@message
class PartitionError:
    """The outcome of a controller request for one partition."""

    topic: str
    partition: Int32
    error_code: Int16


@message
class PartitionLeadership:
    """A partition's leadership as decided by the controller (fields shared by LeaderAndIsr and
    UpdateMetadata). zk_version is the version of the partition state znode."""

    topic: str
    partition: Int32
    controller_epoch: Int32
    leader: Int32
    leader_epoch: Int32
    isr: list[Int32]
    zk_version: Int32
    replicas: list[Int32]


# ------------------------------------------------------------------------------------------------ LeaderAndIsr


@message
class LeaderAndIsrPartitionState(PartitionLeadership):
    """A partition the receiving broker must lead or follow; is_new when the partition was just created.
    topic_id names the topic's incarnation (KIP-516; empty if unknown): a local log of another one is stale."""

    is_new: bool = False
    topic_id: str = ""


@message
class LiveLeader:
    """A leader named in a LeaderAndIsr request and where to reach it."""

    broker_id: Int32
    host: str
    port: Int32


@message
class LeaderAndIsrRequest:
    """Controller to broker: become leader or follower of these partitions."""

    controller_id: Int32
    controller_epoch: Int32
    broker_epoch: Int64
    partition_states: list[LeaderAndIsrPartitionState]
    live_leaders: list[LiveLeader]


@message
class LeaderAndIsrResponse:
    """Request-level error (e.g. STALE_CONTROLLER_EPOCH) and per-partition errors."""

    error_code: Int16
    partition_errors: list[PartitionError]


LEADER_AND_ISR = Api(ApiKey.LEADER_AND_ISR, "LeaderAndIsr", LeaderAndIsrRequest, LeaderAndIsrResponse)


# ------------------------------------------------------------------------------------------------ StopReplica


@message
class StopReplicaPartition:
    """A replica to stop (and delete if delete_partition). With a topic_id, only a replica of that incarnation
    of the topic is stopped."""

    topic: str
    partition: Int32
    leader_epoch: Int32 = -1
    delete_partition: bool
    topic_id: str = ""


@message
class StopReplicaRequest:
    """Controller to broker: stop replicating these partitions."""

    controller_id: Int32
    controller_epoch: Int32
    broker_epoch: Int64
    partitions: list[StopReplicaPartition]


@message
class StopReplicaResponse:
    """Request-level error and per-partition errors."""

    error_code: Int16
    partition_errors: list[PartitionError]


STOP_REPLICA = Api(ApiKey.STOP_REPLICA, "StopReplica", StopReplicaRequest, StopReplicaResponse)


# ------------------------------------------------------------------------------------------------ UpdateMetadata


@message
class UpdateMetadataPartitionState(PartitionLeadership):
    """A partition's state for the receiving broker's metadata cache, with its topic's id (KIP-516; empty if the
    topic has none)."""

    offline_replicas: list[Int32]
    topic_id: str = ""


@message
class UpdateMetadataEndpoint:
    """One of a live broker's advertised listeners."""

    listener: str
    host: str
    port: Int32
    security_protocol: str = "PLAINTEXT"


@message
class LiveBroker:
    """A live broker named in an UpdateMetadata request and where to reach it on each of its listeners."""

    id: Int32
    endpoints: list[UpdateMetadataEndpoint]


@message
class UpdateMetadataRequest:
    """Controller to broker: refresh the metadata cache."""

    controller_id: Int32
    controller_epoch: Int32
    broker_epoch: Int64
    partition_states: list[UpdateMetadataPartitionState]
    live_brokers: list[LiveBroker]


@message
class UpdateMetadataResponse:
    """Whether the metadata was applied."""

    error_code: Int16


UPDATE_METADATA = Api(ApiKey.UPDATE_METADATA, "UpdateMetadata", UpdateMetadataRequest, UpdateMetadataResponse)


# ------------------------------------------------------------------------------------------------ ControlledShutdown


@message
class ControlledShutdownRequest:
    """Broker to controller: move my leaderships away before I stop."""

    broker_id: Int32
    broker_epoch: Int64


@message
class ControlledShutdownResponse:
    """The partitions the broker still leads; empty when shutdown may proceed."""

    error_code: Int16
    remaining_partitions: list[TopicPartition]


CONTROLLED_SHUTDOWN = Api(ApiKey.CONTROLLED_SHUTDOWN, "ControlledShutdown", ControlledShutdownRequest,
                          ControlledShutdownResponse)
