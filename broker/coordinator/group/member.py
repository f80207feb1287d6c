"""A member of a classic group, as Kafka's MemberMetadata: who it is, its timeouts, the protocols it offers (in its
order of preference, each with its metadata bytes), its assignment, and the join or sync request it has waiting."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

#: The protocols a member offers: (name, metadata) in its order of preference.
Protocols = tuple[tuple[str, bytes], ...]


@dataclass(eq=False, slots=True)
class Member:
    """A member; `join_waiter` / `sync_waiter` are the shell's handles of its parked JoinGroup / SyncGroup (None when
    nothing waits). A member is new from its first join until the join completes (Kafka's isNew)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    join_waiter: object | None = None
    sync_waiter: object | None = None
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    @property
    def protocol_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.protocols)

    def metadata(self, protocol: str) -> bytes:
        """The metadata the member offered with `protocol` (KeyError if it did not offer it)."""
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: Protocols) -> bool:
        """Whether `protocols` are the member's own: the same names and metadata in the same order."""
        return tuple(protocols) == self.protocols

    def vote(self, candidates: Collection[str]) -> str:
        """The member's first preference among `candidates`."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of the candidate protocols")

    def has_satisfied_heartbeat(self) -> bool:
        """Whether the member's session expiring now leaves it in the group: a member waiting in a join or a sync
        is alive, unless it is new (a new member's parked join expires, Kafka's NewMemberJoinTimeoutMs)."""
        return not self.is_new and (self.awaiting_join or self.awaiting_sync)
