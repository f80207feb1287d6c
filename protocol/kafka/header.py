"""Kafka's request header (v1) and response header (v0), and the answer to an ApiVersions request at a version
above ours."""

from __future__ import annotations

import struct

from protocol.apis.api import ApiKey
from protocol.envelope import RequestHeader
from protocol.errors import ErrorCode
from protocol.kafka import codec
from protocol.kafka.codec import Buffer, KafkaDecodeError, read_string
from protocol.kafka.schema import SPECS

_HEADER = struct.Struct(">hhi")  # api_key, api_version, correlation_id
CORRELATION_ID = struct.Struct(">i")  # the whole response header (v0)


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
    versions = SPECS["ApiVersionsRequest"].versions
    body = codec.encode("ApiVersionsResponse", 0, {
        "error_code": ErrorCode.UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": ApiKey.API_VERSIONS, "min_version": versions.low, "max_version": versions.high}]})
    return CORRELATION_ID.pack(correlation_id) + body
