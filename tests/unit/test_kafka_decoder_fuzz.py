"""Fuzzing the Kafka codec's request decoding with random and mutated frames: every frame either decodes or is
refused with a clear error (MalformedRequestError: close the connection; RequestRejectedError: unknown api or
version); nothing else escapes, so no input can crash a broker's connection."""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from broker.network.wire import KafkaWire
from protocol.apis import KAFKA_APIS
from protocol.envelope import MalformedRequestError, RequestRejectedError
from protocol.kafka import codec
from protocol.kafka.schema import SPECS
from tests.unit.test_kafka_codec import message_values

_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.data_too_large])


def _decode(frame: bytes) -> None:
    try:
        KafkaWire().decode(frame)
    except (MalformedRequestError, RequestRejectedError) as e:
        assert str(e)


@st.composite
def valid_frames(draw: st.DrawFn) -> bytes:
    api = draw(st.sampled_from(list(KAFKA_APIS.values())))
    version = draw(st.integers(api.versions.low, api.versions.high))
    value = draw(message_values(SPECS[f"{api.name}Request"], version))
    # Metadata takes topics by id from v12 only (Kafka refuses ids, as a topic without a name, below it)
    assume(api.name != "Metadata" or version >= 12 or all(t["name"] is not None for t in value["topics"] or ()))
    body = codec.encode(f"{api.name}Request", version, value)
    client_id = draw(st.one_of(st.none(), st.text(max_size=5)))
    header = struct.pack(">hhi", api.key, version, 1) + (
        b"\xff\xff" if client_id is None else struct.pack(">h", len(client_id.encode())) + client_id.encode())
    tagged_fields = b"\x00" if version in api.flexible else b""  # request header v2: none after the client id
    return header + tagged_fields + body


@_SETTINGS
@given(frame=valid_frames())
def test_valid_requests_decode(frame: bytes) -> None:
    KafkaWire().decode(frame)


@_SETTINGS
@given(frame=st.binary(max_size=200))
def test_random_frames_decode_or_are_refused(frame: bytes) -> None:
    _decode(frame)


@_SETTINGS
@given(frame=st.binary(max_size=200), key=st.sampled_from(list(KAFKA_APIS)), version=st.integers(-2, 14))
def test_random_bodies_of_every_api_decode_or_are_refused(frame: bytes, key: int, version: int) -> None:
    _decode(struct.pack(">hhih", key, version, 7, -1) + frame)


@_SETTINGS
@given(frame=valid_frames(), data=st.data())
def test_mutated_requests_decode_or_are_refused(frame: bytes, data: st.DataObject) -> None:
    mutated = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "cut", "insert", "length"]))
        at = data.draw(st.integers(0, max(0, len(mutated) - 1)))
        if kind == "flip" and mutated:
            mutated[at] ^= data.draw(st.integers(1, 255))
        elif kind == "cut":
            del mutated[at:]
        elif kind == "insert":
            mutated[at:at] = data.draw(st.binary(min_size=1, max_size=8))
        elif len(mutated) >= at + 4:
            mutated[at:at + 4] = data.draw(st.sampled_from([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe",
                                                            b"\x80\x00\x00\x00"]))
    _decode(bytes(mutated))
