"""The groups a coordinator holds, as the admin tools see them: DescribeGroups (15), ListGroups (16) and
DeleteGroups (42), shaped as the group coordinator's answers.

On Kafka's wire: DescribeGroups v0-5 (group.instance.id of members from v4), ListGroups v0-5 (a states filter
from v4, a types filter from v5), DeleteGroups v0-2.
"""

from __future__ import annotations

from dataclasses import field

from protocol.apis.api import Api, ApiKey, error_only
from protocol.apis.metadata import AUTHORIZED_OPERATIONS_OMITTED
from protocol.codec import Int16, Int32, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec

# ------------------------------------------------------------------------------------------------ DescribeGroups


@message
class DescribeGroupsRequest:
    """Describe groups by id; the operations allowed on each are answered only if asked for."""

    groups: list[str]
    include_authorized_operations: bool = False


@message
class DescribedGroupMember:
    """A member: who it is and, in a Stable group, its metadata for the group's protocol and its assignment."""

    member_id: str
    group_instance_id: str | None = None
    client_id: str
    client_host: str
    metadata: bytes = b""
    assignment: bytes = b""


@message
class DescribedGroup:
    """A group: its state (Kafka's name, "Dead" for one the coordinator does not hold), protocol type, protocol
    (in a Stable group) and members, or the error that kept it from being described; `authorized_operations` is
    Kafka's bit field of AclOperation codes."""

    group_id: str
    error_code: Int16
    state: str = ""
    protocol_type: str = ""
    protocol: str = ""
    members: list[DescribedGroupMember] = field(default_factory=list)
    authorized_operations: Int32 = AUTHORIZED_OPERATIONS_OMITTED


@message
class DescribeGroupsResponse:
    """A description of each group asked for."""

    groups: list[DescribedGroup]


def describe_groups_error(request: DescribeGroupsRequest, code: ErrorCode, _message: str | None
                          ) -> DescribeGroupsResponse:
    """The answer to a DescribeGroups that failed as a whole: the error for every group."""
    return DescribeGroupsResponse(groups=[DescribedGroup(group_id=group_id, error_code=code)
                                          for group_id in request.groups])


def _describe_groups_response(body: DescribeGroupsResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "groups": [{
        "error_code": g.error_code, "group_id": g.group_id, "group_state": g.state, "protocol_type": g.protocol_type,
        "protocol_data": g.protocol, "authorized_operations": g.authorized_operations,
        "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                     "client_host": m.client_host, "member_metadata": m.metadata,
                     "member_assignment": m.assignment} for m in g.members],
    } for g in body.groups]}


DESCRIBE_GROUPS = Api(
    ApiKey.DESCRIBE_GROUPS, "DescribeGroups", DescribeGroupsRequest, DescribeGroupsResponse, describe_groups_error,
    kafka=spec_codec("DescribeGroups",
                     lambda message, _version: DescribeGroupsRequest(
                         groups=message["groups"],
                         include_authorized_operations=message["include_authorized_operations"]),
                     _describe_groups_response))


# ------------------------------------------------------------------------------------------------ ListGroups


@message
class ListGroupsRequest:
    """List the groups this coordinator holds, in one of `states` (Kafka's state names, any case) and of one of
    `types` ("classic", "consumer"); an empty filter keeps every group."""

    states: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)


@message
class ListedGroup:
    """A group: its id, protocol type, state and type."""

    group_id: str
    protocol_type: str
    state: str = ""
    group_type: str = ""


@message
class ListGroupsResponse:
    """The groups, or the error that kept them from being listed."""

    error_code: Int16
    groups: list[ListedGroup] = field(default_factory=list)



LIST_GROUPS = Api(
    ApiKey.LIST_GROUPS, "ListGroups", ListGroupsRequest, ListGroupsResponse, error_only(ListGroupsResponse),
    kafka=spec_codec("ListGroups",
                     lambda message, _version: ListGroupsRequest(states=message["states_filter"],
                                                                 types=message["types_filter"]),
                     lambda body, _version: {"throttle_time_ms": 0, "error_code": body.error_code, "groups": [
                         {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state,
                          "group_type": g.group_type} for g in body.groups]}))


# ------------------------------------------------------------------------------------------------ DeleteGroups


@message
class DeleteGroupsRequest:
    """Delete empty groups and their offsets."""

    groups: list[str]


@message
class DeletedGroup:
    """The outcome for one group."""

    group_id: str
    error_code: Int16


@message
class DeleteGroupsResponse:
    """An outcome for each group."""

    results: list[DeletedGroup]


def delete_groups_error(request: DeleteGroupsRequest, code: ErrorCode, _message: str | None) -> DeleteGroupsResponse:
    """The answer to a DeleteGroups that failed as a whole: the error for every group."""
    return DeleteGroupsResponse(results=[DeletedGroup(group_id=group_id, error_code=code)
                                         for group_id in request.groups])


DELETE_GROUPS = Api(
    ApiKey.DELETE_GROUPS, "DeleteGroups", DeleteGroupsRequest, DeleteGroupsResponse, delete_groups_error,
    kafka=spec_codec("DeleteGroups",
                     lambda message, _version: DeleteGroupsRequest(groups=message["groups_names"]),
                     lambda body, _version: {"throttle_time_ms": 0, "results": [
                         {"group_id": r.group_id, "error_code": r.error_code} for r in body.results]}))
