"""How an api crosses Kafka's wire: its codec (spec-driven, or written by hand), what the Kafka listener looks up
for each served api, and the list it advertises.

A codec speaks the versions specs.json keeps for its api (see tests/unit/kafka_spec_source.py); each api family of
protocol.apis gives the codec of its own. The Kafka listener serves, and ApiVersions advertises, exactly the apis
protocol.apis puts in its table (`serve`): those with a handler.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from protocol.errors import ErrorCode
from protocol.kafka import codec
from protocol.kafka.primitives import Buffer
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
    """One api's requests and responses on Kafka's wire; `name` is Kafka's ("<name>Request" in specs.json);
    `flexible` the versions whose headers and bodies are flexible."""

    name: str
    versions: Versions
    flexible: Versions
    decode: Decode
    encode: Encode


@dataclass(frozen=True, slots=True)
class KafkaApi:
    """One api the Kafka listener serves: its key, Kafka's name, its versions (and the flexible ones), its codec
    and its error response."""

    key: int
    name: str
    versions: Versions
    flexible: Versions
    decode: Decode
    encode: Encode
    error: ErrorResponse


def _codec(name: str, decode: Decode, encode: Encode) -> KafkaCodec:
    spec = SPECS[f"{name}Request"]
    return KafkaCodec(name, spec.versions, spec.flexible, decode, encode)


def hand_written(name: str, decode: Decode, encode: Encode) -> KafkaCodec:
    """A codec written by hand (the hot paths), at the versions specs.json keeps for the api, flexible ones
    included (the request and response headers around it follow the spec's flexible versions)."""
    return _codec(name, decode, encode)


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

    return _codec(name, decode, encode)


_SERVED: dict[int, KafkaApi] = {}  # by api key, filled by `serve`


def serve(apis: Iterable[KafkaApi]) -> dict[int, KafkaApi]:
    """Make `apis` what the Kafka listener serves and advertises (protocol.apis does, once, with its table); the
    table by api key."""
    _SERVED.clear()
    _SERVED.update((api.key, api) for api in apis)
    return _SERVED


def advertised() -> list[Message]:
    """The ApiVersions answer's api list: every api served, at its versions, by api key."""
    return [{"api_key": api.key, "min_version": api.versions.low, "max_version": api.versions.high}
            for api in sorted(_SERVED.values(), key=lambda api: api.key)]
