"""Kafka's flexible versions: the header of each version (request v2 with tagged fields, response v1, ApiVersions'
response always v0) as Kafka's ApiKeys says, tagged fields the spec names read and written as Kafka's classes do and
any other skipped, and flexible bytes that do not hold a message refused. Kafka's bytes are in
tests/unit/kafka_group_vectors.py."""

from __future__ import annotations

import pytest

from broker.network import wire
from broker.network.request import Response
from broker.network.wire import KafkaWire
from protocol.apis import groups
from protocol.apis.api import ApiKey
from protocol.apis.groups import HeartbeatRequest, HeartbeatResponse
from protocol.errors import ErrorCode
from protocol.kafka import codec
from protocol.kafka.api import KafkaApi
from protocol.kafka.header import decode_request_header, request_body_start, response_header
from protocol.kafka.primitives import KafkaDecodeError
from protocol.kafka.schema import SPECS, parse_message
from tests.unit.kafka_group_vectors import (
    BARE_API_VERSIONS_RESPONSE_V3,
    HEADER_VERSIONS,
    REQUEST_HEADER_V2_NULL_CLIENT_ID,
    REQUEST_HEADER_V2_TAGGED,
    REQUESTS,
    RESPONSE_HEADER_V0,
    RESPONSE_HEADER_V1,
    TAGGED_API_VERSIONS_RESPONSE_V3,
)

REQUEST_SPECS = {spec.api_key: spec for name, spec in SPECS.items() if name.endswith("Request")}

# Kafka 3.9.1's ApiVersionsResponse at v3 (trimmed by tests/unit/kafka_spec_source.py): four tagged fields
API_VERSIONS_RESPONSE_V3 = parse_message("ApiVersionsResponse", {
    "apiKey": 18, "type": "response", "validVersions": "3-3", "flexibleVersions": "3+", "fields": [
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "ApiKeys", "type": "[]ApiVersion", "versions": "0+", "fields": [
            {"name": "ApiKey", "type": "int16", "versions": "0+"},
            {"name": "MinVersion", "type": "int16", "versions": "0+"},
            {"name": "MaxVersion", "type": "int16", "versions": "0+"}]},
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+"},
        {"name": "SupportedFeatures", "type": "[]SupportedFeatureKey", "versions": "3+", "tag": 0,
         "taggedVersions": "3+", "fields": [
             {"name": "Name", "type": "string", "versions": "3+"},
             {"name": "MinVersion", "type": "int16", "versions": "3+"},
             {"name": "MaxVersion", "type": "int16", "versions": "3+"}]},
        {"name": "FinalizedFeaturesEpoch", "type": "int64", "versions": "3+", "default": "-1", "tag": 1,
         "taggedVersions": "3+"},
        {"name": "FinalizedFeatures", "type": "[]FinalizedFeatureKey", "versions": "3+", "tag": 2,
         "taggedVersions": "3+", "fields": [
             {"name": "Name", "type": "string", "versions": "3+"},
             {"name": "MaxVersionLevel", "type": "int16", "versions": "3+"},
             {"name": "MinVersionLevel", "type": "int16", "versions": "3+"}]},
        {"name": "ZkMigrationReady", "type": "bool", "versions": "3+", "default": "false", "tag": 3,
         "taggedVersions": "3+"}]})
API_KEYS = [{"api_key": 18, "min_version": 0, "max_version": 4}]


def test_header_versions_are_kafkas_for_every_version_of_every_api_spoken():
    assert set(HEADER_VERSIONS) == set(REQUEST_SPECS)
    for api_key, versions in HEADER_VERSIONS.items():
        flexible = REQUEST_SPECS[api_key].flexible
        ours = {version: (2 if version in flexible else 1,
                          len(response_header(api_key, version in flexible, 7)) - len(RESPONSE_HEADER_V0) // 2)
                for version in versions}
        assert ours == versions, ApiKey(api_key).name


def test_response_headers_are_kafkas():
    assert response_header(ApiKey.FIND_COORDINATOR, True, 7).hex() == RESPONSE_HEADER_V1
    assert response_header(ApiKey.FIND_COORDINATOR, False, 7).hex() == RESPONSE_HEADER_V0
    assert response_header(ApiKey.API_VERSIONS, True, 7).hex() == RESPONSE_HEADER_V0  # KIP-511


def test_a_request_header_v2_has_its_tagged_fields_skipped():
    frame = bytes.fromhex(REQUEST_HEADER_V2_TAGGED + REQUESTS[("FindCoordinator", 4)])
    header, header_v1_end = decode_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        ApiKey.FIND_COORDINATOR, 4, 7, "client-1")
    start = request_body_start(frame, header_v1_end, flexible=True)
    assert start == len(REQUEST_HEADER_V2_TAGGED) // 2
    assert groups.FIND_COORDINATOR.kafka.decode(frame, start, 4).keys == ["group-a", "group-b"]


def test_a_request_header_v2_keeps_a_classic_null_client_id():
    frame = bytes.fromhex(REQUEST_HEADER_V2_NULL_CLIENT_ID)
    header, header_v1_end = decode_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        ApiKey.JOIN_GROUP, 6, 9, None)
    assert request_body_start(frame, header_v1_end, flexible=True) == len(frame)
    assert request_body_start(frame, header_v1_end, flexible=False) == header_v1_end


def test_the_kafka_listener_reads_and_answers_a_flexible_version(monkeypatch):
    heartbeat = groups.HEARTBEAT
    served = KafkaApi(heartbeat.api_key, heartbeat.kafka.name, heartbeat.kafka.versions, heartbeat.kafka.flexible,
                      heartbeat.kafka.decode, heartbeat.kafka.encode, heartbeat.error_response)
    monkeypatch.setitem(wire.KAFKA_APIS, heartbeat.api_key, served)
    monkeypatch.setitem(wire.APIS, heartbeat.api_key, heartbeat)
    header_with_a_tag = "000c" "0004" "00000007" "0001" "63" "01" "05" "02" "0102"
    header, request = KafkaWire().decode(bytes.fromhex(header_with_a_tag + REQUESTS[("Heartbeat", 4)]))
    assert request == HeartbeatRequest(group_id="group-a", generation_id=3, member_id="m-1", group_instance_id="i-1")
    answer = b"".join(KafkaWire().encode(header, request, Response(HeartbeatResponse(error_code=ErrorCode.NONE))))
    assert answer.hex() == "00000007" "00" "00000000" "0000" "00"  # header v1, throttle, error, no tagged fields


def test_tagged_fields_the_spec_names_are_written_and_read_as_kafka_does():
    value = {"error_code": 0, "api_keys": API_KEYS, "throttle_time_ms": 0,
             "supported_features": [{"name": "f", "min_version": 1, "max_version": 2}],
             "finalized_features_epoch": 5, "finalized_features": [], "zk_migration_ready": True}
    out = bytearray()
    codec.message_encoder(API_VERSIONS_RESPONSE_V3, 3)(value, out)
    assert out.hex() == TAGGED_API_VERSIONS_RESPONSE_V3
    assert codec.message_decoder(API_VERSIONS_RESPONSE_V3, 3)(bytes(out)) == value


def test_tagged_fields_at_their_defaults_are_not_written():
    bare = {"error_code": 0, "api_keys": API_KEYS, "throttle_time_ms": 0}
    out = bytearray()
    codec.message_encoder(API_VERSIONS_RESPONSE_V3, 3)(bare, out)
    assert out.hex() == BARE_API_VERSIONS_RESPONSE_V3
    assert codec.message_decoder(API_VERSIONS_RESPONSE_V3, 3)(bytes(out)) == {
        **bare, "supported_features": [], "finalized_features_epoch": -1, "finalized_features": [],
        "zk_migration_ready": False}


def test_unknown_tagged_fields_are_skipped_in_every_struct():
    plain = bytes.fromhex(REQUESTS[("JoinGroup", 6)])
    expected = codec.decode("JoinGroupRequest", 6, plain)
    # JoinGroup v6 ends with its second protocol's tagged fields (00) and the request's (00); give both a field
    tagged = plain[:-2] + bytes.fromhex("01" "07" "03" "aabbcc") + bytes.fromhex("02" "00" "00" "09" "01" "ff")
    assert codec.decode("JoinGroupRequest", 6, tagged) == expected


@pytest.mark.parametrize("body", [
    "",
    "ff",  # a varint that ends early
    "ffffffffff01",  # a varint longer than five bytes
    "0967726f75702d61",  # a compact string longer than the bytes left
    "00",  # null where a group id is required
    "0867726f75702d61" "00000003" "046d2d31" "04692d31" "05",  # five tagged fields, none there
    "0867726f75702d61" "00000003" "046d2d31" "04692d31" "01" "00" "7f",  # a tagged field longer than the bytes left
])
def test_flexible_bytes_that_hold_no_message_are_refused(body: str):
    with pytest.raises(KafkaDecodeError):
        codec.decode("HeartbeatRequest", 4, bytes.fromhex(body))
