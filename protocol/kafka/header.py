"""Kafka's request and response headers, and the answer to an ApiVersions request at a version above ours.

A request of a non-flexible version has header v1 (api_key, api_version, correlation_id, client_id); one of a
flexible version header v2, v1 followed by tagged fields (client_id stays an int16-length string). A response has
header v0 (correlation_id), or v1 (v0 followed by tagged fields) for a flexible version, except ApiVersions' response,
whose header is always v0 (KIP-511: a client that asked too high a version can read the answer).
"""

from __future__ import annotations

import struct

from protocol.apis.api import ApiKey
from protocol.envelope import RequestHeader
from protocol.errors import ErrorCode
from protocol.kafka import codec
from protocol.kafka.primitives import Buffer, KafkaDecodeError, read_string, skip_tagged_fields
from protocol.kafka.schema import SPECS

_HEADER = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_CORRELATION_ID = struct.Struct(">i")  # the whole response header v0
NO_TAGGED_FIELDS = b"\x00"


def decode_request_header(payload: Buffer) -> tuple[RequestHeader, int]:
    """Request header v1 (api_key, api_version, correlation_id, client_id) and where it ends."""
    try:
        api_key, api_version, correlation_id = _HEADER.unpack_from(payload, 0)
        client_id, pos = read_string(payload, 8, nullable=True)
    except struct.error:
        raise KafkaDecodeError(f"a request header needs at least 10 bytes, got {len(payload)}") from None
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def request_body_start(payload: Buffer, header_end: int, flexible: bool) -> int:
    """Where the body starts: after header v2's tagged fields (which name nothing minikafka reads) for a flexible
    version, right after header v1 otherwise."""
    return skip_tagged_fields(payload, header_end) if flexible else header_end


def response_header(api_key: int, flexible: bool, correlation_id: int) -> bytes:
    """The response header of an api at a flexible version or not: v1 (no tagged fields) or v0; ApiVersions' v0."""
    if flexible and api_key != ApiKey.API_VERSIONS:
        return _CORRELATION_ID.pack(correlation_id) + NO_TAGGED_FIELDS
    return _CORRELATION_ID.pack(correlation_id)


def unsupported_api_versions_answer(correlation_id: int) -> bytes:
    """The answer to ApiVersions at a version above ours (KIP-511): header and body v0, UNSUPPORTED_VERSION, and
    our own ApiVersions range so that the client retries with it."""
    versions = SPECS["ApiVersionsRequest"].versions
    body = codec.encode("ApiVersionsResponse", 0, {
        "error_code": ErrorCode.UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": ApiKey.API_VERSIONS, "min_version": versions.low, "max_version": versions.high}]})
    return _CORRELATION_ID.pack(correlation_id) + body
