"""Metadata and DescribeCluster as the broker answers them: the cluster id, topics by id, and topics created on first
use only when both the client and auto.create.topics.enable allow it; and ApiVersions' client software names."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import replace

from broker.apis.api_versions import handle_api_versions
from broker.apis.metadata import MetadataHandler
from broker.network import Request, Response
from protocol.apis.api_versions import ApiVersionsRequest
from protocol.apis.cluster import CONTROLLER_ENDPOINTS, DescribeClusterRequest
from protocol.apis.metadata import MetadataRequest
from protocol.apis.replica_control import UpdateMetadataRequest
from protocol.envelope import RequestHeader
from protocol.errors import ErrorCode
from tests.unit.test_metadata_cache import BROKERS, cache, partition

REQUEST = Request(RequestHeader(api_key=3, api_version=12, correlation_id=1, client_id="c"), None, "10.1.2.3:4567-8",
                  10, "EXTERNAL")
CLUSTER_ID = "Wz3hJwq9T0y1e6bRfZbBLQ"
TOPIC_ID = "ZOLr9CLNQjSW70hyIHx6BQ"


class Creation:
    """Records the topics it is asked to create, and answers as the auto topic creation manager does."""

    def __init__(self, enabled: bool) -> None:
        self.auto_create_topics_enable = enabled
        self.asked: list[list[str]] = []

    async def create_topics(self, names: Iterable[str]) -> dict[str, ErrorCode]:
        self.asked.append(list(names))
        return {name: ErrorCode.LEADER_NOT_AVAILABLE for name in self.asked[-1]}


def handler(enabled: bool = True) -> tuple[MetadataHandler, Creation]:
    metadata = cache()
    metadata.cluster_id = CLUSTER_ID
    metadata.update(UpdateMetadataRequest(
        controller_id=2, controller_epoch=1, broker_epoch=-1, live_brokers=list(BROKERS.values()),
        partition_states=[replace(partition(n, leader=1), topic_id=TOPIC_ID) for n in range(3)]))
    creation = Creation(enabled)
    return MetadataHandler(metadata, creation), creation


def answer(coroutine) -> object:
    result = asyncio.run(coroutine)
    assert isinstance(result, Response)
    return result.body


def test_metadata_carries_the_cluster_id_and_topic_ids():
    metadata, _ = handler()
    response = answer(metadata.handle_metadata(MetadataRequest(topics=["events"]), REQUEST))
    assert response.cluster_id == CLUSTER_ID and response.controller_id == 2
    [topic] = response.topics
    assert (topic.name, topic.topic_id, len(topic.partitions)) == ("events", TOPIC_ID, 3)


def test_topics_asked_for_by_id_are_answered_by_name_and_unknown_ids_with_unknown_topic_id():
    metadata, _ = handler()
    response = answer(metadata.handle_metadata(
        MetadataRequest(topics=[], topic_ids=[TOPIC_ID, "AAAAAAAAAAAAAAAAAAAAAQ"]), REQUEST))
    assert [(t.name, t.topic_id, t.error_code) for t in response.topics] == [
        ("events", TOPIC_ID, ErrorCode.NONE), ("", "AAAAAAAAAAAAAAAAAAAAAQ", ErrorCode.UNKNOWN_TOPIC_ID)]


def test_an_unknown_topic_is_created_only_when_the_client_and_the_broker_allow_it():
    metadata, creation = handler(enabled=True)
    response = answer(metadata.handle_metadata(MetadataRequest(topics=["new", "events"],
                                                               allow_auto_topic_creation=True), REQUEST))
    assert creation.asked == [["new"]]
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("new", ErrorCode.LEADER_NOT_AVAILABLE), ("events", ErrorCode.NONE)]
    response = answer(metadata.handle_metadata(MetadataRequest(topics=["new"]), REQUEST))
    assert creation.asked == [["new"]] and response.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    metadata, creation = handler(enabled=False)
    response = answer(metadata.handle_metadata(MetadataRequest(topics=["new"], allow_auto_topic_creation=True),
                                               REQUEST))
    assert creation.asked == [] and response.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_describe_cluster_names_the_cluster_its_controller_and_brokers_on_the_request_listener():
    metadata, _ = handler()
    response = answer(metadata.handle_describe_cluster(DescribeClusterRequest(), REQUEST))
    assert (response.error_code, response.cluster_id, response.controller_id) == (ErrorCode.NONE, CLUSTER_ID, 2)
    assert [(b.broker_id, b.host, b.port) for b in response.brokers] == [(1, "127.0.0.1", 9092),
                                                                         (2, "127.0.0.1", 9093)]
    refused = answer(metadata.handle_describe_cluster(DescribeClusterRequest(endpoint_type=CONTROLLER_ENDPOINTS),
                                                      REQUEST))
    assert refused.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE and refused.brokers == []


def test_api_versions_refuses_a_client_software_name_kafka_would_refuse():
    ok = answer(handle_api_versions(ApiVersionsRequest(client_software_name="apache-kafka-java",
                                                       client_software_version="3.9.1"), REQUEST))
    assert ok.error_code == ErrorCode.NONE and ok.api_keys
    for name, version in (("bad name", "1.0"), ("librdkafka", "-2.0"), ("", "1.0")):
        refused = answer(handle_api_versions(ApiVersionsRequest(client_software_name=name,
                                                                client_software_version=version), REQUEST))
        assert refused.error_code == ErrorCode.INVALID_REQUEST and refused.api_keys == []
