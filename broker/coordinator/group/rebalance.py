"""The rebalance mechanics the coordinator's rules share, as Kafka's GroupCoordinator does them: preparing a
rebalance, completing the join (the next generation), handing out the leader's assignment, members' sessions, and
removing members.

- A rebalance of an Empty group first waits group.initial.rebalance.delay.ms, and again as long as new members keep
  joining, within the rebalance timeout (Kafka's InitialDelayedJoin); it never completes early.
- Any other rebalance completes as soon as every member (and every member given an id, KIP-394) has joined, or when
  the rebalance timeout (the longest of the members') passes: dynamic members that did not rejoin are removed;
  static ones stay until their session expires. If no member rejoined, the group waits another rebalance timeout.
- When the join completes, every member gets the new generation (the leader also the members and their metadata),
  its session restarts, and the group waits a rebalance timeout for every member's SyncGroup: members that never
  sync are removed and the group rebalances again.
- A member's session is a timer of its session timeout, restarted by each heartbeat, commit or answered sync. When
  it expires the member is removed, unless it is waiting in a join or sync (then it is alive); a new member's
  parked join expires after five minutes (Kafka's NewMemberJoinTimeoutMs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from broker.coordinator.group.context import Context
from broker.coordinator.group.effects import heartbeat_timer, initial_join_timer, join_timer, sync_timer
from broker.coordinator.group.group import Group, InitialJoinDelay
from broker.coordinator.group.member import Member
from broker.coordinator.group.records import group_records, group_store_error
from broker.coordinator.group.requests import UNKNOWN_MEMBER_ID
from broker.coordinator.group.results import JoinResult, SyncResult
from broker.coordinator.group.states import COMPLETING_REBALANCE, EMPTY, PREPARING_REBALANCE, STABLE
from protocol.errors import ErrorCode

# ------------------------------------------------------------------------------------------------ answers


def answer_join(ctx: Context, member: Member, result: JoinResult) -> bool:
    """Answer the member's parked JoinGroup, if one is parked."""
    waiter, member.join_waiter = member.join_waiter, None
    return _answer(ctx, waiter, result)


def answer_sync(ctx: Context, member: Member, result: SyncResult) -> bool:
    """Answer the member's parked SyncGroup, if one is parked."""
    waiter, member.sync_waiter = member.sync_waiter, None
    return _answer(ctx, waiter, result)


def _answer(ctx: Context, waiter: object | None, result: JoinResult | SyncResult) -> bool:
    if waiter is None:
        return False
    ctx.reply(waiter, result)
    return True


def current_generation(group: Group, member: Member, members: bool, skip_assignment: bool = False,
                       leader_id: str | None = None) -> JoinResult:
    """A JoinGroup answer carrying the current generation (with the members' metadata if `members`)."""
    return JoinResult(ErrorCode.NONE, member.member_id, group.generation_id, group.protocol_type,
                      group.protocol_name, (group.leader_id if leader_id is None else leader_id) or "",
                      skip_assignment, group.current_member_metadata() if members else ())


# ------------------------------------------------------------------------------------------------ sessions


def schedule_heartbeat(ctx: Context, group: Group, member: Member, timeout_ms: int | None = None) -> None:
    """(Re)start the member's session (`timeout_ms`, by default its session timeout)."""
    ctx.arm(heartbeat_timer(group.group_id, member.member_id),
            member.session_timeout_ms if timeout_ms is None else timeout_ms)


def cancel_heartbeat(ctx: Context, group: Group, member_id: str) -> None:
    ctx.cancel(heartbeat_timer(group.group_id, member_id))


def heartbeat_expired(ctx: Context, group: Group, member_id: str) -> None:
    """A member's (or a pending member's) session timer fired."""
    if group.is_pending_member(member_id):
        remove_pending_member_and_update_group(ctx, group, member_id)
    elif group.has(member_id) and not group.get(member_id).has_satisfied_heartbeat():
        remove_member_and_update_group(ctx, group, group.get(member_id))


# ------------------------------------------------------------------------------------------------ rebalance


def maybe_prepare_rebalance(ctx: Context, group: Group) -> None:
    if group.can_rebalance:
        prepare_rebalance(ctx, group)


def prepare_rebalance(ctx: Context, group: Group) -> None:
    """Move to PreparingRebalance: members waiting for an assignment are told to rejoin, and the join waits."""
    if group.is_in(COMPLETING_REBALANCE):
        reset_and_propagate_assignment_error(ctx, group, ErrorCode.REBALANCE_IN_PROGRESS)
    remove_sync_expiration(ctx, group)
    if group.is_in(EMPTY):
        delay = ctx.config.initial_rebalance_delay_ms
        group.initial_join = InitialJoinDelay(delay, max(group.rebalance_timeout_ms - delay, 0))
        ctx.arm(initial_join_timer(group.group_id), delay)
    else:
        group.initial_join = None
        ctx.arm(join_timer(group.group_id), group.rebalance_timeout_ms)
    group.transition_to(PREPARING_REBALANCE, ctx.now())
    try_complete_join(ctx, group)


def try_complete_join(ctx: Context, group: Group) -> None:
    """Complete the join now if every member has joined (never during the initial delay)."""
    if group.is_in(PREPARING_REBALANCE) and group.initial_join is None and group.has_all_members_joined:
        complete_join(ctx, group)


def initial_join_expired(ctx: Context, group: Group) -> None:
    """The initial delay passed: wait again if members joined meanwhile and time is left, else complete."""
    delay = group.initial_join
    if delay is not None and group.new_member_added and delay.remaining_ms != 0:
        group.new_member_added = False
        next_delay = min(ctx.config.initial_rebalance_delay_ms, delay.remaining_ms)
        group.initial_join = InitialJoinDelay(next_delay, max(delay.remaining_ms - delay.delay_ms, 0))
        ctx.arm(initial_join_timer(group.group_id), next_delay)
    else:
        complete_join(ctx, group)


def complete_join(ctx: Context, group: Group) -> None:
    """End the join phase (Kafka's onCompleteJoin)."""
    ctx.cancel(join_timer(group.group_id))
    ctx.cancel(initial_join_timer(group.group_id))
    group.initial_join = None
    for member in group.not_yet_rejoined_members():
        if not member.is_static:
            group.remove(member.member_id)
            cancel_heartbeat(ctx, group, member.member_id)
    if not group.maybe_elect_new_joined_leader() and group.members:
        # nobody rejoined: wait again, until the silent members' sessions expire
        ctx.arm(join_timer(group.group_id), group.rebalance_timeout_ms)
        return
    group.init_next_generation(ctx.now())
    if group.is_in(EMPTY):
        # losing this write is harmless: the previous generation comes back and its members time out
        ctx.append(group.group_id, group_records(group, {}))
        return
    for member in group.members.values():
        answer_join(ctx, member, current_generation(group, member, members=group.is_leader(member.member_id)))
        schedule_heartbeat(ctx, group, member)
        member.is_new = False
        group.add_pending_sync_member(member.member_id)
    ctx.arm(sync_timer(group.group_id), group.rebalance_timeout_ms)


# ------------------------------------------------------------------------------------------------ sync


def remove_sync_expiration(ctx: Context, group: Group) -> None:
    group.pending_sync_members.clear()
    ctx.cancel(sync_timer(group.group_id))


def remove_pending_sync_member(ctx: Context, group: Group, member_id: str) -> None:
    group.remove_pending_sync_member(member_id)
    if group.has_received_sync_from_all_members:
        ctx.cancel(sync_timer(group.group_id))


def sync_expired(ctx: Context, group: Group) -> None:
    """Members that never sent SyncGroup for this generation are removed, and the group rebalances."""
    if group.is_in(COMPLETING_REBALANCE, STABLE) and group.pending_sync_members:
        for member_id in sorted(group.pending_sync_members):
            group.remove(member_id)
            cancel_heartbeat(ctx, group, member_id)
        prepare_rebalance(ctx, group)


def propagate_assignment(ctx: Context, group: Group, error: ErrorCode) -> None:
    """Answer every parked SyncGroup with the member's assignment (or `error`) and restart its session."""
    ok = error is ErrorCode.NONE
    for member in group.members.values():
        result = SyncResult(error, group.protocol_type if ok else None, group.protocol_name if ok else None,
                            member.assignment)
        if answer_sync(ctx, member, result):
            schedule_heartbeat(ctx, group, member)


def set_and_propagate_assignment(ctx: Context, group: Group, assignment: Mapping[str, bytes]) -> None:
    for member in group.members.values():
        member.assignment = assignment[member.member_id]
    propagate_assignment(ctx, group, ErrorCode.NONE)


def reset_and_propagate_assignment_error(ctx: Context, group: Group, error: ErrorCode) -> None:
    for member in group.members.values():
        member.assignment = b""
    propagate_assignment(ctx, group, error)


def store_group(ctx: Context, group: Group, assignment: Mapping[str, bytes],
                on_done: Callable[[ErrorCode], None]) -> None:
    """Write the group's metadata with `assignment`; `on_done` gets the error a client should see (NONE once
    written)."""
    ctx.append(group.group_id, group_records(group, assignment), lambda error: on_done(group_store_error(error)))


# ------------------------------------------------------------------------------------------------ removal


def remove_member_and_update_group(ctx: Context, group: Group, member: Member) -> None:
    """Remove a member (it left or its session expired); a join or sync it has parked is answered
    UNKNOWN_MEMBER_ID (Kafka answers the join only: the sync here too, so that no request waits forever)."""
    answer_join(ctx, member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, UNKNOWN_MEMBER_ID))
    answer_sync(ctx, member, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
    group.remove(member.member_id)
    cancel_heartbeat(ctx, group, member.member_id)
    if group.is_in(STABLE, COMPLETING_REBALANCE):
        maybe_prepare_rebalance(ctx, group)
    elif group.is_in(PREPARING_REBALANCE):
        try_complete_join(ctx, group)


def remove_pending_member_and_update_group(ctx: Context, group: Group, member_id: str) -> None:
    group.remove(member_id)
    cancel_heartbeat(ctx, group, member_id)
    try_complete_join(ctx, group)
