"""Kafka's partition leader election rules (ZooKeeper mode), as pure functions.

The rules follow Apache Kafka 3.8's ``PartitionLeaderElectionAlgorithms`` and ``Election``:

- offline partition (its leader died, or it has none): the first replica in assignment order that is
  live and in the ISR; the new ISR is the live part of the old one. Failing that, if
  unclean.leader.election.enable is on, the first live replica in assignment order becomes leader
  with itself as the only ISR member (an unclean election: records it lacks are lost). Otherwise
  there is no leader.
- controlled shutdown: the first replica in assignment order that is live, in the ISR and not
  shutting down; the shutting-down brokers leave the ISR.
- preferred replica: the first replica of the assignment, if it is live and in the ISR; the ISR stays.
- reassignment: the first replica of the target replicas that is live and in the ISR; the ISR stays.
- a dead broker leaves the ISR unless it is its last member: the ISR is never empty, so that the
  partition can come back (cleanly) when that member returns (``ReplicaStateMachine``).

Every new leader or ISR the controller writes carries the next leader epoch; :func:`after_broker_failure`
and :func:`after_broker_startup` combine the rules into the partition state the controller writes
when a broker dies or comes back.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

log = logging.getLogger("controller.config")

NO_LEADER = -1
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """A partition's leader (NO_LEADER when offline), leader epoch and ISR, as in its state znode."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]

    @property
    def online(self) -> bool:
        return self.leader != NO_LEADER


@dataclass(frozen=True, slots=True)
class Election:
    """The outcome of an election: the new leader and ISR, and whether the leader came from outside the ISR."""

    leader: int
    isr: tuple[int, ...]
    unclean: bool = False

    def state_after(self, previous: LeaderAndIsr) -> LeaderAndIsr:
        """The partition state that carries this election (the next leader epoch)."""
        return LeaderAndIsr(self.leader, previous.leader_epoch + 1, self.isr)


def _first(assignment: Sequence[int], eligible: Collection[int]) -> int | None:
    return next((replica for replica in assignment if replica in eligible), None)


def offline_partition_election(assignment: Sequence[int], isr: Sequence[int], live: Collection[int], *,
                               unclean_leader_election: bool) -> Election | None:
    """Kafka's offlinePartitionLeaderElection; None when no replica may lead."""
    live_isr = [replica for replica in isr if replica in live]
    leader = _first(assignment, live_isr)
    if leader is not None:
        return Election(leader, tuple(live_isr))
    if unclean_leader_election:
        leader = _first(assignment, live)
        if leader is not None:
            return Election(leader, (leader,), unclean=True)
    return None


def controlled_shutdown_election(assignment: Sequence[int], isr: Sequence[int], live: Collection[int],
                                 shutting_down: Collection[int]) -> Election | None:
    """Kafka's controlledShutdownPartitionLeaderElection; None when no other ISR member is live."""
    candidates = [replica for replica in isr if replica in live and replica not in shutting_down]
    leader = _first(assignment, candidates)
    if leader is None:
        return None
    return Election(leader, tuple(replica for replica in isr if replica not in shutting_down))


def preferred_replica_election(assignment: Sequence[int], isr: Sequence[int], live: Collection[int]) -> Election | None:
    """Kafka's preferredReplicaPartitionLeaderElection: the assignment's head if it is live and in the ISR."""
    if preferred_replica_ineligibility(assignment, isr, live):
        return None
    return Election(assignment[0], tuple(isr))


def preferred_replica_ineligibility(assignment: Sequence[int], isr: Sequence[int], live: Collection[int]) -> str:
    """Why the preferred replica may not lead now ('' if it may): it is not live, or not in the ISR."""
    if not assignment:
        return "the partition has no replicas"
    preferred = assignment[0]
    if preferred not in live:
        return f"preferred replica {preferred} is not live"
    if preferred not in isr:
        return f"preferred replica {preferred} is not in the ISR {list(isr)}"
    return ""


def reassign_partition_election(target: Sequence[int], isr: Sequence[int], live: Collection[int]) -> Election | None:
    """Kafka's reassignPartitionLeaderElection: the first target replica that is live and in the ISR."""
    leader = _first(target, [replica for replica in isr if replica in live])
    return Election(leader, tuple(isr)) if leader is not None else None


def isr_without(isr: Sequence[int], broker_id: int) -> tuple[int, ...]:
    """The ISR once ``broker_id`` is gone: without it, unless it is the last member (the ISR is never empty)."""
    if len(isr) == 1:
        return tuple(isr)
    return tuple(replica for replica in isr if replica != broker_id)


def after_broker_failure(state: LeaderAndIsr, assignment: Sequence[int], live: Collection[int], dead: int, *,
                         unclean_leader_election: bool) -> tuple[LeaderAndIsr, Election | None] | None:
    """The partition state once broker ``dead`` is gone (``live`` no longer holds it); None if unchanged.

    Its leader's death triggers an offline election; without an electable replica the partition
    goes offline (NO_LEADER) and the ISR keeps its last member. A dead follower leaves the ISR.
    Either change bumps the leader epoch. The election, if one took place, comes along.
    """
    if state.leader == dead:
        election = offline_partition_election(assignment, state.isr, live,
                                              unclean_leader_election=unclean_leader_election)
        if election is not None:
            return election.state_after(state), election
        return LeaderAndIsr(NO_LEADER, state.leader_epoch + 1, isr_without(state.isr, dead)), None
    if dead in state.isr and len(state.isr) > 1:
        return LeaderAndIsr(state.leader, state.leader_epoch + 1, isr_without(state.isr, dead)), None
    return None


def after_broker_startup(state: LeaderAndIsr, assignment: Sequence[int], live: Collection[int], *,
                         unclean_leader_election: bool) -> tuple[LeaderAndIsr, Election] | None:
    """An offline partition elects a leader once a broker comes back (``live`` holds it); None if unchanged."""
    if state.online:
        return None
    election = offline_partition_election(assignment, state.isr, live,
                                          unclean_leader_election=unclean_leader_election)
    if election is None:
        return None
    return election.state_after(state), election


def parse_bool(value: str | None, default: bool) -> bool:
    """A boolean config value as Kafka reads one ("true"/"false", any case); `default` when unset or invalid."""
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    log.warning("ignoring the invalid boolean config value %r", value)
    return default


def unclean_leader_election_enabled(config: Mapping[str, str], default: bool = False) -> bool:
    """The topic's unclean.leader.election.enable, else the broker default (false since Kafka 0.11)."""
    return parse_bool(config.get(UNCLEAN_LEADER_ELECTION_ENABLE), default)
