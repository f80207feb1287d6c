"""The cluster as a whole: DescribeCluster (60), its id, controller and brokers (KIP-700).

On Kafka's wire: v0-1 (flexible; v1 asks for brokers' or controllers' endpoints, and a ZooKeeper cluster like
minikafka has only brokers': asked for controllers', it answers UNSUPPORTED_ENDPOINT_TYPE as Kafka's does)."""

from __future__ import annotations

from dataclasses import field

from protocol.apis.api import Api, ApiKey, error_only
from protocol.apis.metadata import AUTHORIZED_OPERATIONS_OMITTED
from protocol.codec import Int8, Int16, Int32, message
from protocol.kafka.api import Message, spec_codec

#: DescribeCluster's endpoint types (Kafka's EndpointType).
BROKER_ENDPOINTS = 1
CONTROLLER_ENDPOINTS = 2


@message
class DescribeClusterRequest:
    """Ask for the cluster's id, controller and brokers (or controllers)."""

    endpoint_type: Int8 = BROKER_ENDPOINTS


@message
class ClusterBroker:
    """A live broker and where it is reached on the listener the request came in on."""

    broker_id: Int32
    host: str
    port: Int32


@message
class DescribeClusterResponse:
    """The cluster's id, its controller and live brokers, or why not."""

    error_code: Int16
    error_message: str | None = None
    endpoint_type: Int8 = BROKER_ENDPOINTS
    cluster_id: str = ""
    controller_id: Int32 = -1
    brokers: list[ClusterBroker] = field(default_factory=list)


def _kafka_request(message: Message, _version: int) -> DescribeClusterRequest:
    return DescribeClusterRequest(endpoint_type=message["endpoint_type"])


def _kafka_response(body: DescribeClusterResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "error_code": body.error_code, "error_message": body.error_message,
            "endpoint_type": body.endpoint_type, "cluster_id": body.cluster_id, "controller_id": body.controller_id,
            "brokers": [{"broker_id": b.broker_id, "host": b.host, "port": b.port, "rack": None}
                        for b in body.brokers],
            "cluster_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}


DESCRIBE_CLUSTER = Api(ApiKey.DESCRIBE_CLUSTER, "DescribeCluster", DescribeClusterRequest, DescribeClusterResponse,
                       error_only(DescribeClusterResponse),
                       kafka=spec_codec("DescribeCluster", _kafka_request, _kafka_response))
