"""The group coordinator (Kafka's GroupCoordinator, classic protocol) as a pure state machine: the shell around it
hands in requests, timer expirations and append completions, and carries out the effects each call returns
(see effects.py). It holds the groups of the __consumer_offsets partitions this broker leads.

Every request first passes Kafka's checks of the group id and of this coordinator: an empty group id is
INVALID_GROUP_ID (except for OffsetCommit, OffsetFetch, DescribeGroups and DeleteGroups); a group of a partition
being loaded is COORDINATOR_LOAD_IN_PROGRESS (SyncGroup answers REBALANCE_IN_PROGRESS and Heartbeat NONE instead,
as Kafka does for older clients); a group of a partition not led here is NOT_COORDINATOR.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Iterator

from broker.coordinator.group.admin import delete_group, describe_group, list_groups
from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.context import Clock, Context
from broker.coordinator.group.effects import Effects, Record, TimerKey
from broker.coordinator.group.group import Group
from broker.coordinator.group.join import join_group
from broker.coordinator.group.loading import load_groups
from broker.coordinator.group.membership import heartbeat, leave_group, sync_group
from broker.coordinator.group.offsets import commit_offsets, delete_offsets, expire_offsets, fetch_offsets
from broker.coordinator.group.rebalance import (
    answer_join,
    answer_sync,
    complete_join,
    heartbeat_expired,
    initial_join_expired,
    prepare_rebalance,
    schedule_heartbeat,
    sync_expired,
)
from broker.coordinator.group.requests import (
    CommitRequest,
    HeartbeatRequest,
    JoinRequest,
    LeavingMember,
    SyncRequest,
)
from broker.coordinator.group.results import (
    CommitResult,
    DeleteOffsetsResult,
    GroupDescription,
    JoinResult,
    LeaveResult,
    LeftMember,
    ListGroupsResult,
    OffsetFetchResult,
    SyncResult,
)
from broker.coordinator.group.states import DEAD, PREPARING_REBALANCE
from protocol.consumer_offsets import partition_for
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition


class GroupCoordinator:
    """The coordinator of the groups whose __consumer_offsets partitions this broker leads. `clock` gives the time
    in ms; `new_uuid` the random part of new member ids."""

    def __init__(self, clock: Clock, config: GroupConfig | None = None,
                 new_uuid: Callable[[], str] = lambda: str(uuid.uuid4())) -> None:
        self._ctx = Context(config or GroupConfig(), clock, new_uuid)
        self._owned: set[int] = set()
        self._loading: set[int] = set()

    @property
    def config(self) -> GroupConfig:
        return self._ctx.config

    def group(self, group_id: str) -> Group | None:
        """The group, if this coordinator holds it."""
        return self._ctx.groups.get(group_id)

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_partitions)

    # ------------------------------------------------------------------------------------------ ownership

    def begin_loading(self, partition: int) -> None:
        """This broker became the leader of `partition`: its groups are COORDINATOR_LOAD_IN_PROGRESS until loaded."""
        self._loading.add(partition)

    def load(self, partition: int, records: Iterable[Record]) -> Effects:
        """Take over the groups of `partition` from its records, in log order; their members' sessions start."""
        fx = self._ctx.begin()
        for group in load_groups(records, self._ctx.now()):
            if group.group_id in self._ctx.groups:
                continue
            self._ctx.groups[group.group_id] = group
            if group.size > self.config.max_size:
                prepare_rebalance(self._ctx, group)  # over capacity: let the members commit, then rejoin
            for member in group.members.values():
                schedule_heartbeat(self._ctx, group, member)
        self._loading.discard(partition)
        self._owned.add(partition)
        return fx

    def unload(self, partition: int) -> Effects:
        """This broker no longer leads `partition`: its groups are Dead here, their parked joins and syncs are
        answered NOT_COORDINATOR (Kafka answers those its state parks; a static member's join parked while its
        group is written is answered here too), and their timers stop."""
        fx = self._ctx.begin()
        self._owned.discard(partition)
        self._loading.discard(partition)
        for group in [g for g in self._ctx.groups.values() if self.partition_for(g.group_id) == partition]:
            group.transition_to(DEAD, self._ctx.now())
            for member in group.members.values():
                answer_join(self._ctx, member, JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id))
                answer_sync(self._ctx, member, SyncResult(ErrorCode.NOT_COORDINATOR))
            for key in [k for k in self._ctx.deadlines if k[1] == group.group_id]:
                self._ctx.cancel(key)
            del self._ctx.groups[group.group_id]
        return fx

    def _group_or_new(self, group_id: str) -> Group:
        group = self.group(group_id)
        if group is None:
            group = self._ctx.groups[group_id] = Group(group_id, self._ctx.now())
        return group

    def _status_error(self, group_id: str, empty_id_allowed: bool = False) -> ErrorCode | None:
        if not group_id and not empty_id_allowed:
            return ErrorCode.INVALID_GROUP_ID
        partition = self.partition_for(group_id)
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    # ------------------------------------------------------------------------------------------ membership

    def join(self, request: JoinRequest, reply_to: object) -> Effects:
        """JoinGroup; the answer to `reply_to` may come in a later call's effects (when the join completes)."""
        fx = self._ctx.begin()
        error = self._status_error(request.group_id)
        if error is None and not (self.config.min_session_timeout_ms <= request.session_timeout_ms
                                  <= self.config.max_session_timeout_ms):
            error = ErrorCode.INVALID_SESSION_TIMEOUT
        if error is None and request.member_id and self.group(request.group_id) is None:
            error = ErrorCode.UNKNOWN_MEMBER_ID
        if error is not None:
            self._ctx.reply(reply_to, JoinResult(error, request.member_id))
        else:
            join_group(self._ctx, self._group_or_new(request.group_id), request, reply_to)
        return fx

    def sync(self, request: SyncRequest, reply_to: object) -> Effects:
        """SyncGroup; a member's answer may come in a later call's effects (once the leader's assignment is
        written)."""
        fx = self._ctx.begin()
        error = self._status_error(request.group_id)
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            error = ErrorCode.REBALANCE_IN_PROGRESS  # the rebalance in progress was lost: rejoin
        group = self.group(request.group_id)
        if error is not None:
            self._ctx.reply(reply_to, SyncResult(error))
        elif group is None:
            self._ctx.reply(reply_to, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        else:
            sync_group(self._ctx, group, request, reply_to)
        return fx

    def heartbeat(self, request: HeartbeatRequest) -> tuple[ErrorCode, Effects]:
        fx = self._ctx.begin()
        error = self._status_error(request.group_id)
        group = self.group(request.group_id)
        if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return ErrorCode.NONE, fx
        if error is not None:
            return error, fx
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, fx
        return heartbeat(self._ctx, group, request), fx

    def leave(self, group_id: str, members: Iterable[LeavingMember]) -> tuple[LeaveResult, Effects]:
        """LeaveGroup of one or more members."""
        fx = self._ctx.begin()
        error = self._status_error(group_id)
        group = self.group(group_id)
        if error is not None:
            return LeaveResult(error), fx
        if group is None:
            unknown = ErrorCode.UNKNOWN_MEMBER_ID
            return LeaveResult(ErrorCode.NONE, tuple(LeftMember(m.member_id, m.group_instance_id, unknown)
                                                     for m in members)), fx
        return leave_group(self._ctx, group, members), fx

    # ------------------------------------------------------------------------------------------ offsets

    def commit(self, request: CommitRequest, reply_to: object) -> Effects:
        """OffsetCommit; the answer to `reply_to` comes once the offsets are written (or at once if refused)."""
        fx = self._ctx.begin()
        error = self._status_error(request.group_id, empty_id_allowed=True)
        if error is None and request.generation_id >= 0 and self.group(request.group_id) is None:
            error = ErrorCode.ILLEGAL_GENERATION  # a member of a generation this coordinator does not know
        if error is not None:
            self._ctx.reply(reply_to, CommitResult(dict.fromkeys(request.offsets, error)))
        else:  # without a generation, a group that only commits offsets is made
            commit_offsets(self._ctx, self._group_or_new(request.group_id), request, reply_to)
        return fx

    def committed_offsets(self) -> Iterator[tuple[str, TopicPartition, int]]:
        """(group id, partition, committed offset) of every offset the groups held here have, for the metrics."""
        for group_id, group in self._ctx.groups.items():
            for tp, value in group.offsets.items():
                yield group_id, tp, value.offset

    def fetch_offsets(self, group_id: str, partitions: Collection[TopicPartition] | None = None,
                      require_stable: bool = False) -> OffsetFetchResult:
        """OffsetFetch of one group: the partitions named, or all the group has offsets for (None)."""
        error = self._status_error(group_id, empty_id_allowed=True)
        if error is not None:
            return OffsetFetchResult(error)
        return fetch_offsets(self.group(group_id), partitions, require_stable)

    def delete_offsets(self, group_id: str,
                       partitions: Iterable[TopicPartition]) -> tuple[DeleteOffsetsResult, Effects]:
        fx = self._ctx.begin()
        error = self._status_error(group_id)
        group = self.group(group_id)
        if error is not None:
            return DeleteOffsetsResult(error), fx
        if group is None:
            return DeleteOffsetsResult(ErrorCode.GROUP_ID_NOT_FOUND), fx
        return delete_offsets(self._ctx, group, partitions), fx

    def expire_offsets(self) -> Effects:
        """Remove offsets past offsets.retention.minutes (the shell calls this every
        offsets.retention.check.interval.ms)."""
        fx = self._ctx.begin()
        expire_offsets(self._ctx)
        return fx

    # ------------------------------------------------------------------------------------------ admin

    def describe(self, group_ids: Iterable[str]) -> list[GroupDescription]:
        described = []
        for group_id in group_ids:
            error = self._status_error(group_id, empty_id_allowed=True)
            described.append(GroupDescription(group_id, error) if error is not None
                             else describe_group(group_id, self.group(group_id)))
        return described

    def list_groups(self, states: Collection[str] = (), types: Collection[str] = ()) -> ListGroupsResult:
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self._loading else ErrorCode.NONE
        return ListGroupsResult(error, tuple(list_groups(list(self._ctx.groups.values()), states, types)))

    def delete_groups(self, group_ids: Iterable[str]) -> tuple[dict[str, ErrorCode], Effects]:
        fx = self._ctx.begin()
        errors = {}
        for group_id in group_ids:
            error = self._status_error(group_id, empty_id_allowed=True)
            errors[group_id] = error if error is not None else delete_group(self._ctx, self.group(group_id))
        return errors, fx

    # ------------------------------------------------------------------------------------------ callbacks

    def timer_fired(self, key: TimerKey) -> Effects:
        """A timer armed by an earlier call expired (one cancelled since is ignored)."""
        fx = self._ctx.begin()
        if not self._ctx.take_fired(key):
            return fx
        kind, group_id = key[0], key[1]
        group = self.group(group_id)
        if group is None:
            return fx
        if kind == "heartbeat":
            heartbeat_expired(self._ctx, group, key[2])
        elif kind == "join" and group.is_in(PREPARING_REBALANCE):
            complete_join(self._ctx, group)
        elif kind == "initial-join" and group.is_in(PREPARING_REBALANCE):
            initial_join_expired(self._ctx, group)
        elif kind == "sync":
            sync_expired(self._ctx, group)
        return fx

    def appended(self, append_id: int, error: ErrorCode) -> Effects:
        """An append of an earlier call's effects is done: written (NONE) or failed with `error`."""
        fx = self._ctx.begin()
        self._ctx.appended(append_id, error)
        return fx
