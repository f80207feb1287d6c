"""FindCoordinator, and being a member of a classic group: JoinGroup, SyncGroup, Heartbeat and LeaveGroup, each
handed to the group coordinator (broker/coordinator/group_shell.py) and answered with its result; a JoinGroup or
SyncGroup may be answered later, when its group's rebalance gets there."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Protocol

from broker.apis.handler import Handled, respond
from broker.coordinator.group.requests import HeartbeatRequest as Heartbeat
from broker.coordinator.group.requests import JoinRequest, LeavingMember, SyncRequest
from broker.coordinator.group.results import JoinResult, LeaveResult, SyncResult
from broker.coordinator.offsets_topic import NOT_AVAILABLE, CoordinatorNode
from broker.network import Request, Response
from protocol.apis.groups import (
    FIRST_SHARE_FIND_COORDINATOR,
    Coordinator,
    CoordinatorType,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeftGroupMember,
    SyncGroupRequest,
    SyncGroupResponse,
    find_coordinator_error,
)
from protocol.errors import ErrorCode


class CoordinatorLocator(Protocol):
    """Where a group's coordinator is (broker/coordinator/offsets_topic.py)."""

    def coordinator(self, group_id: str, listener_name: str) -> CoordinatorNode: ...


class GroupMembership(Protocol):
    """The group coordinator's part in membership."""

    def join(self, request: JoinRequest) -> asyncio.Future[JoinResult]: ...

    def sync(self, request: SyncRequest) -> asyncio.Future[SyncResult]: ...

    def heartbeat(self, request: Heartbeat) -> ErrorCode: ...

    def leave(self, group_id: str, members: Iterable[LeavingMember]) -> LeaveResult: ...


async def handle_find_coordinator(locator: CoordinatorLocator, body: FindCoordinatorRequest,
                                  request: Request) -> Handled:
    """Each group key's coordinator; transaction keys and share groups' (v6+) are COORDINATOR_NOT_AVAILABLE
    (minikafka has neither coordinator) and an unknown key type is INVALID_REQUEST, as Kafka 3.9 answers them."""
    share_too_early = (body.key_type == CoordinatorType.SHARE
                       and request.header.api_version < FIRST_SHARE_FIND_COORDINATOR)
    if body.key_type not in tuple(CoordinatorType) or share_too_early:
        return Response(find_coordinator_error(body, ErrorCode.INVALID_REQUEST,
                                               f"unknown coordinator key type {body.key_type}"))
    coordinators = []
    for key in body.keys:
        found = (locator.coordinator(key, request.listener_name) if body.key_type == CoordinatorType.GROUP
                 else NOT_AVAILABLE)
        coordinators.append(Coordinator(key=key, node_id=found.node_id, host=found.host, port=found.port,
                                        error_code=found.error,
                                        error_message=None if found.error is ErrorCode.NONE else found.error.name))
    return Response(FindCoordinatorResponse(coordinators=coordinators))


def _join_response(result: JoinResult) -> JoinGroupResponse:
    return JoinGroupResponse(
        error_code=result.error, member_id=result.member_id, generation_id=result.generation_id,
        protocol_type=result.protocol_type, protocol_name=result.protocol_name, leader=result.leader_id,
        skip_assignment=result.skip_assignment,
        members=[JoinGroupMember(member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata)
                 for m in result.members])


async def handle_join_group(coordinator: GroupMembership, body: JoinGroupRequest, request: Request) -> Handled:
    """Answered when the group's join completes (the member's client id and address are kept with it)."""
    join = JoinRequest(
        group_id=body.group_id, member_id=body.member_id, group_instance_id=body.group_instance_id,
        protocol_type=body.protocol_type, protocols=tuple((p.name, p.metadata) for p in body.protocols),
        session_timeout_ms=body.session_timeout_ms, rebalance_timeout_ms=body.rebalance_timeout_ms,
        client_id=request.header.client_id or "", client_host=request.client_host, api_version=body.api_version)
    return respond(coordinator.join(join), _join_response)


def _sync_response(result: SyncResult) -> SyncGroupResponse:
    return SyncGroupResponse(error_code=result.error, protocol_type=result.protocol_type,
                             protocol_name=result.protocol_name, assignment=result.assignment)


async def handle_sync_group(coordinator: GroupMembership, body: SyncGroupRequest, _request: Request) -> Handled:
    """Answered once the leader's assignment is written."""
    sync = SyncRequest(group_id=body.group_id, generation_id=body.generation_id, member_id=body.member_id,
                       group_instance_id=body.group_instance_id, protocol_type=body.protocol_type,
                       protocol_name=body.protocol_name,
                       assignments={a.member_id: a.assignment for a in body.assignments})
    return respond(coordinator.sync(sync), _sync_response)


async def handle_heartbeat(coordinator: GroupMembership, body: HeartbeatRequest, _request: Request) -> Handled:
    error = coordinator.heartbeat(Heartbeat(group_id=body.group_id, generation_id=body.generation_id,
                                            member_id=body.member_id, group_instance_id=body.group_instance_id))
    return Response(HeartbeatResponse(error_code=error))


async def handle_leave_group(coordinator: GroupMembership, body: LeaveGroupRequest, _request: Request) -> Handled:
    result = coordinator.leave(body.group_id, [LeavingMember(m.member_id, m.group_instance_id)
                                               for m in body.members])
    return Response(LeaveGroupResponse(error_code=result.error, members=[
        LeftGroupMember(member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=m.error)
        for m in result.members]))
