"""The Kafka codec: its specs are Kafka's, every served message at every served version crosses the wire exactly as
an independent implementation (kafka-python 3's JSON-driven protocol module) reads and writes it, the hand-written
Produce and Fetch paths agree with the spec-driven codec, and the api table advertises what is implemented."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol import admin, consumer, metadata, producer, sasl
from kafka.protocol.api_message import ApiMessage

from protocol.apis import KAFKA_APIS
from protocol.apis.fetch import (
    EpochEndOffset,
    FetchPartitionResponse,
    FetchResponse,
    LeaderIdAndEpoch,
    decode_fetch_request,
    encode_fetch_response,
)
from protocol.apis.produce import (
    ProducePartitionResponse,
    ProduceResponse,
    decode_produce_request,
    encode_produce_response,
)
from protocol.apis.shapes import Topic
from protocol.kafka import codec
from protocol.kafka.api import advertised
from protocol.kafka.header import decode_request_header, unsupported_api_versions_answer
from protocol.kafka.primitives import KafkaDecodeError
from protocol.kafka.schema import SPECS, FieldSpec, MessageSpec
from protocol.records import BatchBuilder
from tests.unit.kafka_spec_source import SPECS_FILE, kafka_newest_version, render

_ORACLE_MODULES = (producer, consumer, metadata, admin, sasl)
_INT_RANGES = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}


def oracle_class(name: str) -> Any:
    """kafka-python's class for a message."""
    return next(getattr(module, name) for module in _ORACLE_MODULES if hasattr(module, name))


def served_messages() -> list[tuple[str, int]]:
    return [(name, version) for name, spec in SPECS.items()
            for version in range(spec.versions.low, spec.versions.high + 1)]


def _batch(values: list[bytes]) -> bytes:
    builder = BatchBuilder()
    for value in values:
        builder.append(value, timestamp=1_700_000_000_000)
    return builder.build()


_records = st.lists(st.binary(max_size=8), min_size=1, max_size=3).map(_batch)


def _value(field: FieldSpec, version: int, element: bool = False) -> st.SearchStrategy[Any]:
    nullable = version in field.nullable
    if field.is_array and not element:
        items = st.lists(_value(field, version, element=True), max_size=3)
        return st.one_of(st.none(), items) if nullable else items
    kind = field.element_type
    if field.is_struct:
        return _message(field.fields, version)
    if kind in _INT_RANGES:
        bits = _INT_RANGES[kind]
        return st.integers(-(2**bits), 2**bits - 1)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "uuid":
        return st.binary(min_size=16, max_size=16)
    base = {"string": st.text(max_size=12), "bytes": st.binary(max_size=12), "records": _records}[kind]
    return st.one_of(st.none(), base) if nullable and not element else base


def _message(fields: tuple[FieldSpec, ...], version: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({f.name: _value(f, version) for f in fields if version in f.versions})


def message_values(spec: MessageSpec, version: int) -> st.SearchStrategy[dict[str, Any]]:
    return _message(spec.fields, version)


def restricted(decoded: Any, like: Any) -> Any:
    """`decoded` with only the keys `like` has, recursively (decoding adds the fields a version lacks)."""
    if isinstance(like, dict):
        return {key: restricted(decoded[key], value) for key, value in like.items()}
    if isinstance(like, list):
        return [restricted(d, v) for d, v in zip(decoded, like, strict=True)]
    return decoded


def test_the_specs_are_kafkas_trimmed_to_the_served_versions():
    assert SPECS_FILE.read_text() == render(), "regenerate with: python -m tests.unit.kafka_spec_source"


@pytest.mark.parametrize(("name", "version"), served_messages(), ids=lambda x: str(x))
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_message_reads_and_writes_as_kafka_pythons(name: str, version: int, data: st.DataObject):
    value = data.draw(message_values(SPECS[name], version))
    # kafka-python reads an ApiVersions response carrying an error as v0, the answer to a version it asked too high
    if name == "ApiVersionsResponse" and version > 0:
        value["error_code"] = 0
    ours = codec.encode(name, version, value)
    theirs = oracle_class(name).decode(ours, version=version)
    try:
        again = bytes(theirs.encode())
    except AttributeError:  # kafka-python cannot encode some messages it decoded: by its generic encoder, or rebuilt
        try:
            again = bytes(ApiMessage.encode(theirs))
        except AttributeError:
            again = bytes(oracle_class(name)[version](**theirs.to_dict()).encode())
    assert again == ours  # kafka-python read every field where we wrote it
    decoded = codec.decode(name, version, again)
    assert restricted(decoded, value) == value


@pytest.mark.parametrize("version", range(3, 12))
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_the_produce_request_path_reads_what_the_spec_codec_writes(version: int, data: st.DataObject):
    value = data.draw(message_values(SPECS["ProduceRequest"], version))
    request = decode_produce_request(codec.encode("ProduceRequest", version, value), 0, version)
    assert (request.acks, request.timeout_ms) == (value["acks"], value["timeout_ms"])
    assert [(t.name, [(p.partition, bytes(p.records)) for p in t.partitions]) for t in request.topics] == [
        (t["name"], [(p["index"], p["records"] or b"") for p in t["partition_data"]]) for t in value["topic_data"]]


def _topic_key(topic: dict[str, Any], version: int) -> object:
    """A Fetch topic's name, or its id from v13."""
    return topic["topic_id"] if version >= 13 else topic["topic"]


@pytest.mark.parametrize("version", range(4, 18))
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_the_fetch_request_path_reads_what_the_spec_codec_writes(version: int, data: st.DataObject):
    value = data.draw(message_values(SPECS["FetchRequest"], version))
    request = decode_fetch_request(codec.encode("FetchRequest", version, value), 0, version)
    replica_id = value["replica_state"]["replica_id"] if version >= 15 else value["replica_id"]
    assert (request.replica_id, request.max_wait_ms, request.min_bytes, request.max_bytes,
            request.isolation_level) == (replica_id, value["max_wait_ms"], value["min_bytes"],
                                         value.get("max_bytes"), value["isolation_level"])
    keys = request.topic_ids if version >= 13 else [t.name for t in request.topics]
    assert [(key, [(p.partition, p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch, p.log_start_offset,
                    p.partition_max_bytes) for p in t.partitions]) for key, t in zip(keys, request.topics,
                                                                                    strict=True)] == [
        (_topic_key(t, version), [(p["partition"], p.get("current_leader_epoch", -1), p["fetch_offset"],
                          p.get("last_fetched_epoch", -1), p.get("log_start_offset", -1), p["partition_max_bytes"])
                         for p in t["partitions"]])
        for t in value["topics"]]
    assert (request.session_id, request.session_epoch) == (value.get("session_id", 0), value.get("session_epoch", -1))
    forgotten = request.forgotten_topic_ids if version >= 13 else [t.name for t in request.forgotten_topics]
    assert [(key, t.partitions) for key, t in zip(forgotten, request.forgotten_topics, strict=True)] == [
        (_topic_key(t, version), t["partitions"]) for t in value.get("forgotten_topics_data", [])]


_int16, _int32, _int64 = (st.integers(-(2**b), 2**b - 1) for b in (15, 31, 63))


@pytest.mark.parametrize("version", range(3, 12))
@settings(max_examples=20, deadline=None)
@given(topics=st.lists(st.tuples(st.text(max_size=8), st.lists(st.tuples(
    _int32, st.integers(0, 100), _int64, _int64, _int64, st.one_of(st.none(), st.text(max_size=8)))))))
def test_the_produce_response_path_writes_what_the_spec_codec_reads(version: int, topics: list) -> None:
    response = ProduceResponse(topics=[Topic(name=name, partitions=[ProducePartitionResponse(
        partition=p, error_code=code, base_offset=base, log_append_time_ms=append_time, log_start_offset=start,
        error_message=message) for p, code, base, append_time, start, message in partitions])
        for name, partitions in topics], throttle_time_ms=0)
    decoded = codec.decode("ProduceResponse", version,
                           b"".join(encode_produce_response(response, version)))
    expected = [(name, [(p, code, base, append_time, start if version >= 5 else -1,
                         message if version >= 8 and code != 0 else None)
                        for p, code, base, append_time, start, message in partitions]) for name, partitions in topics]
    assert [(t["name"], [(p["index"], p["error_code"], p["base_offset"], p["log_append_time_ms"],
                          p["log_start_offset"], p["error_message"]) for p in t["partition_responses"]])
            for t in decoded["responses"]] == expected


_epochs = st.one_of(st.none(), st.tuples(_int32, _int64))
_leaders = st.one_of(st.none(), st.tuples(_int32, _int32))


@pytest.mark.parametrize("version", range(4, 18))
@pytest.mark.parametrize("read_committed", [False, True])
@settings(max_examples=15, deadline=None)
@given(topics=st.lists(st.tuples(st.text(max_size=8), st.binary(min_size=16, max_size=16), st.lists(st.tuples(
    _int32, _int16, _int64, _int64, st.one_of(_records, st.just(b""), st.just(b"\xab" * 5000)), _epochs,
    _leaders)))))
def test_the_fetch_response_path_writes_what_the_spec_codec_reads(version: int, read_committed: bool,
                                                                  topics: list) -> None:
    response = FetchResponse(error_code=0, topics=[Topic(name=name, partitions=[FetchPartitionResponse(
        partition=p, error_code=code, high_watermark=hw, last_stable_offset=hw, log_start_offset=start,
        records=records,
        diverging_epoch=diverging and EpochEndOffset(epoch=diverging[0], end_offset=diverging[1]),
        current_leader=leader and LeaderIdAndEpoch(leader_id=leader[0], leader_epoch=leader[1]))
        for p, code, hw, start, records, diverging, leader in partitions]) for name, _id, partitions in topics],
        topic_ids=[topic_id for _name, topic_id, _partitions in topics])
    decoded = codec.decode("FetchResponse", version,
                           b"".join(encode_fetch_response(response, version, read_committed)))
    flexible = version >= 12
    assert [(_topic_key(t, version), [
        (p["partition_index"], p["error_code"], p["high_watermark"], p["last_stable_offset"], p["log_start_offset"],
         p["aborted_transactions"], p["preferred_read_replica"], p["records"], p.get("diverging_epoch"),
         p.get("current_leader")) for p in t["partitions"]]) for t in decoded["responses"]] == [
        (topic_id if version >= 13 else name, [
            (p, code, hw, hw, start if version >= 5 else -1, [] if read_committed else None, -1, records,
             {"epoch": diverging[0], "end_offset": diverging[1]} if flexible and diverging else None,
             {"leader_id": leader[0], "leader_epoch": leader[1]} if flexible and leader else None)
            for p, code, hw, start, records, diverging, leader in partitions]) for name, topic_id, partitions in topics]


@pytest.mark.parametrize("produce_version", [8, 11])
def test_record_batches_pass_through_without_being_copied(produce_version: int):
    records = _batch([b"x" * 100] * 50)
    frame = codec.encode("ProduceRequest", produce_version, {"acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": records}]}]})
    [partition] = decode_produce_request(frame, 0, produce_version).topics[0].partitions
    assert isinstance(partition.records, memoryview) and partition.records.obj is frame
    response = FetchResponse(error_code=0, topics=[Topic(name="t", partitions=[FetchPartitionResponse(
        partition=0, error_code=0, high_watermark=50, records=records)])])
    assert any(part is records for part in encode_fetch_response(response, 11, False))


def test_the_advertised_versions_are_exactly_those_implemented():
    assert {entry["api_key"]: (entry["min_version"], entry["max_version"]) for entry in advertised()} == {
        18: (0, 4), 3: (0, 12), 0: (3, 11), 1: (4, 17), 2: (1, 8), 19: (2, 7), 20: (1, 6), 32: (1, 4), 23: (2, 4),
        22: (0, 5),
        # the group apis, flexible versions included: FindCoordinator, JoinGroup, Heartbeat, LeaveGroup, SyncGroup,
        # DescribeGroups, ListGroups, DeleteGroups, OffsetCommit, OffsetFetch, OffsetDelete
        10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 42: (0, 2), 8: (1, 9),
        9: (1, 9), 47: (0, 0),
        # the admin apis: DescribeCluster, CreatePartitions, ElectLeaders, DeleteRecords, AlterConfigs,
        # IncrementalAlterConfigs, DescribeLogDirs, AlterPartitionReassignments, ListPartitionReassignments,
        # DescribeProducers
        60: (0, 1), 37: (0, 3), 43: (0, 2), 21: (0, 2), 33: (0, 2), 44: (0, 1), 35: (0, 4), 45: (0, 0), 46: (0, 0),
        61: (0, 0),
        # the ACL apis: DescribeAcls, CreateAcls, DeleteAcls
        29: (0, 3), 30: (0, 3), 31: (0, 3),
        # authentication and users' SCRAM credentials: SaslHandshake, SaslAuthenticate, Describe- and
        # AlterUserScramCredentials
        17: (0, 1), 36: (0, 2), 50: (0, 0), 51: (0, 0),
        # no quotas (DescribeClientQuotas answers none)
        48: (0, 1)}
    assert set(KAFKA_APIS) == {entry["api_key"] for entry in advertised()}


#: The apis served below the newest version Kafka 3.9 serves: their newest version here, and what the versions
#: above it need (docs/KAFKA_APIS.md has the whole table).
BELOW_KAFKA_39 = {
    "ListOffsets": (8, "v9 asks for the earliest offset pending upload to tiered storage (KIP-1005)"),
}


def test_every_api_is_served_up_to_kafka_39s_newest_version_but_those_named():
    newest = {api.name: api.versions.high for api in KAFKA_APIS.values()}
    kafka = {name: kafka_newest_version(name) for name in newest}
    below = {name: (ours, kafka[name]) for name, ours in newest.items() if ours < kafka[name]}
    assert below == {name: (ours, kafka[name]) for name, (ours, _why) in BELOW_KAFKA_39.items()}


def test_api_versions_above_ours_get_the_v0_error_answer():
    assert unsupported_api_versions_answer(7) == bytes.fromhex("00000007" "0023" "00000001" "0012" "0000" "0004")


def test_the_request_header_is_read_with_a_null_client_id():
    header, position = decode_request_header(struct.pack(">hhih", 3, 8, 99, -1) + b"body")
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id, position) == (
        3, 8, 99, None, 10)


def test_a_flexible_fetch_naming_a_topic_null_is_a_decode_error() -> None:
    head = struct.pack(">iiiibii", -1, 500, 1, 1 << 20, 0, 0, -1)  # replica, wait, bytes, isolation, session
    with pytest.raises(KafkaDecodeError, match="invalid string length -1"):
        decode_fetch_request(head + b"\x02\x00", 0, 12)  # one topic, its name a null compact string
