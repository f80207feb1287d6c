"""Finding a group's coordinator and being a member of a classic group: FindCoordinator (10), JoinGroup (11),
Heartbeat (12), LeaveGroup (13) and SyncGroup (14), shaped as the group coordinator's requests and answers.

On Kafka's wire: FindCoordinator v0-6 (one key before v4, a batch of keys from v4, KIP-699; share groups' key type
from v6, KIP-932), JoinGroup v0-9,
SyncGroup v0-5, Heartbeat v0-4, LeaveGroup v0-5 (one member before v3, a batch from v3). A version's fields that
an older one lacks take the defaults below; the rules that depend on JoinGroup's version travel with the request.
"""

from __future__ import annotations

from dataclasses import field
from enum import IntEnum, unique

from protocol.apis.api import Api, ApiKey, error_only
from protocol.codec import Int8, Int16, Int32, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec

NO_MEMBER_ID = ""  # Kafka's UNKNOWN_MEMBER_ID: a member joining for the first time
NO_GENERATION = -1
#: The newest JoinGroup version, whose rules minikafka's own clients follow.
LATEST_JOIN_GROUP_VERSION = 9
_FIRST_BATCHED_FIND_COORDINATOR = 4
_FIRST_NULLABLE_PROTOCOL_NAME = 7  # JoinGroup
_FIRST_BATCHED_LEAVE_GROUP = 3


# ------------------------------------------------------------------------------------------------ FindCoordinator


@unique
class CoordinatorType(IntEnum):
    """What a FindCoordinator key names (Kafka's FindCoordinatorRequest.CoordinatorType)."""

    GROUP = 0
    TRANSACTION = 1
    SHARE = 2


#: The first FindCoordinator version that may ask for a share group's coordinator.
FIRST_SHARE_FIND_COORDINATOR = 6


@message
class FindCoordinatorRequest:
    """Which broker coordinates each key: group ids, or transactional ids."""

    key_type: Int8 = CoordinatorType.GROUP
    keys: list[str]


@message
class Coordinator:
    """The coordinator of one key, or the error that kept it from being found."""

    key: str
    node_id: Int32 = -1
    host: str = ""
    port: Int32 = -1
    error_code: Int16 = ErrorCode.NONE
    error_message: str | None = None


@message
class FindCoordinatorResponse:
    """A coordinator for each key asked for."""

    coordinators: list[Coordinator]


def find_coordinator_error(request: FindCoordinatorRequest, code: ErrorCode, message: str | None
                           ) -> FindCoordinatorResponse:
    """The answer to a FindCoordinator that failed as a whole: the error for every key, no coordinator."""
    return FindCoordinatorResponse(coordinators=[
        Coordinator(key=key, error_code=code, error_message=message) for key in request.keys])


def _find_coordinator_request(message: Message, version: int) -> FindCoordinatorRequest:
    keys = message["coordinator_keys"] if version >= _FIRST_BATCHED_FIND_COORDINATOR else [message["key"]]
    return FindCoordinatorRequest(key_type=message["key_type"], keys=keys)


def _find_coordinator_response(body: FindCoordinatorResponse, version: int) -> Message:
    coordinators = [{"key": c.key, "node_id": c.node_id, "host": c.host, "port": c.port,
                     "error_code": c.error_code, "error_message": c.error_message} for c in body.coordinators]
    if version >= _FIRST_BATCHED_FIND_COORDINATOR:
        return {"throttle_time_ms": 0, "coordinators": coordinators}
    [coordinator] = coordinators
    return {"throttle_time_ms": 0, **coordinator}


FIND_COORDINATOR = Api(ApiKey.FIND_COORDINATOR, "FindCoordinator", FindCoordinatorRequest, FindCoordinatorResponse,
                       find_coordinator_error,
                       kafka=spec_codec("FindCoordinator", _find_coordinator_request, _find_coordinator_response))


# ------------------------------------------------------------------------------------------------ JoinGroup


@message
class JoinGroupProtocol:
    """A protocol the member offers (for consumers, an assignor) with its metadata (the subscription)."""

    name: str
    metadata: bytes


@message
class JoinGroupRequest:
    """Join a group (a first join has no member id); protocols in the member's order of preference. `api_version`
    is the JoinGroup version whose rules apply: from v4 a member without an id is given one and joins again
    (KIP-394), from v9 a static leader rejoining a Stable group skips its assignment; a Kafka client's is its
    request's version."""

    group_id: str
    session_timeout_ms: Int32
    rebalance_timeout_ms: Int32
    member_id: str = NO_MEMBER_ID
    group_instance_id: str | None = None
    protocol_type: str
    protocols: list[JoinGroupProtocol]
    reason: str | None = None
    api_version: Int16 = LATEST_JOIN_GROUP_VERSION


@message
class JoinGroupMember:
    """A member as the leader's answer lists it: its metadata for the chosen protocol."""

    member_id: str
    group_instance_id: str | None = None
    metadata: bytes


@message
class JoinGroupResponse:
    """The generation joined, its protocol and leader; the members with their metadata for the leader only."""

    error_code: Int16
    member_id: str = NO_MEMBER_ID
    generation_id: Int32 = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = NO_MEMBER_ID
    skip_assignment: bool = False
    members: list[JoinGroupMember] = field(default_factory=list)



def _join_group_request(message: Message, version: int) -> JoinGroupRequest:
    session_timeout = message["session_timeout_ms"]
    return JoinGroupRequest(
        group_id=message["group_id"], session_timeout_ms=session_timeout,
        rebalance_timeout_ms=message["rebalance_timeout_ms"] if version > 0 else session_timeout,
        member_id=message["member_id"], group_instance_id=message["group_instance_id"],
        protocol_type=message["protocol_type"],
        protocols=[JoinGroupProtocol(name=p["name"], metadata=p["metadata"]) for p in message["protocols"]],
        reason=message["reason"], api_version=version)


def _join_group_response(body: JoinGroupResponse, version: int) -> Message:
    # no protocol is "" before v7, null from v7 (as Kafka's JoinGroupResponse makes it)
    protocol_name = body.protocol_name or None
    if version < _FIRST_NULLABLE_PROTOCOL_NAME:
        protocol_name = protocol_name or ""
    return {"throttle_time_ms": 0, "error_code": body.error_code, "generation_id": body.generation_id,
            "protocol_type": body.protocol_type, "protocol_name": protocol_name, "leader": body.leader,
            "skip_assignment": body.skip_assignment, "member_id": body.member_id,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id, "metadata": m.metadata}
                        for m in body.members]}


JOIN_GROUP = Api(ApiKey.JOIN_GROUP, "JoinGroup", JoinGroupRequest, JoinGroupResponse, error_only(JoinGroupResponse),
                 kafka=spec_codec("JoinGroup", _join_group_request, _join_group_response))


# ------------------------------------------------------------------------------------------------ SyncGroup


@message
class SyncGroupAssignment:
    """The leader's assignment for one member."""

    member_id: str
    assignment: bytes


@message
class SyncGroupRequest:
    """Get this generation's assignment; the leader's request carries every member's. Protocol type and name, when
    given (SyncGroup v5+), must be the group's."""

    group_id: str
    generation_id: Int32
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: list[SyncGroupAssignment] = field(default_factory=list)


@message
class SyncGroupResponse:
    """The member's assignment."""

    error_code: Int16
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""



def _sync_group_request(message: Message, _version: int) -> SyncGroupRequest:
    return SyncGroupRequest(
        group_id=message["group_id"], generation_id=message["generation_id"], member_id=message["member_id"],
        group_instance_id=message["group_instance_id"], protocol_type=message["protocol_type"],
        protocol_name=message["protocol_name"],
        assignments=[SyncGroupAssignment(member_id=a["member_id"], assignment=a["assignment"])
                     for a in message["assignments"]])


def _sync_group_response(body: SyncGroupResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "error_code": body.error_code, "protocol_type": body.protocol_type,
            "protocol_name": body.protocol_name, "assignment": body.assignment}


SYNC_GROUP = Api(ApiKey.SYNC_GROUP, "SyncGroup", SyncGroupRequest, SyncGroupResponse, error_only(SyncGroupResponse),
                 kafka=spec_codec("SyncGroup", _sync_group_request, _sync_group_response))


# ------------------------------------------------------------------------------------------------ Heartbeat


@message
class HeartbeatRequest:
    """A member's session is alive."""

    group_id: str
    generation_id: Int32
    member_id: str
    group_instance_id: str | None = None


@message
class HeartbeatResponse:
    """NONE, or why the member must rejoin (REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ...)."""

    error_code: Int16



HEARTBEAT = Api(
    ApiKey.HEARTBEAT, "Heartbeat", HeartbeatRequest, HeartbeatResponse, error_only(HeartbeatResponse),
    kafka=spec_codec("Heartbeat",
                     lambda message, _version: HeartbeatRequest(
                         group_id=message["group_id"], generation_id=message["generation_id"],
                         member_id=message["member_id"], group_instance_id=message["group_instance_id"]),
                     lambda body, _version: {"throttle_time_ms": 0, "error_code": body.error_code}))


# ------------------------------------------------------------------------------------------------ LeaveGroup


@message
class LeavingGroupMember:
    """A member leaving; a static member may be named by its group.instance.id alone (an empty member id)."""

    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@message
class LeaveGroupRequest:
    """One or more members leave a group."""

    group_id: str
    members: list[LeavingGroupMember]


@message
class LeftGroupMember:
    """The outcome for one member leaving."""

    member_id: str
    group_instance_id: str | None = None
    error_code: Int16


@message
class LeaveGroupResponse:
    """An error for the whole request, or one for each member."""

    error_code: Int16
    members: list[LeftGroupMember] = field(default_factory=list)



def _leave_group_request(message: Message, version: int) -> LeaveGroupRequest:
    if version < _FIRST_BATCHED_LEAVE_GROUP:
        members = [LeavingGroupMember(member_id=message["member_id"])]
    else:
        members = [LeavingGroupMember(member_id=m["member_id"], group_instance_id=m["group_instance_id"],
                                      reason=m["reason"]) for m in message["members"]]
    return LeaveGroupRequest(group_id=message["group_id"], members=members)


def _leave_group_response(body: LeaveGroupResponse, version: int) -> Message:
    if version < _FIRST_BATCHED_LEAVE_GROUP:  # one member: its error is the request's (Kafka's LeaveGroupResponse)
        member_errors = (m.error_code for m in body.members if m.error_code != ErrorCode.NONE)
        return {"throttle_time_ms": 0, "error_code": body.error_code or next(member_errors, ErrorCode.NONE)}
    return {"throttle_time_ms": 0, "error_code": body.error_code, "members": [
        {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "error_code": m.error_code}
        for m in body.members]}


LEAVE_GROUP = Api(ApiKey.LEAVE_GROUP, "LeaveGroup", LeaveGroupRequest, LeaveGroupResponse,
                  error_only(LeaveGroupResponse),
                  kafka=spec_codec("LeaveGroup", _leave_group_request, _leave_group_response))
