"""Kafka's messages (dicts keyed by the spec's field names) to and from the request and response objects of
protocol.messages that the broker's handlers take and give, one adapter per api; and, per api, the response a
request gets when its handler fails as a whole (Kafka's getErrorResponse: the error in every entry)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from protocol.errors import ErrorCode
from protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListOffsetsPartition,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    MetadataTopic,
    OffsetForLeaderPartition,
    OffsetForLeaderPartitionResult,
    OffsetForLeaderTopic,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
    Topic,
)

Message = dict[str, Any]
#: Kafka's "no authorized operations were asked for" (Integer.MIN_VALUE).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


@dataclass(frozen=True, slots=True)
class Adapter:
    """How one api's messages map to the handlers' objects."""

    request: Callable[[Message, int], object]  # (Kafka request, version) -> request object
    response: Callable[[Any, int], Message]  # (response object, version) -> Kafka response
    error: Callable[[Any, ErrorCode, str | None], object]  # (request object, code, message) -> response object


# ------------------------------------------------------------------------------------------------ ApiVersions


def api_versions_adapter(advertised: Callable[[], list[Message]]) -> Adapter:
    """ApiVersions: the handler says whether it answers; the api list is the Kafka listener's own."""
    return Adapter(
        request=lambda _message, _version: ApiVersionsRequest(),
        response=lambda body, _version: {"error_code": body.error_code, "api_keys": advertised(),
                                         "throttle_time_ms": 0},
        error=lambda _request, code, _message: ApiVersionsResponse(error_code=code, api_keys=[]),
    )


# ------------------------------------------------------------------------------------------------ Metadata


def _metadata_request(message: Message, version: int) -> MetadataRequest:
    topics = message["topics"]
    names = None if topics is None or (version == 0 and not topics) else [t["name"] for t in topics]
    return MetadataRequest(topics=names, allow_auto_topic_creation=message["allow_auto_topic_creation"])


def _metadata_response(body: MetadataResponse, _version: int) -> Message:
    return {
        "brokers": [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": None} for b in body.brokers],
        "cluster_id": None,
        "controller_id": body.controller_id,
        "topics": [{
            "error_code": t.error_code, "name": t.name, "is_internal": False,
            "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
            "partitions": [{
                "error_code": p.error_code, "partition_index": p.partition, "leader_id": p.leader,
                "leader_epoch": p.leader_epoch, "replica_nodes": p.replicas, "isr_nodes": p.isr,
                "offline_replicas": p.offline_replicas,
            } for p in t.partitions],
        } for t in body.topics],
        "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


METADATA = Adapter(
    request=_metadata_request,
    response=_metadata_response,
    error=lambda request, code, _message: MetadataResponse(
        brokers=[], controller_id=-1,
        topics=[MetadataTopic(error_code=code, name=name, partitions=[]) for name in request.topics or ()]),
)


# ------------------------------------------------------------------------------------------------ ListOffsets


def _list_offsets_request(message: Message, _version: int) -> ListOffsetsRequest:
    return ListOffsetsRequest(
        replica_id=message["replica_id"], isolation_level=message["isolation_level"],
        topics=[Topic(name=t["name"], partitions=[
            ListOffsetsPartition(partition=p["partition_index"], current_leader_epoch=p["current_leader_epoch"],
                                 timestamp=p["timestamp"]) for p in t["partitions"]]) for t in message["topics"]])


def _list_offsets_response(body: ListOffsetsResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "topics": [{"name": t.name, "partitions": [{
        "partition_index": p.partition, "error_code": p.error_code, "timestamp": p.timestamp, "offset": p.offset,
        "leader_epoch": p.leader_epoch} for p in t.partitions]} for t in body.topics]}


LIST_OFFSETS = Adapter(
    request=_list_offsets_request,
    response=_list_offsets_response,
    error=lambda request, code, _message: ListOffsetsResponse(topics=[Topic(name=t.name, partitions=[
        ListOffsetsPartitionResponse(partition=p.partition, error_code=code) for p in t.partitions])
        for t in request.topics]),
)


# ------------------------------------------------------------------------------------------------ CreateTopics


def _create_topics_request(message: Message, _version: int) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=[CreatableTopic(
            name=t["name"], num_partitions=t["num_partitions"], replication_factor=t["replication_factor"],
            assignments=[CreatableReplicaAssignment(partition=a["partition_index"], broker_ids=a["broker_ids"])
                         for a in t["assignments"]],
            configs={c["name"]: c["value"] for c in t["configs"] if c["value"] is not None},
        ) for t in message["topics"]],
        timeout_ms=message["timeout_ms"], validate_only=message["validate_only"])


CREATE_TOPICS = Adapter(
    request=_create_topics_request,
    response=lambda body, _version: {"throttle_time_ms": 0, "topics": [
        {"name": t.name, "error_code": t.error_code, "error_message": t.error_message} for t in body.topics]},
    error=lambda request, code, message: CreateTopicsResponse(topics=[
        CreatableTopicResult(name=t.name, error_code=code, error_message=message) for t in request.topics]),
)


# ------------------------------------------------------------------------------------------------ DeleteTopics


DELETE_TOPICS = Adapter(
    request=lambda message, _version: DeleteTopicsRequest(topic_names=message["topic_names"],
                                                          timeout_ms=message["timeout_ms"]),
    response=lambda body, _version: {"throttle_time_ms": 0, "responses": [
        {"name": r.name, "error_code": r.error_code} for r in body.responses]},
    error=lambda request, code, message: DeleteTopicsResponse(responses=[
        DeletableTopicResult(name=name, error_code=code, error_message=message) for name in request.topic_names]),
)


# ------------------------------------------------------------------------------------------------ InitProducerId


INIT_PRODUCER_ID = Adapter(
    request=lambda message, _version: InitProducerIdRequest(
        transactional_id=message["transactional_id"], transaction_timeout_ms=message["transaction_timeout_ms"]),
    response=lambda body, _version: {"throttle_time_ms": 0, "error_code": body.error_code,
                                     "producer_id": body.producer_id, "producer_epoch": body.producer_epoch},
    error=lambda _request, code, message: InitProducerIdResponse(error_code=code, error_message=message),
)


# ------------------------------------------------------------------------------------------------ OffsetForLeaderEpoch


def _offset_for_leader_epoch_request(message: Message, _version: int) -> OffsetsForLeaderEpochRequest:
    return OffsetsForLeaderEpochRequest(replica_id=message["replica_id"], topics=[OffsetForLeaderTopic(
        topic=t["topic"], partitions=[OffsetForLeaderPartition(
            partition=p["partition"], current_leader_epoch=p["current_leader_epoch"], leader_epoch=p["leader_epoch"])
            for p in t["partitions"]]) for t in message["topics"]])


OFFSET_FOR_LEADER_EPOCH = Adapter(
    request=_offset_for_leader_epoch_request,
    response=lambda body, _version: {"throttle_time_ms": 0, "topics": [{"topic": t.topic, "partitions": [{
        "error_code": p.error_code, "partition": p.partition, "leader_epoch": p.leader_epoch,
        "end_offset": p.end_offset} for p in t.partitions]} for t in body.topics]},
    error=lambda request, code, _message: OffsetsForLeaderEpochResponse(topics=[OffsetForLeaderTopic(
        topic=t.topic, partitions=[OffsetForLeaderPartitionResult(error_code=code, partition=p.partition,
                                                                  end_offset=-1) for p in t.partitions])
        for t in request.topics]),
)


# ------------------------------------------------------------------------------------------------ DescribeConfigs


def _describe_configs_request(message: Message, _version: int) -> DescribeConfigsRequest:
    return DescribeConfigsRequest(
        resources=[DescribeConfigsResource(resource_type=r["resource_type"], resource_name=r["resource_name"],
                                           configuration_keys=r["configuration_keys"]) for r in message["resources"]],
        include_synonyms=message["include_synonyms"])


def _describe_configs_response(body: DescribeConfigsResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "results": [{
        "error_code": r.error_code, "error_message": r.error_message, "resource_type": r.resource_type,
        "resource_name": r.resource_name, "configs": [{
            "name": c.name, "value": c.value, "read_only": c.read_only, "config_source": c.config_source,
            "is_sensitive": c.is_sensitive, "config_type": c.config_type, "documentation": None,
            "synonyms": [{"name": s.name, "value": s.value, "source": s.source} for s in c.synonyms],
        } for c in r.configs]} for r in body.results]}


DESCRIBE_CONFIGS = Adapter(
    request=_describe_configs_request,
    response=_describe_configs_response,
    error=lambda request, code, message: DescribeConfigsResponse(results=[DescribeConfigsResult(
        error_code=code, error_message=message, resource_type=r.resource_type, resource_name=r.resource_name,
        configs=[]) for r in request.resources]),
)
