"""How an api crosses Kafka's wire: its codec (spec-driven, or written by hand), what the Kafka listener looks up
for each served api, and the list it advertises.

The Kafka listener serves exactly the apis whose messages are in specs.json, at the versions kept there (see
tests/unit/kafka_spec_source.py); each api family of protocol.apis gives the codec of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from protocol.errors import ErrorCode
from protocol.kafka import codec
from protocol.kafka.codec import Buffer
from protocol.kafka.schema import SPECS, Versions

#: A Kafka message: a dict keyed by the spec's snake_case field names.
Message = dict[str, Any]
#: (payload, position of the body, version) -> the request object the handler takes
Decode = Callable[[Buffer, int, int], Any]
#: (response object, version, request object) -> the response body's buffers
Encode = Callable[[Any, int, Any], list[Buffer]]
#: (request object, error code, message) -> the response object for a request that failed as a whole
ErrorResponse = Callable[[Any, ErrorCode, str | None], Any]


@dataclass(frozen=True, slots=True)
class KafkaCodec:
    """One api's requests and responses on Kafka's wire; `name` is Kafka's ("<name>Request" in specs.json)."""

    name: str
    versions: Versions
    decode: Decode
    encode: Encode


@dataclass(frozen=True, slots=True)
class KafkaApi:
    """One api the Kafka listener serves: its key, Kafka's name, its versions, its codec and its error response."""

    key: int
    name: str
    versions: Versions
    decode: Decode
    encode: Encode
    error: ErrorResponse


def hand_written(name: str, decode: Decode, encode: Encode) -> KafkaCodec:
    """A codec written by hand (the hot paths), at the versions specs.json keeps for the api."""
    return KafkaCodec(name, SPECS[f"{name}Request"].versions, decode, encode)


def spec_codec(name: str, request: Callable[[Message, int], object], response: Callable[[Any, int], Message]
               ) -> KafkaCodec:
    """The generic codec: specs.json's messages, converted by `request` ((Kafka request, version) -> the request
    object) and `response` ((response object, version) -> Kafka response)."""
    request_name, response_name = f"{name}Request", f"{name}Response"

    def decode(buf: Buffer, pos: int, version: int) -> Any:
        return request(codec.decoder(request_name, version)(buf, pos), version)

    def encode(body: Any, version: int, _request: Any) -> list[Buffer]:
        out = bytearray()
        codec.encoder(response_name, version)(response(body, version), out)
        return [out]

    return KafkaCodec(name, SPECS[request_name].versions, decode, encode)


def advertised() -> list[Message]:
    """The ApiVersions answer's api list: every api specs.json has a request of, at its versions, by api key."""
    requests = sorted((spec for spec in SPECS.values() if spec.name.endswith("Request")), key=lambda s: s.api_key)
    return [{"api_key": spec.api_key, "min_version": spec.versions.low, "max_version": spec.versions.high}
            for spec in requests]
