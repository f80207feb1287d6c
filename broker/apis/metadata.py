"""Metadata and DescribeCluster: the metadata cache's answer, with each broker's endpoint on the listener the request
came in on. Metadata's topics asked for by id are looked up by their ids, and topics that do not exist are created
when the client allows it and auto.create.topics.enable does (Kafka's KafkaApis.getTopicMetadata)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Protocol

from broker.apis.handler import Handled
from broker.network import Request, Response
from protocol.apis.cluster import (
    BROKER_ENDPOINTS,
    ClusterBroker,
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from protocol.apis.metadata import MetadataRequest, MetadataResponse, MetadataTopic
from protocol.consumer_offsets import OFFSETS_TOPIC
from protocol.errors import ErrorCode


class MetadataSource(Protocol):
    """Where Metadata is answered from."""

    topic_names: dict[str, str]  # topic id -> topic

    def metadata(self, topics: list[str] | None, listener_name: str) -> MetadataResponse: ...


class TopicCreation(Protocol):
    """Topics created on first use."""

    #: whether topics named in Metadata are created on first use (auto.create.topics.enable)
    auto_create_topics_enable: bool

    async def create_topics(self, names: Iterable[str]) -> dict[str, ErrorCode]: ...


class MetadataHandler:
    """Answers Metadata, creating the unknown topics asked for when that is allowed, and DescribeCluster."""

    def __init__(self, source: MetadataSource, creation: TopicCreation) -> None:
        self._source = source
        self._creation = creation

    async def handle_metadata(self, body: MetadataRequest, request: Request) -> Handled:
        source = self._source
        unknown_ids = [topic_id for topic_id in body.topic_ids if topic_id not in source.topic_names]
        names = body.topics
        if body.topic_ids:
            names = [*(names or ()), *(source.topic_names[i] for i in body.topic_ids if i in source.topic_names)]
        response = source.metadata(names, request.listener_name)
        missing = [t.name for t in response.topics if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        if missing and body.allow_auto_topic_creation and self._creation.auto_create_topics_enable:
            created = await self._creation.create_topics(missing)
            response = replace(response, topics=[
                t if t.name not in created else MetadataTopic(error_code=created[t.name], name=t.name, partitions=[],
                                                              is_internal=t.name == OFFSETS_TOPIC)
                for t in response.topics])
        if unknown_ids:
            response = replace(response, topics=[*response.topics, *(
                MetadataTopic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name="", partitions=[], topic_id=topic_id)
                for topic_id in unknown_ids)])
        return Response(response)

    async def handle_describe_cluster(self, body: DescribeClusterRequest, request: Request) -> Handled:
        if body.endpoint_type != BROKER_ENDPOINTS:
            return Response(DescribeClusterResponse(
                error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, endpoint_type=body.endpoint_type,
                error_message="The ZooKeeper-based cluster only has broker endpoints"))
        cluster = self._source.metadata([], request.listener_name)
        return Response(DescribeClusterResponse(
            error_code=ErrorCode.NONE, cluster_id=cluster.cluster_id or "", controller_id=cluster.controller_id,
            brokers=[ClusterBroker(broker_id=b.node_id, host=b.host, port=b.port) for b in cluster.brokers]))
