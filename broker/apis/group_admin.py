"""The groups this broker's coordinator holds, as the admin tools see them: DescribeGroups, ListGroups and
DeleteGroups."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Protocol

from broker.apis.handler import Handled
from broker.coordinator.group.results import GroupDescription, ListGroupsResult
from broker.network import Request, Response
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
from protocol.apis.metadata import AUTHORIZED_OPERATIONS_OMITTED
from protocol.errors import ErrorCode

#: What a group allows without an authorizer: every operation Kafka supports on a group (READ 3, DELETE 6,
#: DESCRIBE 8), as Kafka's bit field of AclOperation codes.
GROUP_OPERATIONS = 1 << 3 | 1 << 6 | 1 << 8


class GroupAdmin(Protocol):
    """The group coordinator's part in describing, listing and deleting groups."""

    def describe(self, group_ids: Iterable[str]) -> list[GroupDescription]: ...

    def list_groups(self, states: Collection[str], types: Collection[str]) -> ListGroupsResult: ...

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode]: ...


async def handle_describe_groups(coordinator: GroupAdmin, body: DescribeGroupsRequest, _request: Request) -> Handled:
    """Each group as its coordinator holds it; the operations allowed on it only when asked for (all of them:
    minikafka has no authorizer)."""
    operations = GROUP_OPERATIONS if body.include_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED
    return Response(DescribeGroupsResponse(groups=[
        DescribedGroup(group_id=g.group_id, error_code=g.error, state=g.state, protocol_type=g.protocol_type,
                       protocol=g.protocol, authorized_operations=operations, members=[
                           DescribedGroupMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                                client_id=m.client_id, client_host=m.client_host,
                                                metadata=m.metadata, assignment=m.assignment)
                           for m in g.members])
        for g in coordinator.describe(body.groups)]))


async def handle_list_groups(coordinator: GroupAdmin, body: ListGroupsRequest, _request: Request) -> Handled:
    result = coordinator.list_groups(body.states, body.types)
    return Response(ListGroupsResponse(error_code=result.error, groups=[
        ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type, state=g.state, group_type=g.group_type)
        for g in result.groups]))


async def handle_delete_groups(coordinator: GroupAdmin, body: DeleteGroupsRequest, _request: Request) -> Handled:
    errors = coordinator.delete_groups(body.groups)
    return Response(DeleteGroupsResponse(results=[DeletedGroup(group_id=group_id, error_code=error)
                                                  for group_id, error in errors.items()]))
