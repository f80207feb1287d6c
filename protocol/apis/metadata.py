"""Metadata (3): the cluster id, the brokers, and each topic's id and partitions with their leader, replicas and ISR,
as the answering broker's cache knows them; unknown topics are created when the client allows it and the brokers'
auto.create.topics.enable does.

On Kafka's wire: v0-12 (v9+ flexible; topic ids in answers from v10, asked for by id from v12)."""

from __future__ import annotations

from dataclasses import field

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int16, Int32, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec
from protocol.kafka.primitives import ZERO_UUID, KafkaDecodeError, uuid_bytes, uuid_text

#: Kafka's "no authorized operations were asked for" (Integer.MIN_VALUE).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


@message
class MetadataRequest:
    """Ask for brokers and topic leadership; topics None means all topics (and topic_ids none); topic_ids are topics
    asked for by id. Topics that do not exist are created if allow_auto_topic_creation (and the brokers allow it)."""

    topics: list[str] | None = None
    allow_auto_topic_creation: bool = False
    topic_ids: list[str] = field(default_factory=list)


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
    """A topic's id and partitions, or an error for the topic; an internal topic (__consumer_offsets) says so. A
    topic asked for by an id no topic has is named "" (null on Kafka's wire)."""

    error_code: Int16
    name: str
    partitions: list[MetadataPartition]
    is_internal: bool = False
    topic_id: str = ""


@message
class MetadataResponse:
    """Cluster metadata from the answering broker's cache."""

    brokers: list[MetadataBroker]
    controller_id: Int32
    topics: list[MetadataTopic]
    cluster_id: str | None = None


def metadata_error(request: MetadataRequest, code: ErrorCode, _message: str | None) -> MetadataResponse:
    """The answer to a Metadata request that failed as a whole: no brokers, the error for every topic asked for."""
    return MetadataResponse(brokers=[], controller_id=-1, topics=[
        MetadataTopic(error_code=code, name=name, partitions=[]) for name in request.topics or ()])


def _kafka_request(message: Message, version: int) -> MetadataRequest:
    """Topics by name, or from v12 by id (a topic with a null name); v0's empty list means every topic, as null does
    from v1. Before v12 a topic needs its name, and ids are not taken (Kafka refuses such a request)."""
    topics = message["topics"]
    if topics is None or (version == 0 and not topics):
        return MetadataRequest(topics=None, allow_auto_topic_creation=message["allow_auto_topic_creation"])
    if version < 12 and any(t["name"] is None or t["topic_id"] != ZERO_UUID for t in topics):
        raise KafkaDecodeError(f"Metadata v{version} names every topic, by name only")
    return MetadataRequest(topics=[t["name"] for t in topics if t["name"] is not None],
                           allow_auto_topic_creation=message["allow_auto_topic_creation"],
                           topic_ids=[uuid_text(t["topic_id"]) for t in topics if t["name"] is None])


def _kafka_response(body: MetadataResponse, _version: int) -> Message:
    return {
        "brokers": [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": None} for b in body.brokers],
        "cluster_id": body.cluster_id,
        "controller_id": body.controller_id,
        "topics": [{
            "error_code": t.error_code, "name": t.name or None, "topic_id": uuid_bytes(t.topic_id),
            "is_internal": t.is_internal,
            "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
            "partitions": [{
                "error_code": p.error_code, "partition_index": p.partition, "leader_id": p.leader,
                "leader_epoch": p.leader_epoch, "replica_nodes": p.replicas, "isr_nodes": p.isr,
                "offline_replicas": p.offline_replicas,
            } for p in t.partitions],
        } for t in body.topics],
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


METADATA = Api(ApiKey.METADATA, "Metadata", MetadataRequest, MetadataResponse, metadata_error,
               kafka=spec_codec("Metadata", _kafka_request, _kafka_response))
