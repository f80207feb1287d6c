"""JoinGroup, as Kafka's GroupCoordinator.handleJoinGroup (Kafka 3.9), once the group exists.

- group.max.size: a new member is refused GROUP_MAX_SIZE_REACHED when the group is full (while preparing a
  rebalance, full counts the members that have rejoined), and a known member that has not rejoined is dropped.
- A member without an id: a protocol type or protocols the group cannot take is INCONSISTENT_GROUP_PROTOCOL; else it
  gets an id (its group.instance.id or client id, "-", a UUID). A dynamic member of JoinGroup v4+ is only told its
  id (MEMBER_ID_REQUIRED) and becomes a pending member until it joins with it; older ones join at once. A static
  member whose group.instance.id is known takes the place of the old member id (see below); a new static member
  joins.
- A member with an id: a pending member joins; otherwise the member must be known (FENCED_INSTANCE_ID,
  UNKNOWN_MEMBER_ID). While preparing a rebalance it joins it; during CompletingRebalance or Stable, a follower
  with unchanged protocols gets the current generation back, while changed protocols (or the leader joining a Stable
  group) start a rebalance.
- A joining member starts a rebalance of a group that is not already preparing one.
- A known static member rejoining without its id takes a new id (the old one is fenced). In a Stable group whose
  chosen protocol would not change, no rebalance: the group is written with the new id and the member gets the
  current generation (from v9, a rejoining leader is told it leads but to skip the assignment; before, it is given
  the old leader id so that it does not assign); if the write fails the old id is restored. Otherwise it rebalances.
"""

from __future__ import annotations

from broker.coordinator.group.config import NEW_MEMBER_JOIN_TIMEOUT_MS
from broker.coordinator.group.context import Context
from broker.coordinator.group.effects import heartbeat_timer
from broker.coordinator.group.group import Group
from broker.coordinator.group.member import Member
from broker.coordinator.group.rebalance import (
    answer_join,
    answer_sync,
    cancel_heartbeat,
    current_generation,
    maybe_prepare_rebalance,
    prepare_rebalance,
    schedule_heartbeat,
    store_group,
    try_complete_join,
)
from broker.coordinator.group.requests import UNKNOWN_MEMBER_ID, JoinRequest
from broker.coordinator.group.results import JoinResult, SyncResult
from broker.coordinator.group.states import COMPLETING_REBALANCE, PREPARING_REBALANCE, STABLE
from protocol.errors import ErrorCode


def join_group(ctx: Context, group: Group, request: JoinRequest, reply_to: object) -> None:
    """Handle a JoinGroup for `group`; the answer goes to `reply_to`, now or when the join completes."""
    if not _accepts_joining_member(ctx, group, request.member_id):
        group.remove(request.member_id)
        cancel_heartbeat(ctx, group, request.member_id)
        ctx.reply(reply_to, JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID))
    elif request.member_id == UNKNOWN_MEMBER_ID:
        _new_member_join(ctx, group, request, reply_to)
    else:
        _current_member_join(ctx, group, request, reply_to)
    try_complete_join(ctx, group)


def _accepts_joining_member(ctx: Context, group: Group, member_id: str) -> bool:
    max_size = ctx.config.max_size
    if group.is_in(PREPARING_REBALANCE):
        return (group.has(member_id) and group.get(member_id).awaiting_join) or group.num_awaiting_join < max_size
    if group.is_in(COMPLETING_REBALANCE, STABLE):
        return group.has(member_id) or group.size < max_size
    return True


def _new_member_join(ctx: Context, group: Group, request: JoinRequest, reply_to: object) -> None:
    if not group.supports_protocols(request.protocol_type, tuple(name for name, _ in request.protocols)):
        ctx.reply(reply_to, JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID))
        return
    new_member_id = f"{request.group_instance_id or request.client_id}-{ctx.new_uuid()}"
    instance_id = request.group_instance_id
    if instance_id is not None:
        old_member_id = group.static_member_id(instance_id)
        if old_member_id is not None:
            _static_member_rejoin(ctx, group, request, instance_id, old_member_id, new_member_id, reply_to)
        else:
            _add_member_and_rebalance(ctx, group, request, new_member_id, reply_to)
    elif request.requires_known_member_id:
        group.add_pending_member(new_member_id)
        ctx.arm(heartbeat_timer(group.group_id, new_member_id), request.session_timeout_ms)
        ctx.reply(reply_to, JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_member_id))
    else:
        _add_member_and_rebalance(ctx, group, request, new_member_id, reply_to)


def _current_member_join(ctx: Context, group: Group, request: JoinRequest, reply_to: object) -> None:
    member_id = request.member_id
    if not group.supports_protocols(request.protocol_type, tuple(name for name, _ in request.protocols)):
        ctx.reply(reply_to, JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
        return
    if group.is_pending_member(member_id):
        if request.group_instance_id is not None:  # a pending member is always dynamic (Kafka: an internal error)
            ctx.reply(reply_to, JoinResult(ErrorCode.UNKNOWN_SERVER_ERROR, member_id))
        else:
            _add_member_and_rebalance(ctx, group, request, member_id, reply_to)
        return
    error = group.member_error(member_id, request.group_instance_id)
    if error is not None:
        ctx.reply(reply_to, JoinResult(error, member_id))
        return
    member = group.get(member_id)
    unchanged = member.matches(request.protocols)
    if group.is_in(PREPARING_REBALANCE) or not unchanged or (group.is_in(STABLE) and group.is_leader(member_id)):
        _update_member_and_rebalance(ctx, group, member, request, reply_to)
    else:  # a member that missed its JoinGroup answer: the current generation again
        leader = group.is_in(COMPLETING_REBALANCE) and group.is_leader(member_id)
        ctx.reply(reply_to, current_generation(group, member, members=leader))


def _add_member_and_rebalance(ctx: Context, group: Group, request: JoinRequest, member_id: str,
                              reply_to: object) -> None:
    member = Member(member_id, request.group_instance_id, request.client_id, request.client_host,
                    request.rebalance_timeout_ms, request.session_timeout_ms, request.protocol_type,
                    tuple(request.protocols), is_new=True)
    if group.is_in(PREPARING_REBALANCE) and group.generation_id == 0:
        group.new_member_added = True
    group.add(member, reply_to)
    # a new member cannot heartbeat while its join is parked: the join itself expires
    schedule_heartbeat(ctx, group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
    maybe_prepare_rebalance(ctx, group)


def _update_member_and_rebalance(ctx: Context, group: Group, member: Member, request: JoinRequest,
                                 reply_to: object) -> None:
    superseded = group.update_member(member, request.protocols, request.rebalance_timeout_ms,
                                     request.session_timeout_ms, reply_to)
    if superseded is not None:  # Kafka drops the older parked join; here it is told to rejoin
        ctx.reply(superseded, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
    maybe_prepare_rebalance(ctx, group)


def _static_member_rejoin(ctx: Context, group: Group, request: JoinRequest, instance_id: str, old_member_id: str,
                          new_member_id: str, reply_to: object) -> None:
    current_leader = group.leader_id
    member = group.get(old_member_id)
    answer_join(ctx, member, JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_member_id))
    answer_sync(ctx, member, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
    group.replace_static_member(instance_id, old_member_id, new_member_id)
    cancel_heartbeat(ctx, group, old_member_id)
    schedule_heartbeat(ctx, group, member)
    previous = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
    group.update_member(member, request.protocols, request.rebalance_timeout_ms, request.session_timeout_ms,
                        reply_to)
    if group.is_in(STABLE):
        if group.protocol_name != group.select_protocol():
            maybe_prepare_rebalance(ctx, group)
            return
        assignment = {m.member_id: m.assignment for m in group.members.values()}

        def stored(error: ErrorCode) -> None:
            if member.join_waiter is not reply_to or not group.is_in(STABLE):
                return  # a rebalance started meanwhile: it answers the join
            if error is not ErrorCode.NONE:
                group.update_member(member, *previous, join_waiter=None)
                group.replace_static_member(instance_id, new_member_id, old_member_id)
                cancel_heartbeat(ctx, group, new_member_id)
                schedule_heartbeat(ctx, group, member)
                ctx.reply(reply_to, JoinResult(error, UNKNOWN_MEMBER_ID, group.generation_id, group.protocol_type,
                                               group.protocol_name, current_leader or ""))
            elif request.supports_skipping_assignment:
                leads = group.is_leader(new_member_id)
                answer_join(ctx, member, current_generation(group, member, members=leads, skip_assignment=leads))
            else:
                answer_join(ctx, member, current_generation(group, member, members=False, leader_id=current_leader))

        store_group(ctx, group, assignment, stored)
    elif group.is_in(COMPLETING_REBALANCE):
        # the leader may be assigning the old member id: rebalance so that the new one gets an assignment
        prepare_rebalance(ctx, group)
