"""The two codecs a broker's listener speaks, told apart by the first frame of each connection.

After the length prefix, a msgpack request is a map (its first byte 0x80-0x8f, 0xde or 0xdf) and a Kafka request
starts with its int16 api key (first byte 0x00 for every api Kafka has). A connection keeps the codec of its first
frame. Either codec decodes a frame into the RequestHeader and request object the handlers take, and encodes the
handler's Response for the wire.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Protocol

from broker.network.request import Response
from protocol.apis import APIS, KAFKA_APIS
from protocol.apis.api import ApiKey
from protocol.envelope import (
    MalformedRequestError,
    RequestHeader,
    RequestRejectedError,
    UnknownApiError,
    UnsupportedVersionError,
    decode_request,
    encode_response,
    encode_response_parts,
)
from protocol.errors import ErrorCode
from protocol.kafka.api import KafkaApi
from protocol.kafka.header import (
    decode_request_header,
    request_body_start,
    response_header,
    unsupported_api_versions_answer,
)
from protocol.kafka.primitives import Buffer, KafkaDecodeError

_MSGPACK_MAP_FIRST_BYTES = frozenset(range(0x80, 0x90)) | {0xDE, 0xDF}


@dataclass(slots=True)
class Rejection:
    """A request that cannot be served, answered with a ready payload (None: close the connection instead); also a
    raw SASL token, which is a ready payload too."""

    payload: Buffer | None
    reason: str


class Wire(Protocol):
    """A codec of the listener: frames in, request objects out; Responses in, frame payloads out."""

    name: str

    def decode(self, payload: bytes) -> tuple[RequestHeader, object]:
        """The header and request object; MalformedRequestError (close the connection) or RequestRejectedError
        (see `reject`)."""
        ...

    def reject(self, error: RequestRejectedError) -> Rejection:
        """What to answer to a request with a readable header that cannot be served."""
        ...

    def encode(self, header: RequestHeader, request: object, response: Response) -> list[Buffer]:
        """The response frame's payload, as buffers to write one after the other; TypeError, ValueError or
        struct.error for a response that does not fit the api's declaration (see `encode_failure`)."""
        ...

    def encode_failure(self, header: RequestHeader, request: object, message: str) -> list[Buffer]:
        """The payload answering a request whose response could not be encoded (UNKNOWN_SERVER_ERROR)."""
        ...


#: What encoding a response that does not fit its declaration raises.
ENCODING_ERRORS = (TypeError, ValueError, OverflowError, AttributeError, struct.error)


class MsgpackWire:
    """minikafka's own protocol (protocol.envelope): every request answered, errors in the response header."""

    name = "msgpack"

    def decode(self, payload: bytes) -> tuple[RequestHeader, object]:
        return decode_request(payload)

    def reject(self, error: RequestRejectedError) -> Rejection:
        return Rejection(encode_response(error.header.correlation_id, None, error.error_code, str(error)), str(error))

    def encode(self, header: RequestHeader, request: object, response: Response) -> list[Buffer]:
        body = response.body
        api = APIS.get(header.api_key)
        if body is not None and (api is None or type(body) is not api.response):
            raise TypeError(f"{type(body).__name__} is not the response of api key {header.api_key}")
        return encode_response_parts(header.correlation_id, body, response.error_code, response.error_message)

    def encode_failure(self, header: RequestHeader, request: object, message: str) -> list[Buffer]:
        return [encode_response(header.correlation_id, None, ErrorCode.UNKNOWN_SERVER_ERROR, message)]


class KafkaWire:
    """Apache Kafka's protocol (protocol.kafka): an unknown api or version closes the connection, as Kafka does,
    except ApiVersions above our version (KIP-511's v0 answer); a request that failed as a whole is answered with
    the api's error response."""

    name = "kafka"

    def decode(self, payload: bytes) -> tuple[RequestHeader, object]:
        try:
            header, pos = decode_request_header(payload)
        except KafkaDecodeError as e:
            raise MalformedRequestError(f"Kafka request header: {e}") from None
        api = KAFKA_APIS.get(header.api_key)
        if api is None:
            raise UnknownApiError(header, f"unknown api key {header.api_key}")
        if header.api_version not in api.versions:
            raise UnsupportedVersionError(header, f"{api.name} version {header.api_version} is not supported "
                                                  f"(supported: {api.versions.low}..{api.versions.high})")
        try:
            pos = request_body_start(payload, pos, header.api_version in api.flexible)
            return header, api.decode(payload, pos, header.api_version)
        except KafkaDecodeError as e:
            raise MalformedRequestError(f"{api.name} v{header.api_version} request: {e}") from None

    def reject(self, error: RequestRejectedError) -> Rejection:
        header = error.header
        if header.api_key == ApiKey.API_VERSIONS and isinstance(error, UnsupportedVersionError):
            return Rejection(unsupported_api_versions_answer(header.correlation_id), str(error))
        return Rejection(None, str(error))

    def encode(self, header: RequestHeader, request: object, response: Response) -> list[Buffer]:
        api = KAFKA_APIS[header.api_key]
        body = response.body
        if body is None:
            body = api.error(request, response.error_code, response.error_message)
        elif type(body) is not APIS[header.api_key].response:
            raise TypeError(f"{type(body).__name__} is not the response of {api.name}")
        return _response(api, header, body, request)

    def encode_failure(self, header: RequestHeader, request: object, message: str) -> list[Buffer]:
        api = KAFKA_APIS[header.api_key]
        return _response(api, header, api.error(request, ErrorCode.UNKNOWN_SERVER_ERROR, message), request)


def _response(api: KafkaApi, header: RequestHeader, body: object, request: object) -> list[Buffer]:
    version = header.api_version
    return [response_header(api.key, version in api.flexible, header.correlation_id),
            *api.encode(body, version, request)]


def sniff(payload: bytes) -> Wire:
    """The codec of a connection, from its first frame's payload."""
    return MsgpackWire() if payload[:1] and payload[0] in _MSGPACK_MAP_FIRST_BYTES else KafkaWire()
