"""What a call into the group coordinator asks of the shell around it: answers to deliver (to the request that
asked, or to other requests parked earlier), timers to arm or cancel, and records to append to __consumer_offsets.

Timers are named by key: ``("heartbeat", group, member)`` (a member's session, or the wait for a pending member's
join), ``("join", group)`` (the rebalance timeout), ``("initial-join", group)`` (group.initial.rebalance.delay.ms)
and ``("sync", group)`` (the wait for every member's SyncGroup). Arming a key replaces its timer; when a timer's
delay has passed the shell calls the coordinator's ``timer_fired(key)``. Every append is acks=all; when it is
done the shell calls ``appended(append_id, error)`` with the append's error code (NONE once written).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.coordinator.group.results import CommitResult, JoinResult, SyncResult

TimerKey = tuple[str, ...]
#: A record of __consumer_offsets: (key, value); a None value is a tombstone.
Record = tuple[bytes, bytes | None]
ParkedResult = JoinResult | SyncResult | CommitResult


def heartbeat_timer(group_id: str, member_id: str) -> TimerKey:
    return ("heartbeat", group_id, member_id)


def join_timer(group_id: str) -> TimerKey:
    return ("join", group_id)


def initial_join_timer(group_id: str) -> TimerKey:
    return ("initial-join", group_id)


def sync_timer(group_id: str) -> TimerKey:
    return ("sync", group_id)


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer to the request the shell handed in as `to`."""

    to: object
    result: ParkedResult


@dataclass(frozen=True, slots=True)
class Append:
    """Records to append, in one batch, to `partition` of __consumer_offsets."""

    append_id: int
    partition: int
    records: tuple[Record, ...]


@dataclass(slots=True)
class Effects:
    """The effects of one call. `timers` holds each key's last change: a delay in ms to (re)arm it, None to cancel."""

    replies: list[Reply] = field(default_factory=list)
    timers: dict[TimerKey, int | None] = field(default_factory=dict)
    appends: list[Append] = field(default_factory=list)

    def replies_to(self, to: object) -> list[ParkedResult]:
        return [reply.result for reply in self.replies if reply.to is to]
