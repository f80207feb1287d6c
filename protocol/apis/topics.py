"""Topics created, deleted and grown, all served by the active controller: CreateTopics (19), DeleteTopics (20)
and CreatePartitions (37)."""

from __future__ import annotations

from dataclasses import field

from protocol.apis.api import Api, ApiKey
from protocol.apis.configs import ConfigEntry
from protocol.codec import Int16, Int32, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec
from protocol.kafka.primitives import uuid_bytes, uuid_text

# ------------------------------------------------------------------------------------------------ CreateTopics


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
    """The outcome for one topic: once created, its id, partition count, replication factor and configs (or, for a
    principal that may not DESCRIBE_CONFIGS it, topic_config_error_code instead of them)."""

    name: str
    error_code: Int16
    error_message: str | None = None
    num_partitions: Int32 = -1
    replication_factor: Int16 = -1
    topic_id: str = ""
    configs: list[ConfigEntry] | None = None
    topic_config_error_code: Int16 = ErrorCode.NONE


@message
class CreateTopicsResponse:
    """Per-topic results."""

    topics: list[CreatableTopicResult]


def create_topics_error(request: CreateTopicsRequest, code: ErrorCode, message: str | None) -> CreateTopicsResponse:
    """The answer to a CreateTopics that failed as a whole: the error for every topic."""
    return CreateTopicsResponse(topics=[
        CreatableTopicResult(name=t.name, error_code=code, error_message=message) for t in request.topics])


def _create_topics_request(message: Message, _version: int) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=[CreatableTopic(
            name=t["name"], num_partitions=t["num_partitions"], replication_factor=t["replication_factor"],
            assignments=[CreatableReplicaAssignment(partition=a["partition_index"], broker_ids=a["broker_ids"])
                         for a in t["assignments"]],
            configs={c["name"]: c["value"] for c in t["configs"] if c["value"] is not None},
        ) for t in message["topics"]],
        timeout_ms=message["timeout_ms"], validate_only=message["validate_only"])


def _create_topics_response(body: CreateTopicsResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "topics": [{
        "name": t.name, "topic_id": uuid_bytes(t.topic_id), "error_code": t.error_code,
        "error_message": t.error_message, "topic_config_error_code": t.topic_config_error_code,
        "num_partitions": t.num_partitions,
        "replication_factor": t.replication_factor,
        "configs": None if t.configs is None else [{
            "name": c.name, "value": c.value, "read_only": c.read_only, "config_source": c.config_source,
            "is_sensitive": c.is_sensitive} for c in t.configs]} for t in body.topics]}


CREATE_TOPICS = Api(ApiKey.CREATE_TOPICS, "CreateTopics", CreateTopicsRequest, CreateTopicsResponse,
                    create_topics_error, kafka=spec_codec("CreateTopics", _create_topics_request,
                                                          _create_topics_response))


# ------------------------------------------------------------------------------------------------ DeleteTopics


@message
class DeleteTopicsRequest:
    """Delete topics (served by the controller), by name or (from Kafka's v6) by id; answered once they are gone,
    or after timeout_ms."""

    topic_names: list[str]
    timeout_ms: Int32
    topic_ids: list[str] = field(default_factory=list)


@message
class DeletableTopicResult:
    """The outcome for one topic (named by its id alone when its id is unknown)."""

    name: str | None
    error_code: Int16
    error_message: str | None = None
    topic_id: str = ""


@message
class DeleteTopicsResponse:
    """Per-topic results."""

    responses: list[DeletableTopicResult]
    throttle_time_ms: Int32 = 0


def delete_topics_error(request: DeleteTopicsRequest, code: ErrorCode, message: str | None) -> DeleteTopicsResponse:
    """The answer to a DeleteTopics that failed as a whole: the error for every topic."""
    return DeleteTopicsResponse(responses=[
        DeletableTopicResult(name=name, error_code=code, error_message=message) for name in request.topic_names] + [
        DeletableTopicResult(name=None, topic_id=topic_id, error_code=code, error_message=message)
        for topic_id in request.topic_ids])


def _delete_topics_request(message: Message, version: int) -> DeleteTopicsRequest:
    """Topics by name, or from v6 each by name or by id (a null name)."""
    if version < 6:
        return DeleteTopicsRequest(topic_names=message["topic_names"], timeout_ms=message["timeout_ms"])
    topics = message["topics"]
    return DeleteTopicsRequest(topic_names=[t["name"] for t in topics if t["name"] is not None],
                               topic_ids=[uuid_text(t["topic_id"]) for t in topics if t["name"] is None],
                               timeout_ms=message["timeout_ms"])


DELETE_TOPICS = Api(
    ApiKey.DELETE_TOPICS, "DeleteTopics", DeleteTopicsRequest, DeleteTopicsResponse, delete_topics_error,
    kafka=spec_codec("DeleteTopics", lambda message, version: _delete_topics_request(message, version),
                     lambda body, _version: {"throttle_time_ms": 0, "responses": [
                         {"name": r.name, "topic_id": uuid_bytes(r.topic_id), "error_code": r.error_code,
                          "error_message": r.error_message} for r in body.responses]}))


# ------------------------------------------------------------------------------------------------ CreatePartitions


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


def create_partitions_error(request: CreatePartitionsRequest, code: ErrorCode, message: str | None
                            ) -> CreatePartitionsResponse:
    """The answer to a CreatePartitions that failed as a whole: the error for every topic."""
    return CreatePartitionsResponse(results=[
        CreatePartitionsTopicResult(name=t.name, error_code=code, error_message=message) for t in request.topics])


def _create_partitions_request(message: Message, _version: int) -> CreatePartitionsRequest:
    return CreatePartitionsRequest(
        topics=[CreatePartitionsTopic(
            name=t["name"], count=t["count"],
            assignments=None if t["assignments"] is None else [
                CreatePartitionsAssignment(broker_ids=a["broker_ids"]) for a in t["assignments"]])
            for t in message["topics"]],
        timeout_ms=message["timeout_ms"], validate_only=message["validate_only"])


#: On Kafka's wire: v0-3 (v2+ flexible), the versions Kafka 3.9 serves; they differ in their headers alone.
CREATE_PARTITIONS = Api(
    ApiKey.CREATE_PARTITIONS, "CreatePartitions", CreatePartitionsRequest, CreatePartitionsResponse,
    create_partitions_error,
    kafka=spec_codec("CreatePartitions", _create_partitions_request,
                     lambda body, _version: {"throttle_time_ms": 0, "results": [
                         {"name": r.name, "error_code": r.error_code, "error_message": r.error_message}
                         for r in body.results]}))
