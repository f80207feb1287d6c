"""Metadata (3): the brokers, and each topic's partitions with their leader, replicas and ISR, as the answering
broker's cache knows them."""

from __future__ import annotations

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int16, Int32, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec

#: Kafka's "no authorized operations were asked for" (Integer.MIN_VALUE).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


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
    """A topic's partitions, or an error for the topic; an internal topic (__consumer_offsets) says so."""

    error_code: Int16
    name: str
    partitions: list[MetadataPartition]
    is_internal: bool = False


@message
class MetadataResponse:
    """Cluster metadata from the answering broker's cache."""

    brokers: list[MetadataBroker]
    controller_id: Int32
    topics: list[MetadataTopic]


def metadata_error(request: MetadataRequest, code: ErrorCode, _message: str | None) -> MetadataResponse:
    """The answer to a Metadata request that failed as a whole: no brokers, the error for every topic asked for."""
    return MetadataResponse(brokers=[], controller_id=-1, topics=[
        MetadataTopic(error_code=code, name=name, partitions=[]) for name in request.topics or ()])


def _kafka_request(message: Message, version: int) -> MetadataRequest:
    topics = message["topics"]
    names = None if topics is None or (version == 0 and not topics) else [t["name"] for t in topics]
    return MetadataRequest(topics=names, allow_auto_topic_creation=message["allow_auto_topic_creation"])


def _kafka_response(body: MetadataResponse, _version: int) -> Message:
    return {
        "brokers": [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": None} for b in body.brokers],
        "cluster_id": None,
        "controller_id": body.controller_id,
        "topics": [{
            "error_code": t.error_code, "name": t.name, "is_internal": t.is_internal,
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
