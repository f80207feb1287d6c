"""The Kafka apis a broker serves, at which versions, and how each request and response crosses the wire.

Advertised in ApiVersions exactly as listed here; a request for any other api or version closes the connection
(as Kafka does), except ApiVersions at a version above ours, which gets the v0 error answer of KIP-511.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from protocol.errors import ErrorCode
from protocol.kafka import adapters, codec, hot_paths
from protocol.kafka.adapters import Adapter
from protocol.kafka.codec import Buffer, KafkaDecodeError, read_string
from protocol.kafka.schema import SPECS, Versions
from protocol.messages import (
    ApiKey,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    ProducePartitionResponse,
    ProduceRequest,
    ProduceResponse,
    RequestHeader,
    Topic,
)

_HEADER = struct.Struct(">hhi")  # api_key, api_version, correlation_id
CORRELATION_ID = struct.Struct(">i")  # the whole response header (v0)


@dataclass(frozen=True, slots=True)
class KafkaApi:
    """One served api: its key, name and versions, and its codec."""

    key: int
    name: str
    versions: Versions
    #: (payload, position of the body, version) -> the request object the handler takes
    decode: Callable[[Buffer, int, int], Any]
    #: (response object, version, request object) -> the response body's buffers
    encode: Callable[[Any, int, Any], list[Buffer]]
    #: (request object, error code, message) -> the response object for a request that failed as a whole
    error: Callable[[Any, ErrorCode, str | None], Any]


def _from_spec(key: ApiKey, name: str, adapter: Adapter) -> KafkaApi:
    request_name, response_name = f"{name}Request", f"{name}Response"

    def decode(buf: Buffer, pos: int, version: int) -> Any:
        return adapter.request(codec.decoder(request_name, version)(buf, pos), version)

    def encode(body: Any, version: int, _request: Any) -> list[Buffer]:
        out = bytearray()
        codec.encoder(response_name, version)(adapter.response(body, version), out)
        return [out]

    return KafkaApi(key, name, SPECS[request_name].versions, decode, encode, adapter.error)


def _produce_error(request: ProduceRequest, code: ErrorCode, message: str | None) -> ProduceResponse:
    return ProduceResponse(topics=[Topic(name=t.name, partitions=[
        ProducePartitionResponse(partition=p.partition, error_code=code, error_message=message, base_offset=-1)
        for p in t.partitions]) for t in request.topics])


def _fetch_error(request: FetchRequest, code: ErrorCode, _message: str | None) -> FetchResponse:
    return FetchResponse(error_code=code, topics=[Topic(name=t.name, partitions=[
        FetchPartitionResponse(partition=p.partition, error_code=code, high_watermark=-1, records=b"")
        for p in t.partitions]) for t in request.topics])


def advertised() -> list[dict[str, int]]:
    """The ApiVersions answer's api list."""
    return [{"api_key": api.key, "min_version": api.versions.low, "max_version": api.versions.high}
            for api in KAFKA_APIS.values()]


KAFKA_APIS: dict[int, KafkaApi] = {api.key: api for api in (
    KafkaApi(ApiKey.PRODUCE, "Produce", SPECS["ProduceRequest"].versions, hot_paths.decode_produce_request,
             lambda body, version, _request: hot_paths.encode_produce_response(body, version), _produce_error),
    KafkaApi(ApiKey.FETCH, "Fetch", SPECS["FetchRequest"].versions, hot_paths.decode_fetch_request,
             lambda body, version, request: hot_paths.encode_fetch_response(body, version,
                                                                            request.isolation_level == 1),
             _fetch_error),
    _from_spec(ApiKey.LIST_OFFSETS, "ListOffsets", adapters.LIST_OFFSETS),
    _from_spec(ApiKey.METADATA, "Metadata", adapters.METADATA),
    _from_spec(ApiKey.API_VERSIONS, "ApiVersions", adapters.api_versions_adapter(advertised)),
    _from_spec(ApiKey.CREATE_TOPICS, "CreateTopics", adapters.CREATE_TOPICS),
    _from_spec(ApiKey.DELETE_TOPICS, "DeleteTopics", adapters.DELETE_TOPICS),
    _from_spec(ApiKey.INIT_PRODUCER_ID, "InitProducerId", adapters.INIT_PRODUCER_ID),
    _from_spec(ApiKey.OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpoch", adapters.OFFSET_FOR_LEADER_EPOCH),
    _from_spec(ApiKey.DESCRIBE_CONFIGS, "DescribeConfigs", adapters.DESCRIBE_CONFIGS),
)}


def decode_request_header(payload: Buffer) -> tuple[RequestHeader, int]:
    """Request header v1 (api_key, api_version, correlation_id, client_id) and where the body starts."""
    try:
        api_key, api_version, correlation_id = _HEADER.unpack_from(payload, 0)
        client_id, pos = read_string(payload, 8, nullable=True)
    except struct.error:
        raise KafkaDecodeError(f"a request header needs at least 10 bytes, got {len(payload)}") from None
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def unsupported_api_versions_answer(correlation_id: int) -> bytes:
    """The answer to ApiVersions at a version above ours (KIP-511): header and body v0, UNSUPPORTED_VERSION, and
    our own ApiVersions range so that the client retries with it."""
    api = KAFKA_APIS[ApiKey.API_VERSIONS]
    body = codec.encode("ApiVersionsResponse", 0, {
        "error_code": ErrorCode.UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": api.key, "min_version": api.versions.low, "max_version": api.versions.high}]})
    return CORRELATION_ID.pack(correlation_id) + body
