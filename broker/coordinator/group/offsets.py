"""Committed offsets, as Kafka's GroupCoordinator and GroupMetadataManager (Kafka 3.9) keep them.

- OffsetCommit: a commit with generation -1 and no member (a simple consumer, an admin) is taken by an Empty group;
  to a group with members it is UNKNOWN_MEMBER_ID. Any other commit must come from a known member of the current
  generation (FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION), and during CompletingRebalance is answered
  REBALANCE_IN_PROGRESS. A commit restarts the member's session. Metadata longer than offset.metadata.max.bytes is
  OFFSET_METADATA_TOO_LARGE for its partition; the rest are written to __consumer_offsets and answered once
  written, and only then read back by OffsetFetch.
- OffsetFetch returns committed offsets (-1 where none), whatever the group's state; with require_stable, a
  partition with a commit still being written is UNSTABLE_OFFSET_COMMIT.
- OffsetDelete deletes the offsets of an Empty group; of a consumer group with members, only those of topics its
  members do not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC for the others); of any other group, none
  (NON_EMPTY_GROUP).
- Offsets expire offsets.retention.minutes after the group became Empty (after their commit for a group that never
  had members, or for a Stable consumer group's topics it no longer subscribes to); an offset committed with an
  explicit retention expires at its own expire timestamp.
- An Empty group left without offsets is Dead: it is forgotten and a tombstone deletes it (unless it never had a
  generation), with tombstones for the offsets removed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from broker.coordinator.group.context import Context
from broker.coordinator.group.group import Group
from broker.coordinator.group.rebalance import schedule_heartbeat
from broker.coordinator.group.records import offset_commit_error, offset_records, tombstones
from broker.coordinator.group.requests import (
    DEFAULT_RETENTION,
    DEFAULT_TIMESTAMP,
    UNKNOWN_MEMBER_ID,
    CommitRequest,
    OffsetToCommit,
)
from broker.coordinator.group.results import CommitResult, DeleteOffsetsResult, FetchedOffset, OffsetFetchResult
from broker.coordinator.group.states import COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE
from protocol.consumer_offsets import NO_TIMESTAMP, OffsetCommitValue
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition


def _commit_error(group: Group, request: CommitRequest) -> ErrorCode | None:
    if request.generation_id < 0 and group.is_in(EMPTY):
        return None
    if request.generation_id >= 0 or request.member_id != UNKNOWN_MEMBER_ID or request.group_instance_id is not None:
        error = group.member_error(request.member_id, request.group_instance_id)
        if error is None and request.generation_id != group.generation_id:
            error = ErrorCode.ILLEGAL_GENERATION
        return error
    return None if group.is_in(EMPTY) else ErrorCode.UNKNOWN_MEMBER_ID


def _committed(offset: OffsetToCommit, now_ms: int) -> OffsetCommitValue:
    return OffsetCommitValue(
        offset.offset,
        offset.metadata or "",
        now_ms if offset.commit_timestamp == DEFAULT_TIMESTAMP else offset.commit_timestamp,
        offset.leader_epoch,
        NO_TIMESTAMP if offset.retention_ms == DEFAULT_RETENTION else now_ms + offset.retention_ms,
    )


def _java_length(text: str) -> int:
    """String.length(): UTF-16 code units."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def commit_offsets(ctx: Context, group: Group, request: CommitRequest, reply_to: object) -> None:
    """Handle an OffsetCommit for `group`; the answer goes to `reply_to` once the offsets are written."""
    error = _commit_error(group, request)
    if error is None and group.is_in(COMPLETING_REBALANCE):
        error = ErrorCode.REBALANCE_IN_PROGRESS
    if error is not None:
        ctx.reply(reply_to, CommitResult(dict.fromkeys(request.offsets, error)))
        return
    if group.is_in(STABLE, PREPARING_REBALANCE):
        schedule_heartbeat(ctx, group, group.get(request.member_id))
    now = ctx.now()
    values = {tp: _committed(offset, now) for tp, offset in request.offsets.items()}
    too_large = {tp for tp, value in values.items()
                 if _java_length(value.metadata) > ctx.config.offset_metadata_max_bytes}
    accepted = {tp: value for tp, value in values.items() if tp not in too_large}
    if not accepted:
        ctx.reply(reply_to, CommitResult(dict.fromkeys(request.offsets, ErrorCode.OFFSET_METADATA_TOO_LARGE)))
        return
    group.pending_offset_commits.update(accepted)

    def stored(append_error: ErrorCode) -> None:
        if not group.is_in(DEAD):
            for tp, value in accepted.items():
                if append_error is ErrorCode.NONE and tp in group.pending_offset_commits:
                    group.offsets[tp] = value  # unless OffsetDelete removed the partition meanwhile
                if group.pending_offset_commits.get(tp) == value:
                    del group.pending_offset_commits[tp]
        error = offset_commit_error(append_error)
        ctx.reply(reply_to, CommitResult({tp: ErrorCode.OFFSET_METADATA_TOO_LARGE if tp in too_large else error
                                          for tp in request.offsets}))

    ctx.append(group.group_id, offset_records(group.group_id, accepted), stored)


def fetch_offsets(group: Group | None, partitions: Iterable[TopicPartition] | None,
                  require_stable: bool) -> OffsetFetchResult:
    """The committed offsets of `partitions` (all the group's when None)."""
    if group is None:
        return OffsetFetchResult(ErrorCode.NONE, {tp: FetchedOffset() for tp in partitions or ()})
    wanted = list(group.offsets) if partitions is None else partitions
    fetched = {}
    for tp in wanted:
        committed = group.offsets.get(tp)
        if require_stable and tp in group.pending_offset_commits:
            fetched[tp] = FetchedOffset(error=ErrorCode.UNSTABLE_OFFSET_COMMIT)
        elif committed is None:
            fetched[tp] = FetchedOffset()
        else:
            fetched[tp] = FetchedOffset(committed.offset, committed.leader_epoch, committed.metadata)
    return OffsetFetchResult(ErrorCode.NONE, fetched)


def delete_offsets(ctx: Context, group: Group, partitions: Iterable[TopicPartition]) -> DeleteOffsetsResult:
    """Handle an OffsetDelete for `group`."""
    wanted = list(partitions)
    if group.is_in(EMPTY):
        eligible, subscribed = wanted, []
    elif group.is_consumer_group:
        eligible = [tp for tp in wanted if not group.is_subscribed_to_topic(tp.topic)]
        subscribed = [tp for tp in wanted if group.is_subscribed_to_topic(tp.topic)]
    else:
        return DeleteOffsetsResult(ErrorCode.NON_EMPTY_GROUP)
    errors = dict.fromkeys(subscribed, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)
    if eligible:
        remove_offsets_and_maybe_group(ctx, group, lambda g: g.remove_offsets(eligible))
        errors.update(dict.fromkeys(eligible, ErrorCode.NONE))
    return DeleteOffsetsResult(ErrorCode.NONE, errors)


def expired_offsets(group: Group, now_ms: int, retention_ms: int) -> list[TopicPartition]:
    """The group's offsets past their retention (Kafka's removeExpiredOffsets); offsets being committed never are."""
    if group.protocol_type is not None and group.is_in(EMPTY):
        def base(value: OffsetCommitValue) -> int:
            return value.commit_timestamp if group.state_timestamp is None else group.state_timestamp
        kept: frozenset[str] = frozenset()
    elif group.is_consumer_group and group.subscribed_topics is not None and group.is_in(STABLE):
        def base(value: OffsetCommitValue) -> int:
            return value.commit_timestamp
        kept = group.subscribed_topics
    elif group.protocol_type is None:
        def base(value: OffsetCommitValue) -> int:
            return value.commit_timestamp
        kept = frozenset()
    else:
        return []

    def expired(value: OffsetCommitValue) -> bool:
        if value.expire_timestamp != NO_TIMESTAMP:
            return now_ms >= value.expire_timestamp
        return now_ms - base(value) >= retention_ms

    return [tp for tp, value in group.offsets.items()
            if tp.topic not in kept and tp not in group.pending_offset_commits and expired(value)]


def expire_offsets(ctx: Context) -> None:
    """Remove every group's expired offsets (and the groups left Empty without offsets)."""
    now, retention = ctx.now(), ctx.config.offsets_retention_ms
    for group in list(ctx.groups.values()):
        remove_offsets_and_maybe_group(ctx, group, lambda g: g.remove_offsets(expired_offsets(g, now, retention)))


def remove_offsets_and_maybe_group(ctx: Context, group: Group,
                                   remove: Callable[[Group], list[TopicPartition]]) -> None:
    """Remove offsets of the group (`remove` returns those removed); an Empty group left without offsets is Dead
    and forgotten. Tombstones delete what was removed; losing them is harmless (expiry removes the offsets again),
    so nothing waits for them."""
    removed = remove(group)
    if group.is_in(EMPTY) and not group.has_offsets:
        group.transition_to(DEAD, ctx.now())
    forget_group = group.is_in(DEAD) and ctx.groups.get(group.group_id) is group
    if forget_group:
        del ctx.groups[group.group_id]
    records = tombstones(group.group_id, removed, group_too=forget_group and group.generation_id > 0)
    if records:
        ctx.append(group.group_id, records)
