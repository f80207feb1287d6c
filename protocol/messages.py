"""Every RPC minikafka speaks, declared once; encoding, decoding and validation derive from the declarations.

A frame's payload (see protocol.framing) is a msgpack map:

    request:  {"api_key": int, "api_version": int, "correlation_id": int, "client_id": str | None,
               "body": {...}}
    response: {"correlation_id": int, "error_code": int, "error_message": str | None, "body": {...} | None}

The response's top-level error is for request-level failures (a body that does not validate, an
unsupported version); its body is None then. Per-partition errors live in the body.

Messages are dataclasses whose annotations drive one generic codec: Int8/Int16/Int32/Int64 (ints with
a range; bool is not an int), bool, str, bytes (msgpack bin, passed through uncopied), ``X | None``,
``list[X]``, ``dict[str, X]`` and nested messages (generic ones too). Map keys are the field names. A
missing field takes its default; a missing field without one, a value of the wrong type or an int
out of range is refused with the path of the field. Unknown keys are ignored. Encoding validates
the same way, so a handler bug surfaces where it happens, not on the peer.
"""

import dataclasses
import os
import struct
import types
import typing
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import IntEnum, unique
from typing import Annotated, Any, Generic, NamedTuple, TypeVar, dataclass_transform

import msgpack

from protocol.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class IntWidth:
    """The wire width of an int field: its name and inclusive range."""

    name: str
    min: int
    max: int


Int8 = Annotated[int, IntWidth("int8", -(2**7), 2**7 - 1)]
Int16 = Annotated[int, IntWidth("int16", -(2**15), 2**15 - 1)]
Int32 = Annotated[int, IntWidth("int32", -(2**31), 2**31 - 1)]
Int64 = Annotated[int, IntWidth("int64", -(2**63), 2**63 - 1)]

# Sentinel values with Kafka's meanings.
CONSUMER_REPLICA_ID = -1  # Fetch/ListOffsets replica_id of a consumer (not a follower)
DEBUGGING_CONSUMER_ID = -2  # Fetch replica_id of a tool reading any replica (leader or follower) up to its HW
LEADER_DURING_DELETE = -2  # UpdateMetadata leader of a partition whose topic is being deleted
LATEST_TIMESTAMP = -1  # ListOffsets: the offset after the last consumable record (the high watermark)
EARLIEST_TIMESTAMP = -2  # ListOffsets: the log start offset

_T = TypeVar("_T")
P = TypeVar("P")


@dataclass_transform(kw_only_default=True)
def message(cls: type[_T]) -> type[_T]:
    """Declare a wire message: a slotted dataclass constructed with keyword arguments."""
    return dataclass(slots=True, kw_only=True)(cls)


# ---------------------------------------------------------------------------------------------
# Errors


class ProtocolError(ValueError):
    """Bytes or values that do not follow the protocol; `error_code` is what a server answers with."""

    error_code = ErrorCode.INVALID_REQUEST


class ValidationError(ProtocolError):
    """A message (or message body) with a field of the wrong type or range, or a missing field."""

    def __init__(self, label: str, path: str, problem: str) -> None:
        super().__init__(f"{label}: {path}: {problem}" if path else f"{label}: {problem}")
        self.label = label
        self.path = path
        self.problem = problem


class MalformedRequestError(ProtocolError):
    """Not a request at all (not msgpack, not a map, bad header): there is no correlation id to answer."""

    error_code = ErrorCode.CORRUPT_MESSAGE


class MalformedResponseError(ProtocolError):
    """A response that is not msgpack, not a map, or whose header or body does not validate."""

    error_code = ErrorCode.CORRUPT_MESSAGE


class RequestRejectedError(ProtocolError):
    """A request with a valid header that cannot be served; the server may answer `header.correlation_id`
    with `error_code` and this message (body None), or close the connection."""

    def __init__(self, header: "RequestHeader", message: str) -> None:
        super().__init__(message)
        self.header = header


class UnknownApiError(RequestRejectedError):
    """The header's api key is not one minikafka knows."""


class UnsupportedVersionError(RequestRejectedError):
    """The api is known but not at the header's version."""

    error_code = ErrorCode.UNSUPPORTED_VERSION


class InvalidRequestError(RequestRejectedError):
    """The body does not validate against the api's request declaration; the message gives the path."""


# ---------------------------------------------------------------------------------------------
# Envelope headers


@dataclass(slots=True)
class RequestHeader:
    """The fields every request carries beside its body."""

    api_key: Int16
    api_version: Int16
    correlation_id: Int32
    client_id: str | None


@message
class _ResponseHeader:
    correlation_id: Int32
    error_code: Int16
    error_message: str | None


# ---------------------------------------------------------------------------------------------
# Shapes shared by several RPCs


@message
class Topic(Generic[P]):
    """A topic name with per-partition entries (Produce, Fetch and ListOffsets, both directions)."""

    name: str
    partitions: list[P]


@message
class TopicPartition:
    """A partition of a topic."""

    topic: str
    partition: Int32


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


# ---------------------------------------------------------------------------------------------
# Produce (0)


@message
class ProducePartition:
    """A record batch (RecordBatch v2 bytes) for one partition."""

    partition: Int32
    records: bytes
    current_leader_epoch: Int32 = -1


@message
class ProduceRequest:
    """Append record batches; acks is 0, 1 or -1 (all)."""

    acks: Int16
    timeout_ms: Int32
    topics: list[Topic[ProducePartition]]


@message
class ProducePartitionResponse:
    """Where a partition's batch was appended, or why not."""

    partition: Int32
    error_code: Int16
    error_message: str | None = None
    base_offset: Int64
    log_append_time_ms: Int64 = -1
    log_start_offset: Int64 = -1


@message
class ProduceResponse:
    """Per-partition produce results."""

    topics: list[Topic[ProducePartitionResponse]]
    throttle_time_ms: Int32 = 0


# ---------------------------------------------------------------------------------------------
# Fetch (1)


@message
class FetchPartition:
    """Where to read one partition from. last_fetched_epoch lets the leader detect divergence."""

    partition: Int32
    current_leader_epoch: Int32 = -1
    fetch_offset: Int64
    last_fetched_epoch: Int32 = -1
    log_start_offset: Int64 = -1
    partition_max_bytes: Int32


@message
class FetchRequest:
    """Read from partition logs; replica_id is -1 for a consumer, else the fetching follower's broker id.

    session_id/session_epoch/forgotten_topics make an incremental fetch session (Kafka's KIP-227): epoch -1
    (the default) is a full fetch outside any session; see broker/replication/fetch_session.py."""

    replica_id: Int32
    replica_epoch: Int64 = -1
    max_wait_ms: Int32
    min_bytes: Int32
    max_bytes: Int32
    isolation_level: Int8 = 0
    topics: list[Topic[FetchPartition]]
    session_id: Int32 = 0
    session_epoch: Int32 = -1
    forgotten_topics: list[Topic[Int32]] = field(default_factory=list)


@message
class EpochEndOffset:
    """A leader epoch and the offset at which it ends."""

    epoch: Int32
    end_offset: Int64


@message
class LeaderIdAndEpoch:
    """The leader a broker currently knows for a partition."""

    leader_id: Int32
    leader_epoch: Int32


@message
class FetchPartitionResponse:
    """Record batches read from one partition, with its offsets. diverging_epoch, when set, tells a
    follower where its log diverges from the leader's."""

    partition: Int32
    error_code: Int16
    high_watermark: Int64
    last_stable_offset: Int64 = -1
    log_start_offset: Int64 = -1
    diverging_epoch: EpochEndOffset | None = None
    current_leader: LeaderIdAndEpoch | None = None
    records: bytes


@message
class FetchResponse:
    """Per-partition fetch results."""

    error_code: Int16
    topics: list[Topic[FetchPartitionResponse]]
    session_id: Int32 = 0


# ---------------------------------------------------------------------------------------------
# ListOffsets (2)


@message
class ListOffsetsPartition:
    """timestamp is LATEST_TIMESTAMP, EARLIEST_TIMESTAMP, or a time in ms."""

    partition: Int32
    current_leader_epoch: Int32 = -1
    timestamp: Int64


@message
class ListOffsetsRequest:
    """Look up offsets by timestamp."""

    replica_id: Int32
    isolation_level: Int8
    topics: list[Topic[ListOffsetsPartition]]


@message
class ListOffsetsPartitionResponse:
    """The offset found for one partition."""

    partition: Int32
    error_code: Int16
    timestamp: Int64 = -1
    offset: Int64 = -1
    leader_epoch: Int32 = -1


@message
class ListOffsetsResponse:
    """Per-partition offsets."""

    topics: list[Topic[ListOffsetsPartitionResponse]]


# ---------------------------------------------------------------------------------------------
# Metadata (3)


@message
class MetadataRequest:
    """Ask for brokers and topic leadership; topics None means all topics."""

    topics: list[str] | None = None
    allow_auto_topic_creation: bool = False


@message
class MetadataBroker:
    """A live broker and where to reach it."""

    node_id: Int32
    host: str
    port: Int32


@message
class MetadataPartition:
    """A partition's leader, epoch, replicas and ISR as the answering broker knows them."""

    error_code: Int16
    partition: Int32
    leader: Int32
    leader_epoch: Int32
    replicas: list[Int32]
    isr: list[Int32]
    offline_replicas: list[Int32]


@message
class MetadataTopic:
    """A topic's partitions, or an error for the topic."""

    error_code: Int16
    name: str
    partitions: list[MetadataPartition]


@message
class MetadataResponse:
    """Cluster metadata from the answering broker's cache."""

    brokers: list[MetadataBroker]
    controller_id: Int32
    topics: list[MetadataTopic]


# ---------------------------------------------------------------------------------------------
# LeaderAndIsr (4)


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


# ---------------------------------------------------------------------------------------------
# StopReplica (5)


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


# ---------------------------------------------------------------------------------------------
# UpdateMetadata (6)


@message
class UpdateMetadataPartitionState(PartitionLeadership):
    """A partition's state for the receiving broker's metadata cache."""

    offline_replicas: list[Int32]


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


# ---------------------------------------------------------------------------------------------
# ControlledShutdown (7)


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


# ---------------------------------------------------------------------------------------------
# ApiVersions (18)


@message
class ApiVersionsRequest:
    """Ask which apis and versions a broker supports."""


@message
class ApiVersionRange:
    """The versions of one api a broker supports."""

    api_key: Int16
    min_version: Int16
    max_version: Int16


@message
class ApiVersionsResponse:
    """Supported apis (see supported_api_versions)."""

    error_code: Int16
    api_keys: list[ApiVersionRange]


# ---------------------------------------------------------------------------------------------
# CreateTopics (19)


@message
class CreatableReplicaAssignment:
    """An explicit replica list for one partition."""

    partition: Int32
    broker_ids: list[Int32]


@message
class CreatableTopic:
    """A topic to create, with its partition count and replication factor or explicit assignments."""

    name: str
    num_partitions: Int32
    replication_factor: Int16
    assignments: list[CreatableReplicaAssignment] = field(default_factory=list)
    configs: dict[str, str] = field(default_factory=dict)


@message
class CreateTopicsRequest:
    """Create topics (served by the controller)."""

    topics: list[CreatableTopic]
    timeout_ms: Int32
    validate_only: bool = False


@message
class CreatableTopicResult:
    """The outcome for one topic."""

    name: str
    error_code: Int16
    error_message: str | None = None
    num_partitions: Int32 = -1
    replication_factor: Int16 = -1


@message
class CreateTopicsResponse:
    """Per-topic results."""

    topics: list[CreatableTopicResult]


# ---------------------------------------------------------------------------------------------
# DeleteTopics (20)


@message
class DeleteTopicsRequest:
    """Delete topics (served by the controller); answered once they are gone, or after timeout_ms."""

    topic_names: list[str]
    timeout_ms: Int32


@message
class DeletableTopicResult:
    """The outcome for one topic."""

    name: str
    error_code: Int16
    error_message: str | None = None


@message
class DeleteTopicsResponse:
    """Per-topic results."""

    responses: list[DeletableTopicResult]
    throttle_time_ms: Int32 = 0


# ---------------------------------------------------------------------------------------------
# OffsetsForLeaderEpoch (23)


@message
class OffsetForLeaderTopic(Generic[P]):
    """A topic with per-partition entries (OffsetsForLeaderEpoch, both directions)."""

    topic: str
    partitions: list[P]


@message
class OffsetForLeaderPartition:
    """Ask for the end offset of leader_epoch (the largest epoch <= it that the leader knows)."""

    partition: Int32
    current_leader_epoch: Int32 = -1
    leader_epoch: Int32


@message
class OffsetForLeaderPartitionResult:
    """The epoch found and the offset where it ends (the leader's LEO for its current epoch)."""

    error_code: Int16
    partition: Int32
    leader_epoch: Int32 = -1
    end_offset: Int64


@message
class OffsetsForLeaderEpochRequest:
    """Follower to leader, before truncating: where do my epochs end on your log?"""

    replica_id: Int32 = -2
    topics: list[OffsetForLeaderTopic[OffsetForLeaderPartition]]


@message
class OffsetsForLeaderEpochResponse:
    """Per-partition epoch end offsets."""

    topics: list[OffsetForLeaderTopic[OffsetForLeaderPartitionResult]]


# ---------------------------------------------------------------------------------------------
# InitProducerId (22)


@message
class InitProducerIdRequest:
    """Ask for a producer id for an idempotent producer (transactional ids are not supported)."""

    transactional_id: str | None = None
    transaction_timeout_ms: Int32 = -1


@message
class InitProducerIdResponse:
    """A new producer id and its epoch (0)."""

    error_code: Int16
    error_message: str | None = None
    producer_id: Int64 = -1
    producer_epoch: Int16 = -1


# ---------------------------------------------------------------------------------------------
# DescribeConfigs (32)


@unique
class ConfigResourceType(IntEnum):
    """Kafka's config resource types."""

    TOPIC = 2
    BROKER = 4


@unique
class ConfigSource(IntEnum):
    """Where a config value comes from, with Kafka's numbers."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


@unique
class ConfigType(IntEnum):
    """A config's value type, with Kafka's numbers."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    LONG = 5
    LIST = 7


@message
class DescribeConfigsResource:
    """A topic or broker whose configs to describe; configuration_keys None means all of them."""

    resource_type: Int8
    resource_name: str
    configuration_keys: list[str] | None = None


@message
class DescribeConfigsRequest:
    """Describe topic or broker configs."""

    resources: list[DescribeConfigsResource]
    include_synonyms: bool = False


@message
class ConfigSynonym:
    """A config the value could also come from (a broker default behind a topic config)."""

    name: str
    value: str | None
    source: Int8


@message
class ConfigEntry:
    """One config: its value, where it comes from and its type."""

    name: str
    value: str | None
    read_only: bool = False
    config_source: Int8
    is_sensitive: bool = False
    synonyms: list[ConfigSynonym] = field(default_factory=list)
    config_type: Int8 = 0


@message
class DescribeConfigsResult:
    """The configs of one resource, or why not."""

    error_code: Int16
    error_message: str | None = None
    resource_type: Int8
    resource_name: str
    configs: list[ConfigEntry]


@message
class DescribeConfigsResponse:
    """Per-resource results."""

    results: list[DescribeConfigsResult]


# ---------------------------------------------------------------------------------------------
# CreatePartitions (37)


@message
class CreatePartitionsAssignment:
    """The replicas of one new partition."""

    broker_ids: list[Int32]


@message
class CreatePartitionsTopic:
    """Grow a topic to `count` partitions; assignments, if given, place each new partition."""

    name: str
    count: Int32
    assignments: list[CreatePartitionsAssignment] | None = None


@message
class CreatePartitionsRequest:
    """Add partitions to topics (served by the controller)."""

    topics: list[CreatePartitionsTopic]
    timeout_ms: Int32
    validate_only: bool = False


@message
class CreatePartitionsTopicResult:
    """The outcome for one topic."""

    name: str
    error_code: Int16
    error_message: str | None = None


@message
class CreatePartitionsResponse:
    """Per-topic results."""

    results: list[CreatePartitionsTopicResult]
    throttle_time_ms: Int32 = 0


# ---------------------------------------------------------------------------------------------
# ElectLeaders (43)


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


# ---------------------------------------------------------------------------------------------
# DescribeReplicas (1000, minikafka's own)


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
class DescribedReplica:
    """One hosted replica: role ("leader" or "follower"), offsets, and on a leader its followers."""

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


@message
class DescribeReplicasResponse:
    """The replicas hosted by broker_id."""

    broker_id: Int32
    partitions: list[DescribedReplica]


# ---------------------------------------------------------------------------------------------
# The api table


@unique
class ApiKey(IntEnum):
    """Api keys, with Kafka's numbers (DESCRIBE_REPLICAS is minikafka's own)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    DESCRIBE_CONFIGS = 32
    CREATE_PARTITIONS = 37
    ELECT_LEADERS = 43
    DESCRIBE_REPLICAS = 1000


class Api(NamedTuple):
    """One RPC: its key, name, supported versions and request and response declarations."""

    api_key: ApiKey
    name: str
    min_version: int
    max_version: int
    request: type
    response: type


APIS: dict[int, Api] = {
    api.api_key: api
    for api in (
        Api(ApiKey.PRODUCE, "Produce", 0, 0, ProduceRequest, ProduceResponse),
        Api(ApiKey.FETCH, "Fetch", 0, 0, FetchRequest, FetchResponse),
        Api(ApiKey.LIST_OFFSETS, "ListOffsets", 0, 0, ListOffsetsRequest, ListOffsetsResponse),
        Api(ApiKey.METADATA, "Metadata", 0, 0, MetadataRequest, MetadataResponse),
        Api(ApiKey.LEADER_AND_ISR, "LeaderAndIsr", 0, 0, LeaderAndIsrRequest, LeaderAndIsrResponse),
        Api(ApiKey.STOP_REPLICA, "StopReplica", 0, 0, StopReplicaRequest, StopReplicaResponse),
        Api(ApiKey.UPDATE_METADATA, "UpdateMetadata", 0, 0, UpdateMetadataRequest, UpdateMetadataResponse),
        Api(
            ApiKey.CONTROLLED_SHUTDOWN,
            "ControlledShutdown",
            0,
            0,
            ControlledShutdownRequest,
            ControlledShutdownResponse,
        ),
        Api(ApiKey.API_VERSIONS, "ApiVersions", 0, 0, ApiVersionsRequest, ApiVersionsResponse),
        Api(ApiKey.CREATE_TOPICS, "CreateTopics", 0, 0, CreateTopicsRequest, CreateTopicsResponse),
        Api(ApiKey.DELETE_TOPICS, "DeleteTopics", 0, 0, DeleteTopicsRequest, DeleteTopicsResponse),
        Api(ApiKey.INIT_PRODUCER_ID, "InitProducerId", 0, 0, InitProducerIdRequest, InitProducerIdResponse),
        Api(ApiKey.DESCRIBE_CONFIGS, "DescribeConfigs", 0, 0, DescribeConfigsRequest, DescribeConfigsResponse),
        Api(
            ApiKey.OFFSET_FOR_LEADER_EPOCH,
            "OffsetsForLeaderEpoch",
            0,
            0,
            OffsetsForLeaderEpochRequest,
            OffsetsForLeaderEpochResponse,
        ),
        Api(
            ApiKey.CREATE_PARTITIONS,
            "CreatePartitions",
            0,
            0,
            CreatePartitionsRequest,
            CreatePartitionsResponse,
        ),
        Api(ApiKey.ELECT_LEADERS, "ElectLeaders", 0, 0, ElectLeadersRequest, ElectLeadersResponse),
        Api(
            ApiKey.DESCRIBE_REPLICAS,
            "DescribeReplicas",
            0,
            0,
            DescribeReplicasRequest,
            DescribeReplicasResponse,
        ),
    )
}

API_BY_REQUEST_TYPE: dict[type, Api] = {api.request: api for api in APIS.values()}

_LABELS: dict[Any, str] = {
    RequestHeader: "request header",
    _ResponseHeader: "response header",
    **{api.request: f"{api.name} request" for api in APIS.values()},
    **{api.response: f"{api.name} response" for api in APIS.values()},
}
_RESPONSE_TYPES = frozenset(api.response for api in APIS.values())


def supported_api_versions() -> list[ApiVersionRange]:
    """The ApiVersions answer: every api in APIS with its version range."""
    return [
        ApiVersionRange(api_key=api.api_key, min_version=api.min_version, max_version=api.max_version)
        for api in APIS.values()
    ]


# ---------------------------------------------------------------------------------------------
# The generic codec


Convert = Callable[[Any], Any]
_WIRE_TYPE_NAMES = {dict: "map", type(None): "null"}


class _FieldError(Exception):
    """A value that does not fit its declaration; the path is collected innermost first on the way out."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.segments: list[str] = []


def _type_name(value: object) -> str:
    return _WIRE_TYPE_NAMES.get(type(value), type(value).__name__)


def _format_path(segments: list[str]) -> str:
    path = ""
    for segment in reversed(segments):
        path += segment if not path or segment.startswith("[") else "." + segment
    return path


def _int_checker(width: IntWidth) -> Convert:
    lo, hi, name = width.min, width.max, width.name

    def check(value: Any) -> Any:
        if type(value) is not int and (not isinstance(value, int) or isinstance(value, bool)):
            raise _FieldError(f"expected {name}, got {_type_name(value)}")
        if not lo <= value <= hi:
            raise _FieldError(f"expected {name} in [{lo}, {hi}], got {value}")
        return value

    return check


def _type_checker(accepted: type | tuple[type, ...], name: str) -> Convert:
    def check(value: Any) -> Any:
        if not isinstance(value, accepted):
            raise _FieldError(f"expected {name}, got {_type_name(value)}")
        return value

    return check


def _check_bool(value: Any) -> Any:
    if type(value) is not bool:
        raise _FieldError(f"expected bool, got {_type_name(value)}")
    return value


_check_str = _type_checker(str, "str")
# bytes fields decode only from msgpack bin; encoding also takes other buffers (e.g. a memoryview of
# a segment file) so that msgpack's own copy is the only one.
_check_bytes = _type_checker(bytes, "bytes")
_check_buffer = _type_checker((bytes, bytearray, memoryview), "bytes")

#: Byte fields at least this long are not copied into a response's msgpack buffer (encode_response_parts).
PASS_THROUGH_BYTES = 64 * 1024
#: While encode_response_parts encodes: the list its long byte fields go to, and their placeholders' token.
_PASS_THROUGH: ContextVar[tuple[list[bytes | bytearray | memoryview], bytes] | None] = ContextVar(
    "pass_through", default=None)


def _encode_buffer(value: Any) -> Any:
    """A bytes field, checked; a long one is set aside for encode_response_parts when it is encoding."""
    _check_buffer(value)
    if len(value) >= PASS_THROUGH_BYTES:
        collecting = _PASS_THROUGH.get()
        if collecting is not None:
            large, token = collecting
            large.append(value)
            return token + (len(large) - 1).to_bytes(8, "big")
    return value


def _nullable(inner: Convert) -> Convert:
    def convert(value: Any) -> Any:
        return None if value is None else inner(value)

    return convert


def _list_converter(element: Convert, accepted: type | tuple[type, ...], checks_only: bool) -> Convert:
    """A list converter; if the element converter only checks (returns its input), the list itself
    is returned after checking, not copied."""

    def convert(value: Any) -> Any:
        if not isinstance(value, accepted):
            raise _FieldError(f"expected list, got {_type_name(value)}")
        out = value if checks_only else []
        for index, item in enumerate(value):
            try:
                converted = element(item)
            except _FieldError as e:
                e.segments.append(f"[{index}]")
                raise
            if not checks_only:
                out.append(converted)
        return out

    return convert


def _dict_converter(value_converter: Convert) -> Convert:
    def convert(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _FieldError(f"expected map, got {_type_name(value)}")
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _FieldError(f"expected str keys, got {_type_name(key)}")
            try:
                out[key] = value_converter(item)
            except _FieldError as e:
                e.segments.append(f"[{key!r}]")
                raise
        return out

    return convert


class _Codec(NamedTuple):
    encode: Convert
    decode: Convert
    checks_only: bool  # both directions return their input unchanged


_STRUCT_CODECS: dict[Any, _Codec] = {}


def _bind(hint: Any, params: dict[Any, Any]) -> Any:
    """`hint` with the type parameters of a generic message replaced by their arguments."""
    if isinstance(hint, TypeVar):
        if hint not in params:
            raise TypeError(f"unbound type parameter {hint}")
        return params[hint]
    hint_params = getattr(hint, "__parameters__", ())
    return hint[tuple(_bind(p, params) for p in hint_params)] if hint_params else hint


def _codec(hint: Any) -> _Codec:
    """The encoder and decoder for a declared field type."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Annotated and isinstance(args[1], IntWidth):
        check = _int_checker(args[1])
        return _Codec(check, check, True)
    if hint is bool:
        return _Codec(_check_bool, _check_bool, True)
    if hint is str:
        return _Codec(_check_str, _check_str, True)
    if hint is bytes:
        return _Codec(_encode_buffer, _check_bytes, False)
    if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
        inner = _codec(next(a for a in args if a is not type(None)))
        return _Codec(_nullable(inner.encode), _nullable(inner.decode), inner.checks_only)
    if origin is list:
        element = _codec(args[0])
        return _Codec(
            _list_converter(element.encode, (list, tuple), element.checks_only),
            _list_converter(element.decode, list, element.checks_only),
            element.checks_only,
        )
    if origin is dict and args[0] is str:
        value = _codec(args[1])
        return _Codec(_dict_converter(value.encode), _dict_converter(value.decode), False)
    if dataclasses.is_dataclass(origin or hint):
        return _struct_codec(hint)
    if hint is int:
        raise TypeError("declare int fields with a width: Int8, Int16, Int32 or Int64")
    raise TypeError(f"unsupported field type {hint!r}")


def _struct_codec(hint: Any) -> _Codec:
    """The (cached) codec of a message type, or of a generic message with its arguments."""
    cached = _STRUCT_CODECS.get(hint)
    if cached is not None:
        return cached
    cls = typing.get_origin(hint) or hint
    params = dict(zip(getattr(cls, "__parameters__", ()), typing.get_args(hint), strict=False))
    hints = typing.get_type_hints(cls, include_extras=True)
    encoders: list[tuple[str, Convert]] = []
    decoders: list[tuple[str, Convert, bool]] = []
    for f in dataclasses.fields(cls):
        codec = _codec(_bind(hints[f.name], params))
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        encoders.append((f.name, codec.encode))
        decoders.append((f.name, codec.decode, has_default))

    def encode(obj: Any) -> dict[str, Any]:
        if type(obj) is not cls:
            raise _FieldError(f"expected {cls.__name__}, got {_type_name(obj)}")
        out = {}
        for name, convert in encoders:
            try:
                out[name] = convert(getattr(obj, name))
            except _FieldError as e:
                e.segments.append(name)
                raise
        return out

    def decode(data: Any) -> Any:
        if type(data) is not dict:
            raise _FieldError(f"expected map, got {_type_name(data)}")
        kwargs = {}
        for name, convert, has_default in decoders:
            try:
                if name in data:
                    kwargs[name] = convert(data[name])
                elif not has_default:
                    raise _FieldError("missing required field")
            except _FieldError as e:
                e.segments.append(name)
                raise
        return cls(**kwargs)

    codec = _STRUCT_CODECS[hint] = _Codec(encode, decode, False)
    return codec


# Build every codec now: a declaration error fails at import, and no request pays for the build.
for _api in APIS.values():
    _struct_codec(_api.request)
    _struct_codec(_api.response)


def _label(cls: Any) -> str:
    return _LABELS.get(cls) or getattr(cls, "__name__", repr(cls))


def _convert(convert: Convert, value: Any, label: str) -> Any:
    try:
        return convert(value)
    except _FieldError as e:
        raise ValidationError(label, _format_path(e.segments), e.problem) from None


def encode_body(obj: Any) -> dict[str, Any]:
    """A message as a msgpack-ready map; raises ValidationError if a field does not fit its declaration."""
    return _convert(_struct_codec(type(obj)).encode, obj, _label(type(obj)))


def decode_body(cls: Any, data: Any) -> Any:
    """The message of type `cls` held in a decoded msgpack map; raises ValidationError with the path."""
    return _convert(_struct_codec(cls).decode, data, _label(cls))


# ---------------------------------------------------------------------------------------------
# Requests and responses


def _unpack(payload: bytes, error: type[ProtocolError], what: str) -> dict[str, Any]:
    try:
        data = msgpack.unpackb(payload, raw=False)
    except (ValueError, TypeError, msgpack.UnpackException) as e:
        raise error(f"{what} is not msgpack: {e}") from None
    if type(data) is not dict:
        raise error(f"{what} is not a map: got {_type_name(data)}")
    return data


def encode_request(header: RequestHeader, body: Any) -> bytes:
    """The payload of a request frame (without the length prefix)."""
    api = APIS.get(header.api_key)
    if api is None:
        raise ValueError(f"unknown api key {header.api_key}")
    envelope = _convert(_struct_codec(RequestHeader).encode, header, _label(RequestHeader))
    envelope["body"] = _convert(_struct_codec(api.request).encode, body, _label(api.request))
    return msgpack.packb(envelope)


def decode_request(payload: bytes) -> tuple[RequestHeader, Any]:
    """The header and body of a request payload; raises a ProtocolError subclass saying what is wrong."""
    data = _unpack(payload, MalformedRequestError, "request")
    try:
        header = decode_body(RequestHeader, data)
    except ValidationError as e:
        raise MalformedRequestError(str(e)) from None
    api = APIS.get(header.api_key)
    if api is None:
        raise UnknownApiError(header, f"unknown api key {header.api_key}")
    if not api.min_version <= header.api_version <= api.max_version:
        raise UnsupportedVersionError(
            header,
            f"{api.name} version {header.api_version} is not supported "
            f"(supported: {api.min_version}..{api.max_version})",
        )
    label = _label(api.request)
    if "body" not in data:
        raise InvalidRequestError(header, f"{label}: missing body")
    try:
        body = _convert(_struct_codec(api.request).decode, data["body"], label)
    except ValidationError as e:
        raise InvalidRequestError(header, str(e)) from None
    return header, body


def _response_envelope(correlation_id: int, body: Any, error_code: ErrorCode, error_message: str | None
                       ) -> dict[str, Any]:
    if body is None and error_code == ErrorCode.NONE:
        raise ValueError("a response without a body must carry an error code")
    if body is not None and type(body) not in _RESPONSE_TYPES:
        raise TypeError(f"{type(body).__name__} is not a response message")
    header = _ResponseHeader(
        correlation_id=correlation_id, error_code=error_code, error_message=error_message
    )
    envelope = _convert(_struct_codec(_ResponseHeader).encode, header, _label(_ResponseHeader))
    envelope["body"] = None if body is None else encode_body(body)
    return envelope


def encode_response(
    correlation_id: int,
    body: Any,
    error_code: ErrorCode = ErrorCode.NONE,
    error_message: str | None = None,
) -> bytes:
    """The payload of a response frame. body is None only for a request-level error."""
    return msgpack.packb(_response_envelope(correlation_id, body, error_code, error_message))


_BIN32 = struct.Struct(">BI")


def encode_response_parts(
    correlation_id: int,
    body: Any,
    error_code: ErrorCode = ErrorCode.NONE,
    error_message: str | None = None,
) -> list[bytes | bytearray | memoryview]:
    """encode_response's payload as buffers to write one after the other, the same bytes: byte fields of at least
    PASS_THROUGH_BYTES (the record batches of a fetch response) are buffers of their own, not copied into msgpack's.
    Each is packed as a unique placeholder first, then cut out of the packed bytes and replaced by its bin 32
    header and the bytes themselves. The placeholders are put in while the body is converted, not by another walk
    over it (which cost more than the conversion for a fetch response of thousands of partitions)."""
    large: list[bytes | bytearray | memoryview] = []
    token = os.urandom(8)
    collecting = _PASS_THROUGH.set((large, token))
    try:
        envelope = _response_envelope(correlation_id, body, error_code, error_message)
    finally:
        _PASS_THROUGH.reset(collecting)
    packed = msgpack.packb(envelope)
    if not large:
        return [packed]
    parts: list[bytes | bytearray | memoryview] = []
    view = memoryview(packed)
    position = 0
    for index, value in enumerate(large):
        placeholder = b"\xc4\x10" + token + index.to_bytes(8, "big")  # bin 8 of the 16-byte placeholder
        found = packed.index(placeholder, position)
        parts += (view[position:found], _BIN32.pack(0xC6, len(value)), value)
        position = found + len(placeholder)
    parts.append(view[position:])
    return parts


def decode_response(payload: bytes, api_key: int) -> tuple[int, ErrorCode, str | None, Any]:
    """(correlation_id, error code, error message, body or None) of a response to an `api_key` request.

    Raises MalformedResponseError if the payload, its header or its body does not validate."""
    api = APIS.get(api_key)
    if api is None:
        raise ValueError(f"unknown api key {api_key}")
    data = _unpack(payload, MalformedResponseError, "response")
    raw_body = data.get("body")
    try:
        header = decode_body(_ResponseHeader, data)
        body = None if raw_body is None else decode_body(api.response, raw_body)
    except ValidationError as e:
        raise MalformedResponseError(str(e)) from None
    if body is None and header.error_code == ErrorCode.NONE:
        raise MalformedResponseError(f"{_label(api.response)}: no body and no error code")
    return header.correlation_id, ErrorCode.from_code(header.error_code), header.error_message, body
