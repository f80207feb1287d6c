"""SyncGroup, Heartbeat and LeaveGroup, as Kafka's GroupCoordinator (Kafka 3.9), once the group is found.

- Every one of them names a member that must be known (FENCED_INSTANCE_ID for a group.instance.id mapped to another
  member id, UNKNOWN_MEMBER_ID otherwise); SyncGroup and Heartbeat also need the current generation
  (ILLEGAL_GENERATION), and SyncGroup the group's protocol type and name when it gives them
  (INCONSISTENT_GROUP_PROTOCOL).
- SyncGroup while preparing a rebalance: REBALANCE_IN_PROGRESS. During CompletingRebalance each member's sync waits;
  the leader's carries the assignment (members it leaves out get an empty one), which is written to
  __consumer_offsets; once written every waiting member gets its assignment and the group is Stable (if writing
  fails, they get the error and the group rebalances). In a Stable group a sync returns the member's assignment.
- A heartbeat restarts the member's session; while preparing a rebalance it answers REBALANCE_IN_PROGRESS.
- LeaveGroup removes each member named (a static member may be named by its group.instance.id alone), each with its
  own error; a group that loses a member rebalances.
"""

from __future__ import annotations

from collections.abc import Iterable

from broker.coordinator.group.context import Context
from broker.coordinator.group.group import Group
from broker.coordinator.group.rebalance import (
    maybe_prepare_rebalance,
    remove_member_and_update_group,
    remove_pending_member_and_update_group,
    remove_pending_sync_member,
    reset_and_propagate_assignment_error,
    schedule_heartbeat,
    set_and_propagate_assignment,
    store_group,
)
from broker.coordinator.group.requests import UNKNOWN_MEMBER_ID, HeartbeatRequest, LeavingMember, SyncRequest
from broker.coordinator.group.results import LeaveResult, LeftMember, SyncResult
from broker.coordinator.group.states import COMPLETING_REBALANCE, PREPARING_REBALANCE, STABLE
from protocol.errors import ErrorCode


def _sync_error(group: Group, request: SyncRequest) -> ErrorCode | None:
    error = group.member_error(request.member_id, request.group_instance_id)
    if error is not None:
        return error
    if request.generation_id != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    if request.protocol_type is not None and request.protocol_type != group.protocol_type:
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    if request.protocol_name is not None and request.protocol_name != group.protocol_name:
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    return None


def sync_group(ctx: Context, group: Group, request: SyncRequest, reply_to: object) -> None:
    """Handle a SyncGroup for `group`; the answer goes to `reply_to`, now or once the assignment is written."""
    error = _sync_error(group, request)
    if error is None and group.is_in(PREPARING_REBALANCE):
        error = ErrorCode.REBALANCE_IN_PROGRESS
    if error is not None:
        ctx.reply(reply_to, SyncResult(error))
        return
    member = group.get(request.member_id)
    remove_pending_sync_member(ctx, group, member.member_id)
    if group.is_in(STABLE):
        ctx.reply(reply_to, SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment))
        schedule_heartbeat(ctx, group, member)
        return
    if member.sync_waiter is not None:  # Kafka drops the older parked sync; here it is told to rejoin
        ctx.reply(member.sync_waiter, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
    member.sync_waiter = reply_to
    if group.is_leader(member.member_id):
        given = request.assignments or {}
        assignment = {member_id: given.get(member_id, b"") for member_id in group.members}
        generation = group.generation_id

        def stored(store_error: ErrorCode) -> None:
            if not group.is_in(COMPLETING_REBALANCE) or group.generation_id != generation:
                return  # the group moved on while the assignment was written
            if store_error is ErrorCode.NONE:
                set_and_propagate_assignment(ctx, group, assignment)
                group.transition_to(STABLE, ctx.now())
            else:
                reset_and_propagate_assignment_error(ctx, group, store_error)
                maybe_prepare_rebalance(ctx, group)

        store_group(ctx, group, assignment, stored)


def heartbeat(ctx: Context, group: Group, request: HeartbeatRequest) -> ErrorCode:
    """Handle a Heartbeat for `group`."""
    error = group.member_error(request.member_id, request.group_instance_id)
    if error is not None:
        return error
    if request.generation_id != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    schedule_heartbeat(ctx, group, group.get(request.member_id))
    return ErrorCode.REBALANCE_IN_PROGRESS if group.is_in(PREPARING_REBALANCE) else ErrorCode.NONE


def leave_group(ctx: Context, group: Group, leaving: Iterable[LeavingMember]) -> LeaveResult:
    """Handle a (batched) LeaveGroup for `group`."""
    return LeaveResult(ErrorCode.NONE, tuple(LeftMember(m.member_id, m.group_instance_id, _leave(ctx, group, m))
                                             for m in leaving))


def _leave(ctx: Context, group: Group, leaving: LeavingMember) -> ErrorCode:
    if leaving.member_id == UNKNOWN_MEMBER_ID:
        member_id = group.static_member_id(leaving.group_instance_id)
        if member_id is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
    elif group.is_pending_member(leaving.member_id):
        remove_pending_member_and_update_group(ctx, group, leaving.member_id)
        return ErrorCode.NONE
    else:
        member_id = leaving.member_id
        error = group.member_error(member_id, leaving.group_instance_id)
        if error is not None:
            return error
    remove_member_and_update_group(ctx, group, group.get(member_id))
    return ErrorCode.NONE
