"""The group apis on Kafka's wire, at every version their codecs speak, against the bytes Kafka 3.9.1's own classes
write (tests/unit/kafka_group_vectors.py): a request Kafka writes reads as the declaration below, the declared
response is written as Kafka writes it, and each api's error response is Kafka's getErrorResponse byte for byte.
The declarations also cross minikafka's own (msgpack) wire unchanged."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from protocol.apis import group_admin, group_offsets, groups
from protocol.apis.api import Api
from protocol.apis.group_admin import (
    DeletedGroup,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
)
from protocol.apis.group_offsets import (
    FetchedOffset,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchGroup,
    OffsetFetchGroupResult,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionResult,
)
from protocol.apis.groups import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeavingGroupMember,
    LeftGroupMember,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from protocol.apis.shapes import Topic
from protocol.codec import declare, decode_body, encode_body
from protocol.errors import ErrorCode
from protocol.kafka import codec
from tests.unit.kafka_group_vectors import ERROR_MESSAGE, ERRORS, REQUESTS, RESPONSES

GROUP_APIS: dict[str, Api] = {api.name: api for api in (
    groups.FIND_COORDINATOR, groups.JOIN_GROUP, groups.SYNC_GROUP, groups.HEARTBEAT, groups.LEAVE_GROUP,
    group_admin.LIST_GROUPS, group_admin.DESCRIBE_GROUPS, group_admin.DELETE_GROUPS,
    group_offsets.OFFSET_COMMIT, group_offsets.OFFSET_FETCH, group_offsets.OFFSET_DELETE)}


def _find_coordinator(version: int) -> FindCoordinatorRequest:
    if version == 0:
        return FindCoordinatorRequest(keys=["group-a"])
    if version < 4:
        return FindCoordinatorRequest(key_type=groups.CoordinatorType.TRANSACTION, keys=["txn-1"])
    return FindCoordinatorRequest(key_type=groups.CoordinatorType.GROUP, keys=["group-a", "group-b"])


def _found_coordinators(version: int) -> FindCoordinatorResponse:
    if version < 4:
        return FindCoordinatorResponse(coordinators=[
            Coordinator(key=_find_coordinator(version).keys[0], node_id=2, host="broker-2", port=9093)])
    return FindCoordinatorResponse(coordinators=[
        Coordinator(key="group-a", node_id=2, host="broker-2", port=9093),
        Coordinator(key="group-b", error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, error_message=ERROR_MESSAGE)])


def _join_group(version: int) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id="group-a", session_timeout_ms=10_000, rebalance_timeout_ms=45_000 if version >= 1 else 10_000,
        member_id="m-1", group_instance_id="i-1" if version >= 5 else None, protocol_type="consumer",
        protocols=[JoinGroupProtocol(name="range", metadata=b"\x01\x02"),
                   JoinGroupProtocol(name="roundrobin", metadata=b"\x03")],
        reason="joining" if version >= 8 else None, api_version=version)


def _joined(_version: int) -> JoinGroupResponse:
    return JoinGroupResponse(error_code=ErrorCode.NONE, member_id="m-1", generation_id=3, protocol_type="consumer",
                             protocol_name="range", leader="m-1", skip_assignment=True, members=[
                                 JoinGroupMember(member_id="m-1", group_instance_id="i-1", metadata=b"\x01\x02"),
                                 JoinGroupMember(member_id="m-2", metadata=b"\x03")])


def _sync_group(version: int) -> SyncGroupRequest:
    return SyncGroupRequest(
        group_id="group-a", generation_id=3, member_id="m-1", group_instance_id="i-1" if version >= 3 else None,
        protocol_type="consumer" if version >= 5 else None, protocol_name="range" if version >= 5 else None,
        assignments=[SyncGroupAssignment(member_id="m-1", assignment=b"\x0a"),
                     SyncGroupAssignment(member_id="m-2", assignment=b"\x0b\x0c")])


def _heartbeat(version: int) -> HeartbeatRequest:
    return HeartbeatRequest(group_id="group-a", generation_id=3, member_id="m-1",
                            group_instance_id="i-1" if version >= 3 else None)


def _leave_group(version: int) -> LeaveGroupRequest:
    if version < 3:
        return LeaveGroupRequest(group_id="group-a", members=[LeavingGroupMember(member_id="m-1")])
    return LeaveGroupRequest(group_id="group-a", members=[
        LeavingGroupMember(member_id="m-1", reason="bye" if version >= 5 else None),
        LeavingGroupMember(member_id="", group_instance_id="i-2")])


def _left(version: int) -> LeaveGroupResponse:
    if version < 3:  # before v3 the member's error is the request's
        return LeaveGroupResponse(error_code=ErrorCode.NONE, members=[
            LeftGroupMember(member_id="m-1", error_code=ErrorCode.UNKNOWN_MEMBER_ID)])
    return LeaveGroupResponse(error_code=ErrorCode.NONE, members=[
        LeftGroupMember(member_id="m-1", error_code=ErrorCode.NONE),
        LeftGroupMember(member_id="", group_instance_id="i-2", error_code=ErrorCode.UNKNOWN_MEMBER_ID)])


def _list_groups(version: int) -> ListGroupsRequest:
    return ListGroupsRequest(states=["Stable", "Empty"] if version >= 4 else [],
                             types=["classic"] if version >= 5 else [])


def _listed(_version: int) -> ListGroupsResponse:
    return ListGroupsResponse(error_code=ErrorCode.NONE, groups=[
        ListedGroup(group_id="group-a", protocol_type="consumer", state="Stable", group_type="classic"),
        ListedGroup(group_id="group-b", protocol_type="", state="Empty", group_type="classic")])


def _described(_version: int) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(groups=[
        DescribedGroup(group_id="group-a", error_code=ErrorCode.NONE, state="Stable", protocol_type="consumer",
                       protocol="range", authorized_operations=328, members=[
                           DescribedGroupMember(member_id="m-1", group_instance_id="i-1", client_id="c-1",
                                                client_host="/10.0.0.1", metadata=b"\x01\x02", assignment=b"\x0a")]),
        DescribedGroup(group_id="group-b", error_code=ErrorCode.NOT_COORDINATOR)])


def _offset_commit(version: int) -> OffsetCommitRequest:
    epoch = 5 if version >= 6 else -1
    timestamp = 1_700_000_000_000 if version == 1 else -1
    return OffsetCommitRequest(
        group_id="group-a", generation_id=3, member_id="m-1", group_instance_id="i-1" if version >= 7 else None,
        retention_time_ms=86_400_000 if 2 <= version <= 4 else -1, topics=[
            Topic(name="t1", partitions=[
                OffsetCommitPartition(partition=0, offset=42, leader_epoch=epoch, commit_timestamp=timestamp,
                                      metadata="meta"),
                OffsetCommitPartition(partition=1, offset=43, leader_epoch=epoch, commit_timestamp=timestamp,
                                      metadata=None)]),
            Topic(name="t2", partitions=[
                OffsetCommitPartition(partition=3, offset=7, leader_epoch=epoch, commit_timestamp=timestamp)])])


def _committed(_version: int) -> OffsetCommitResponse:
    return OffsetCommitResponse(topics=[
        Topic(name="t1", partitions=[PartitionResult(partition=0, error_code=ErrorCode.NONE),
                                     PartitionResult(partition=1, error_code=ErrorCode.OFFSET_METADATA_TOO_LARGE)]),
        Topic(name="t2", partitions=[PartitionResult(partition=3, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)])])


def _offset_fetch(version: int) -> OffsetFetchRequest:
    if version < 8:
        return OffsetFetchRequest(groups=[OffsetFetchGroup(group_id="group-a", topics=[Topic(name="t1",
                                                                                             partitions=[1, 0])])],
                                  require_stable=version >= 7)
    return OffsetFetchRequest(groups=[OffsetFetchGroup(group_id="group-b"), OffsetFetchGroup(
        group_id="group-a", topics=[Topic(name="t1", partitions=[0, 1])])], require_stable=True)


def _fetched(version: int) -> OffsetFetchResponse:
    fetched = OffsetFetchGroupResult(group_id="group-a", topics=[Topic(name="t1", partitions=[
        FetchedOffset(partition=0, offset=42, leader_epoch=5, metadata="meta"), FetchedOffset(partition=1)])])
    if version < 8:
        return OffsetFetchResponse(groups=[fetched])
    return OffsetFetchResponse(groups=[fetched, OffsetFetchGroupResult(group_id="group-b",
                                                                       error_code=ErrorCode.NOT_COORDINATOR)])


EXPECTED_REQUESTS: dict[str, Callable[[int], object]] = {
    "FindCoordinator": _find_coordinator,
    "JoinGroup": _join_group,
    "SyncGroup": _sync_group,
    "Heartbeat": _heartbeat,
    "LeaveGroup": _leave_group,
    "ListGroups": _list_groups,
    "DescribeGroups": lambda version: DescribeGroupsRequest(groups=["group-a", "group-b"],
                                                            include_authorized_operations=version >= 3),
    "DeleteGroups": lambda _version: DeleteGroupsRequest(groups=["group-a", "group-b"]),
    "OffsetCommit": _offset_commit,
    "OffsetFetch": _offset_fetch,
    "OffsetDelete": lambda _version: OffsetDeleteRequest(group_id="group-a", topics=[Topic(name="t1",
                                                                                           partitions=[0, 1])]),
}
RESPONSES_DECLARED: dict[str, Callable[[int], object]] = {
    "FindCoordinator": _found_coordinators,
    "JoinGroup": _joined,
    "SyncGroup": lambda _version: SyncGroupResponse(error_code=ErrorCode.NONE, protocol_type="consumer",
                                                    protocol_name="range", assignment=b"\x0a"),
    "Heartbeat": lambda _version: HeartbeatResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS),
    "LeaveGroup": _left,
    "ListGroups": _listed,
    "DescribeGroups": _described,
    "DeleteGroups": lambda _version: DeleteGroupsResponse(results=[
        DeletedGroup(group_id="group-a", error_code=ErrorCode.NONE),
        DeletedGroup(group_id="group-b", error_code=ErrorCode.NON_EMPTY_GROUP)]),
    "OffsetCommit": _committed,
    "OffsetFetch": _fetched,
    "OffsetDelete": lambda _version: OffsetDeleteResponse(error_code=ErrorCode.NONE, topics=[Topic(
        name="t1", partitions=[PartitionResult(partition=0, error_code=ErrorCode.NONE),
                               PartitionResult(partition=1, error_code=ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)])]),
}
CASES = sorted(REQUESTS)


def _request(name: str, version: int) -> object:
    return GROUP_APIS[name].kafka.decode(bytes.fromhex(REQUESTS[(name, version)]), 0, version)


def _written(name: str, version: int, response: object) -> str:
    api = GROUP_APIS[name]
    return b"".join(api.kafka.encode(response, version, _request(name, version))).hex()


def test_every_version_spoken_has_kafkas_bytes():
    assert sorted(REQUESTS) == sorted(RESPONSES) == sorted(ERRORS) == sorted(
        (name, version) for name, api in GROUP_APIS.items()
        for version in range(api.kafka.versions.low, api.kafka.versions.high + 1))


@pytest.mark.parametrize(("name", "version"), CASES)
def test_a_request_kafka_writes_reads_as_declared(name: str, version: int):
    assert _request(name, version) == EXPECTED_REQUESTS[name](version)
    message, data = f"{name}Request", bytes.fromhex(REQUESTS[(name, version)])
    assert codec.encode(message, version, codec.decode(message, version, data)) == data


@pytest.mark.parametrize(("name", "version"), CASES)
def test_a_response_is_written_as_kafka_writes_it(name: str, version: int):
    assert _written(name, version, RESPONSES_DECLARED[name](version)) == RESPONSES[(name, version)]


@pytest.mark.parametrize(("name", "version"), CASES)
def test_the_error_response_is_kafkas(name: str, version: int):
    api = GROUP_APIS[name]
    error = api.error_response(_request(name, version), ErrorCode.COORDINATOR_NOT_AVAILABLE, ERROR_MESSAGE)
    assert _written(name, version, error) == ERRORS[(name, version)]


def test_join_group_before_v7_has_an_empty_protocol_name_and_from_v7_a_null_one():
    no_protocol = JoinGroupResponse(error_code=ErrorCode.MEMBER_ID_REQUIRED, member_id="m-9", protocol_name="")
    for version in (6, 7):
        decoded = codec.decode("JoinGroupResponse", version, bytes.fromhex(_written("JoinGroup", version,
                                                                                    no_protocol)))
        assert decoded["protocol_name"] == ("" if version < 7 else None)
        assert decoded["member_id"] == "m-9"


@pytest.mark.parametrize("name", sorted(GROUP_APIS))
def test_the_declarations_cross_minikafkas_own_wire(name: str):
    api = GROUP_APIS[name]
    declare(api.request, f"{api.name} request")
    declare(api.response, f"{api.name} response")
    request = EXPECTED_REQUESTS[name](api.kafka.versions.high)
    response = RESPONSES_DECLARED[name](api.kafka.versions.high)
    error = api.error_response(request, ErrorCode.NOT_COORDINATOR, "moved")
    for cls, body in ((api.request, request), (api.response, response), (api.response, error)):
        assert decode_body(cls, encode_body(body)) == body
