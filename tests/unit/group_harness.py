"""An in-memory shell around the pure group coordinator, for its unit tests: a fake clock, the timers the
coordinator armed (fired as the clock advances), the answers delivered to each request, and the appends to
__consumer_offsets (completed when a test says so)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.coordinator import GroupCoordinator
from broker.coordinator.group.effects import Append, Effects, ParkedResult, Record, TimerKey
from broker.coordinator.group.requests import (
    CommitRequest,
    HeartbeatRequest,
    JoinRequest,
    LeavingMember,
    OffsetToCommit,
    SyncRequest,
)
from broker.coordinator.group.results import JoinResult, LeaveResult
from protocol.consumer_protocol import Subscription, encode_subscription
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition

GROUP = "g"
SESSION_MS = 10_000
REBALANCE_MS = 30_000
#: Settings for most tests: no initial rebalance delay, so that a group forms at once.
NO_DELAY = GroupConfig(initial_rebalance_delay_ms=0)


def subscription(*topics: str) -> bytes:
    return encode_subscription(Subscription(tuple(topics)))


RANGE = (("range", subscription("orders")),)


@dataclass(eq=False)
class Ticket:
    """A request handed to the coordinator: the shell's handle its answers are delivered to."""

    name: str

    def __repr__(self) -> str:
        return f"Ticket({self.name})"


class FakeShell:
    """Drives a GroupCoordinator as the broker's shell will: applies the effects of every call."""

    def __init__(self, config: GroupConfig = NO_DELAY, own: bool = True) -> None:
        self.now = 1_000_000
        self._uuids = itertools.count(1)
        self.coordinator = GroupCoordinator(lambda: self.now, config, new_uuid=lambda: f"uuid{next(self._uuids)}")
        self.timers: dict[TimerKey, int] = {}
        self.answers: dict[Ticket, list[ParkedResult]] = {}
        self.pending_appends: list[Append] = []
        self.written: list[Record] = []
        self._tickets = itertools.count(1)
        self.last_join: Ticket | None = None
        if own:
            for partition in range(config.offsets_topic_partitions):
                self.apply(self.coordinator.load(partition, []))

    # ------------------------------------------------------------------------------------------ plumbing

    def apply(self, fx: Effects) -> Effects:
        for key, delay in fx.timers.items():
            if delay is None:
                self.timers.pop(key, None)
            else:
                self.timers[key] = self.now + delay
        for reply in fx.replies:
            self.answers.setdefault(reply.to, []).append(reply.result)
        self.pending_appends.extend(fx.appends)
        return fx

    def ticket(self, name: str) -> Ticket:
        return Ticket(f"{name}#{next(self._tickets)}")

    def answer(self, ticket: Ticket) -> ParkedResult | None:
        """The one answer `ticket` got, or None while it waits (two answers to one request are a bug)."""
        got = self.answers.get(ticket, [])
        assert len(got) <= 1, f"{ticket} answered {len(got)} times: {got}"
        return got[0] if got else None

    def advance(self, ms: int) -> None:
        """Move the clock `ms` forward, firing the timers that come due, in order."""
        target = self.now + ms
        while True:
            due = [(deadline, key) for key, deadline in self.timers.items() if deadline <= target]
            if not due:
                break
            deadline, key = min(due)
            self.now = max(self.now, deadline)
            del self.timers[key]
            self.apply(self.coordinator.timer_fired(key))
        self.now = target

    def keep_alive(self, members: list[str], generation: int, ms: int) -> None:
        """Move the clock `ms` forward while `members` heartbeat every half session."""
        while ms > 0:
            step = min(SESSION_MS // 2, ms)
            self.advance(step)
            ms -= step
            for member_id in members:
                self.heartbeat(member_id, generation)

    def complete_appends(self, error: ErrorCode = ErrorCode.NONE) -> list[Record]:
        """Complete every pending append (with `error`); returns the records written."""
        records: list[Record] = []
        while self.pending_appends:
            append = self.pending_appends.pop(0)
            if error is ErrorCode.NONE:
                records.extend(append.records)
            self.apply(self.coordinator.appended(append.append_id, error))
        self.written.extend(records)
        return records

    # ------------------------------------------------------------------------------------------ requests

    def join(self, member_id: str = "", *, group: str = GROUP, instance: str | None = None,
             protocols: tuple[tuple[str, bytes], ...] = RANGE, session_ms: int = SESSION_MS,
             rebalance_ms: int = REBALANCE_MS, client_id: str = "client", version: int = 9,
             protocol_type: str = "consumer") -> Ticket:
        ticket = self.ticket(f"join:{member_id or instance or client_id}")
        request = JoinRequest(group, member_id, instance, protocol_type, protocols, session_ms, rebalance_ms,
                              client_id, "/127.0.0.1", version)
        self.apply(self.coordinator.join(request, ticket))
        return ticket

    def join_new(self, client_id: str = "client", **kwargs) -> str:
        """A dynamic member joins (v4+: asked for its id, then joining with it); returns its member id."""
        first = self.answer(self.join(client_id=client_id, **kwargs))
        assert isinstance(first, JoinResult) and first.error is ErrorCode.MEMBER_ID_REQUIRED, first
        self.last_join = self.join(first.member_id, client_id=client_id, **kwargs)
        return first.member_id

    def sync(self, member_id: str, generation: int, *, group: str = GROUP, instance: str | None = None,
             assignments: dict[str, bytes] | None = None, protocol_type: str | None = None,
             protocol_name: str | None = None) -> Ticket:
        ticket = self.ticket(f"sync:{member_id}")
        request = SyncRequest(group, generation, member_id, instance, protocol_type, protocol_name, assignments)
        self.apply(self.coordinator.sync(request, ticket))
        return ticket

    def heartbeat(self, member_id: str, generation: int, *, group: str = GROUP,
                  instance: str | None = None) -> ErrorCode:
        error, fx = self.coordinator.heartbeat(HeartbeatRequest(group, generation, member_id, instance))
        self.apply(fx)
        return error

    def leave(self, *members: LeavingMember, group: str = GROUP) -> LeaveResult:
        result, fx = self.coordinator.leave(group, members)
        self.apply(fx)
        return result

    def commit(self, offsets: dict[TopicPartition, int | OffsetToCommit], *, group: str = GROUP,
               generation: int = -1, member_id: str = "", instance: str | None = None) -> Ticket:
        ticket = self.ticket(f"commit:{member_id}")
        wanted = {tp: o if isinstance(o, OffsetToCommit) else OffsetToCommit(o) for tp, o in offsets.items()}
        self.apply(self.coordinator.commit(CommitRequest(group, wanted, generation, member_id, instance), ticket))
        return ticket


def form_group(shell: FakeShell, *clients: str, group: str = GROUP) -> tuple[list[str], int]:
    """Dynamic members `clients` join an Empty group and sync (the leader assigns each member its own name); returns
    the member ids (the leader first) and the generation."""
    tickets = {}
    for client in clients:
        member_id = shell.join_new(client, group=group)
        tickets[member_id] = shell.last_join
    shell.advance(0)
    results = {member_id: shell.answer(ticket) for member_id, ticket in tickets.items()}
    assert all(isinstance(r, JoinResult) and r.error is ErrorCode.NONE for r in results.values()), results
    leader = next(iter(results.values())).leader_id
    generation = results[leader].generation_id
    syncs = [shell.sync(m, generation, group=group) for m in results if m != leader]
    syncs.append(shell.sync(leader, generation, group=group, assignments={m: m.encode() for m in results}))
    shell.complete_appends()
    assert all(shell.answer(t).error is ErrorCode.NONE for t in syncs)
    return [leader, *(m for m in results if m != leader)], generation
