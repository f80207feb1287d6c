"""minikafka's own protocol around a body: the request and response envelopes, and the errors of reading them.

A frame's payload (see protocol.framing) is a msgpack map:

    request:  {"api_key": int, "api_version": int, "correlation_id": int, "client_id": str | None,
               "body": {...}}
    response: {"correlation_id": int, "error_code": int, "error_message": str | None, "body": {...} | None}

The response's top-level error is for request-level failures (a body that does not validate, an
unsupported version); its body is None then. Per-partition errors live in the body. Bodies are the messages
protocol.apis declares, encoded and decoded by protocol.codec.
"""

import os
import struct
from dataclasses import dataclass
from typing import Any

import msgpack

from protocol.apis import APIS
from protocol.codec import (
    PASS_THROUGH,
    Int16,
    Int32,
    ValidationError,
    declare,
    decode_body,
    encode_body,
    label,
    message,
    type_name,
)
from protocol.errors import ErrorCode, ProtocolError

# ---------------------------------------------------------------------------------------------
# Errors


class MalformedRequestError(ProtocolError):
    """Not a request at all (not msgpack, not a map, bad header): there is no correlation id to answer."""

    error_code = ErrorCode.CORRUPT_MESSAGE


class MalformedResponseError(ProtocolError):
    """A response that is not msgpack, not a map, or whose header or body does not validate."""

    error_code = ErrorCode.CORRUPT_MESSAGE


class RequestRejectedError(ProtocolError):
    """A request with a valid header that cannot be served; the server may answer `header.correlation_id`
    with `error_code` and this message (body None), or close the connection."""

    def __init__(self, header: "RequestHeader", message: str) -> None:
        super().__init__(message)
        self.header = header


class UnknownApiError(RequestRejectedError):
    """The header's api key is not one minikafka knows."""


class UnsupportedVersionError(RequestRejectedError):
    """The api is known but not at the header's version."""

    error_code = ErrorCode.UNSUPPORTED_VERSION


class InvalidRequestError(RequestRejectedError):
    """The body does not validate against the api's request declaration; the message gives the path."""


# ---------------------------------------------------------------------------------------------
# Headers


@dataclass(slots=True)
class RequestHeader:
    """The fields every request carries beside its body."""

    api_key: Int16
    api_version: Int16
    correlation_id: Int32
    client_id: str | None


@message
class _ResponseHeader:
    correlation_id: Int32
    error_code: Int16
    error_message: str | None


declare(RequestHeader, "request header")
declare(_ResponseHeader, "response header")
_RESPONSE_TYPES = frozenset(api.response for api in APIS.values())


# ---------------------------------------------------------------------------------------------
# Requests and responses


def _unpack(payload: bytes, error: type[ProtocolError], what: str) -> dict[str, Any]:
    try:
        data = msgpack.unpackb(payload, raw=False)
    except (ValueError, TypeError, msgpack.UnpackException) as e:
        raise error(f"{what} is not msgpack: {e}") from None
    if type(data) is not dict:
        raise error(f"{what} is not a map: got {type_name(data)}")
    return data


def encode_request(header: RequestHeader, body: Any) -> bytes:
    """The payload of a request frame (without the length prefix)."""
    api = APIS.get(header.api_key)
    if api is None:
        raise ValueError(f"unknown api key {header.api_key}")
    envelope = encode_body(header)
    envelope["body"] = encode_body(body, api.request)
    return msgpack.packb(envelope)


def decode_request(payload: bytes) -> tuple[RequestHeader, Any]:
    """The header and body of a request payload; raises a ProtocolError subclass saying what is wrong."""
    data = _unpack(payload, MalformedRequestError, "request")
    try:
        header = decode_body(RequestHeader, data)
    except ValidationError as e:
        raise MalformedRequestError(str(e)) from None
    api = APIS.get(header.api_key)
    if api is None:
        raise UnknownApiError(header, f"unknown api key {header.api_key}")
    if not api.min_version <= header.api_version <= api.max_version:
        raise UnsupportedVersionError(
            header,
            f"{api.name} version {header.api_version} is not supported "
            f"(supported: {api.min_version}..{api.max_version})",
        )
    if "body" not in data:
        raise InvalidRequestError(header, f"{label(api.request)}: missing body")
    try:
        body = decode_body(api.request, data["body"])
    except ValidationError as e:
        raise InvalidRequestError(header, str(e)) from None
    return header, body


def _response_envelope(correlation_id: int, body: Any, error_code: ErrorCode, error_message: str | None
                       ) -> dict[str, Any]:
    if body is None and error_code == ErrorCode.NONE:
        raise ValueError("a response without a body must carry an error code")
    if body is not None and type(body) not in _RESPONSE_TYPES:
        raise TypeError(f"{type(body).__name__} is not a response message")
    envelope = encode_body(_ResponseHeader(
        correlation_id=correlation_id, error_code=error_code, error_message=error_message))
    envelope["body"] = None if body is None else encode_body(body)
    return envelope


def encode_response(
    correlation_id: int,
    body: Any,
    error_code: ErrorCode = ErrorCode.NONE,
    error_message: str | None = None,
) -> bytes:
    """The payload of a response frame. body is None only for a request-level error."""
    return msgpack.packb(_response_envelope(correlation_id, body, error_code, error_message))


_BIN32 = struct.Struct(">BI")


def encode_response_parts(
    correlation_id: int,
    body: Any,
    error_code: ErrorCode = ErrorCode.NONE,
    error_message: str | None = None,
) -> list[bytes | bytearray | memoryview]:
    """encode_response's payload as buffers to write one after the other, the same bytes: byte fields of at least
    PASS_THROUGH_BYTES (the record batches of a fetch response) are buffers of their own, not copied into msgpack's.
    Each is packed as a unique placeholder first, then cut out of the packed bytes and replaced by its bin 32
    header and the bytes themselves. The placeholders are put in while the body is converted, not by another walk
    over it (which cost more than the conversion for a fetch response of thousands of partitions)."""
    large: list[bytes | bytearray | memoryview] = []
    token = os.urandom(8)
    collecting = PASS_THROUGH.set((large, token))
    try:
        envelope = _response_envelope(correlation_id, body, error_code, error_message)
    finally:
        PASS_THROUGH.reset(collecting)
    packed = msgpack.packb(envelope)
    if not large:
        return [packed]
    parts: list[bytes | bytearray | memoryview] = []
    view = memoryview(packed)
    position = 0
    for index, value in enumerate(large):
        placeholder = b"\xc4\x10" + token + index.to_bytes(8, "big")  # bin 8 of the 16-byte placeholder
        found = packed.index(placeholder, position)
        parts += (view[position:found], _BIN32.pack(0xC6, len(value)), value)
        position = found + len(placeholder)
    parts.append(view[position:])
    return parts


def decode_response(payload: bytes, api_key: int) -> tuple[int, ErrorCode, str | None, Any]:
    """(correlation_id, error code, error message, body or None) of a response to an `api_key` request.

    Raises MalformedResponseError if the payload, its header or its body does not validate."""
    api = APIS.get(api_key)
    if api is None:
        raise ValueError(f"unknown api key {api_key}")
    data = _unpack(payload, MalformedResponseError, "response")
    raw_body = data.get("body")
    try:
        header = decode_body(_ResponseHeader, data)
        body = None if raw_body is None else decode_body(api.response, raw_body)
    except ValidationError as e:
        raise MalformedResponseError(str(e)) from None
    if body is None and header.error_code == ErrorCode.NONE:
        raise MalformedResponseError(f"{label(api.response)}: no body and no error code")
    return header.correlation_id, ErrorCode.from_code(header.error_code), header.error_message, body
