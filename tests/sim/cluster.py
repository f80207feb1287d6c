"""A deterministic harness for the replication core: the replicas of one partition, driven one step at a time.

Each replica is what a broker holds: a ``Partition`` (broker/replication/partition.py) over a real ``Log``
in its own directory, all on one ManualClock. The controller is a few lines here that apply the rules of
controller/election.py; its LeaderAndIsr reaches every live replica at once (an isolated one too: the
controller is not cut off). A replica that receives a new leader epoch as follower truncates before it
fetches again, with the functions of broker/replication/truncation.py and in the order the fetcher uses
them, one round trip per step. Nothing here opens a socket, starts a thread or sleeps.

Operations (each runs to completion, then waiting acks=all produces are completed or failed):

    produce(*values, acks)    append one batch to the leader; acks=all completes once the HW passes it and
                              fails if its leader goes (deposed, or its broker died)
    fetch(follower)           one round trip of the follower's fetcher: a truncation round while it truncates
                              (OffsetsForLeaderEpoch, or its own HW in high-watermark mode), else one FETCH
                              (fetch offset past the leader's LEO: truncate to that LEO, as on
                              OFFSET_OUT_OF_RANGE); the leader adds the follower to the ISR when it qualifies
    flush(broker)             fsync the log and checkpoint the HW and the recovery point
    crash(broker)             the process dies: bytes written since the last flush are lost (all of them, or
                              all but the fraction ``written_back`` that the OS had written back, which may
                              leave a torn batch for recovery to cut)
    restart(broker)           reopen the log with recovery; the controller sends the state or elects
    controlled_shutdown(b)    move its leadership (controlled-shutdown election), flush, stop
    elect_preferred_leader()  preferred replica election
    isolate(b), reconnect(b)  cut or restore the network between this broker and the other brokers
    advance(ms), shrink_isr() let time pass; run the leader's ISR expiration check
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, TypeVar

from broker.log.checkpoint import LEADER_EPOCH_CHECKPOINT
from broker.log.config import LogConfig
from broker.log.log import Log
from broker.replication.partition import LeaderAndIsrState, Partition
from broker.replication.truncation import (
    HIGH_WATERMARK_MODE,
    LEADER_EPOCH_MODE,
    decide_truncation,
    epoch_to_ask,
)
from controller.election import (
    NO_LEADER,
    Election,
    LeaderAndIsr,
    after_broker_failure,
    after_broker_startup,
    controlled_shutdown_election,
    preferred_replica_election,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.records import decode_batch, iter_batches
from protocol.topic_partition import TopicPartition
from tests.unit.logutil import ManualClock, batch

TP = TopicPartition("sim", 0)
ACKS_ALL = -1
_ALL_BYTES = 1 << 30

_T = TypeVar("_T")


class Batch(NamedTuple):
    """A batch as stored: its offsets, the leader epoch stamped on it and its record values."""

    base_offset: int
    last_offset: int
    leader_epoch: int
    values: tuple[bytes | None, ...]


class ReplicaView(NamedTuple):
    """What the scenarios assert about a replica: LEO, HW, epoch-cache entries and the values by offset."""

    log_end_offset: int
    high_watermark: int
    epochs: list[tuple[int, int]]
    values: list[bytes | None]


def decode(data: bytes) -> list[Batch]:
    """The batches in ``data`` (whole batches back to back)."""
    batches = []
    for position, _header in iter_batches(data):
        header, records = decode_batch(data, position)
        batches.append(Batch(header.base_offset, header.last_offset, header.partition_leader_epoch,
                             tuple(record.value for record in records)))
    return batches


def read_batches(log: Log) -> list[Batch]:
    """Every batch of ``log``."""
    return decode(log.read(log.log_start_offset, _ALL_BYTES))


@dataclass
class Produce:
    """A produce request: where its batch went, and its result (None while an acks=all produce waits)."""

    values: tuple[bytes, ...]
    acks: int
    broker_id: int
    partition: Partition
    base_offset: int
    last_offset: int
    result: ErrorCode | None = None


@dataclass(frozen=True, slots=True)
class TruncationRound:
    """One truncation round of a follower: the epoch it asked the leader about and the answer (both None
    when it asks nothing: in high-watermark mode, or without epochs), where it truncated, whether it is done."""

    asked_epoch: int | None
    answer: tuple[int, int] | None
    offset: int
    complete: bool


@dataclass(frozen=True, slots=True)
class Fetched:
    """One FETCH round trip: the fetch offset, the batches the leader sent, the HW in its response;
    ``out_of_range`` when the follower was past the leader's LEO and truncated to it instead."""

    fetch_offset: int
    batches: int
    high_watermark: int
    out_of_range: bool = False


@dataclass(frozen=True, slots=True)
class ElectedReplica:
    """The replica an election chose, as it was just before it became leader."""

    log_end_offset: int
    high_watermark: int
    reconciled_epoch: int
    lost_on_crash: bool


@dataclass(frozen=True, slots=True)
class StateChange:
    """A partition state the controller (or, for ISR changes, the leader) wrote, with the election behind it."""

    state: LeaderAndIsr
    reason: str
    election: Election | None = None
    elected: ElectedReplica | None = None


@dataclass
class Replica:
    """One broker's copy of the partition, and what of it survives a crash."""

    broker_id: int
    directory: Path
    partition: Partition | None = None  # None while the broker is down
    isolated: bool = False
    truncating: bool = False
    #: The leader epoch at which its log was last made consistent with the leader's (led, or truncated).
    reconciled_epoch: int = -1
    #: Its last crash cost records and it has not reconciled since.
    lost_on_crash: bool = False
    log_end_offset_at_crash: int = 0
    durable_sizes: dict[Path, int] = field(default_factory=dict)
    checkpointed_high_watermark: int = 0
    checkpointed_recovery_point: int = 0

    @property
    def live(self) -> bool:
        return self.partition is not None

    @property
    def log(self) -> Log:
        if self.partition is None:
            raise RuntimeError(f"broker {self.broker_id} is down")
        return self.partition.log

    def reconciled(self, leader_epoch: int) -> None:
        """Its log now matches the leader's history of ``leader_epoch`` (it leads it, or finished truncating)."""
        self.truncating = False
        self.reconciled_epoch = leader_epoch
        self.lost_on_crash = False

    def note_sizes(self, *, durable: bool) -> None:
        """After a flush (``durable``) every byte is on disk; after a truncation at most what is left is."""
        sizes = {segment.log_path: segment.size for segment in self.log.segments}
        self.durable_sizes = sizes if durable else {
            path: min(size, self.durable_sizes.get(path, 0)) for path, size in sizes.items()}


def _operation(method: Callable[..., _T]) -> Callable[..., _T]:
    """A public operation: once it ran, waiting acks=all produces are completed or failed."""

    @functools.wraps(method)
    def run(self: Cluster, *args: object, **kwargs: object) -> _T:
        result = method(self, *args, **kwargs)
        self._complete_produces()
        return result

    return run


class Cluster:
    """N replicas of one partition (brokers 0..N-1, assignment in that order), broker 0 leading epoch 0."""

    def __init__(self, root: Path, size: int = 3, *, truncation_mode: str = LEADER_EPOCH_MODE,
                 min_insync_replicas: int = 1, unclean_leader_election: bool = False,
                 replica_lag_time_max_ms: int = 1000) -> None:
        self.clock = ManualClock()
        self.truncation_mode = truncation_mode
        self.min_insync_replicas = min_insync_replicas
        self.unclean_leader_election = unclean_leader_election
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.assignment = tuple(range(size))
        self.replicas = {b: Replica(b, root / f"broker-{b}" / f"{TP.topic}-{TP.partition}") for b in self.assignment}
        self.state = LeaderAndIsr(NO_LEADER, -1, ())
        self.zk_version = -1
        self.state_changes: list[StateChange] = []
        self._waiting: list[Produce] = []
        for replica in self.replicas.values():
            self._open(replica, needs_recovery=False)
        self._publish(LeaderAndIsr(self.assignment[0], 0, self.assignment), reason="new partition")

    def close(self) -> None:
        """Close the logs of the live replicas (their files stay)."""
        for replica in self.replicas.values():
            if replica.partition is not None:
                replica.partition.log.close()

    # -- views --------------------------------------------------------------------------------

    @property
    def leader(self) -> Partition | None:
        """The leader's Partition; None while the partition is offline."""
        if self.state.leader == NO_LEADER:
            return None
        return self.replicas[self.state.leader].partition

    @property
    def live_brokers(self) -> frozenset[int]:
        return frozenset(b for b, replica in self.replicas.items() if replica.live)

    def log(self, broker_id: int) -> Log:
        return self.replicas[broker_id].log

    def view(self, broker_id: int) -> ReplicaView:
        log = self.log(broker_id)
        return ReplicaView(log.log_end_offset, log.high_watermark,
                           [(entry.epoch, entry.start_offset) for entry in log.epoch_cache.entries],
                           [value for stored in read_batches(log) for value in stored.values])

    def epoch_checkpoint_text(self, broker_id: int) -> str:
        return (self.replicas[broker_id].directory / LEADER_EPOCH_CHECKPOINT).read_text()

    def can_fetch(self, follower_id: int) -> bool:
        """Whether the follower's fetcher reaches a leader now (both live, neither isolated)."""
        follower = self.replicas[follower_id]
        leader_id = self.state.leader
        return (follower.live and leader_id not in (NO_LEADER, follower_id)
                and not follower.isolated and not self.replicas[leader_id].isolated)

    def read_committed(self, offset: int) -> list[Batch]:
        """What a consumer fetching from ``offset`` gets from the leader (batches below its HW)."""
        leader = self.leader
        if leader is None:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{TP} is offline")
        return decode(leader.read(offset, _ALL_BYTES, up_to_high_watermark=True).records)

    # -- clients ------------------------------------------------------------------------------

    @_operation
    def produce(self, *values: bytes, acks: int = ACKS_ALL) -> Produce:
        """Append one batch of ``values`` to the leader (raises KafkaError as the broker would answer)."""
        leader = self.leader
        if leader is None:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{TP} is offline")
        info = leader.append_records_to_leader(batch(*values), acks)
        produce = Produce(values, acks, self.state.leader, leader, info.first_offset, info.last_offset)
        if acks == ACKS_ALL:
            self._waiting.append(produce)
        else:
            produce.result = ErrorCode.NONE
        return produce

    def _complete_produces(self) -> None:
        for produce in self._waiting:
            holder = self.replicas[produce.broker_id].partition
            if holder is not produce.partition:
                produce.result = ErrorCode.NOT_LEADER_OR_FOLLOWER  # its broker died with the request
            else:
                produce.result = holder.produce_completion(produce.last_offset + 1)
        self._waiting = [produce for produce in self._waiting if produce.result is None]

    # -- replication --------------------------------------------------------------------------

    @_operation
    def fetch(self, follower_id: int, *, max_bytes: int = _ALL_BYTES,
              lose_response: bool = False) -> TruncationRound | Fetched:
        """One round trip of the follower's fetcher (see the module docstring). With ``lose_response``
        the leader handles the FETCH but the follower never sees the answer (it crashed meanwhile)."""
        if not self.can_fetch(follower_id):
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {follower_id} cannot reach a leader")
        follower = self.replicas[follower_id]
        leader = self.leader
        assert follower.partition is not None and leader is not None
        leader.check_leader_epoch(follower.partition.leader_epoch)
        if follower.truncating:
            return self._truncation_round(follower, leader)
        partition = follower.partition
        fetch_offset = partition.log.log_end_offset
        leader_end = leader.log.log_end_offset
        if fetch_offset > leader_end:
            self._truncate(follower, leader_end)
            return Fetched(fetch_offset, 0, leader.log.high_watermark, out_of_range=True)
        leader.update_follower_fetch_state(follower_id, fetch_offset, partition.log.log_start_offset)
        if follower_id not in self.state.isr and leader.is_follower_in_sync(follower_id):
            self._write_isr((*self.state.isr, follower_id), f"broker {follower_id} caught up")
        result = leader.read(fetch_offset, max_bytes, up_to_high_watermark=False)
        if not lose_response:
            partition.append_records_to_follower(result.records, result.high_watermark, result.log_start_offset)
        return Fetched(fetch_offset, len(decode(result.records)), result.high_watermark)

    def catch_up(self, follower_id: int, *, max_round_trips: int = 20) -> list[TruncationRound | Fetched]:
        """Fetch until the follower has truncated, fetched from the leader's LEO (so the leader knows it has
        everything) and holds the HW of the answer."""
        outcomes: list[TruncationRound | Fetched] = []
        while len(outcomes) < max_round_trips:
            leader = self.leader
            assert leader is not None
            leader_end = leader.log.log_end_offset
            outcome = self.fetch(follower_id)
            outcomes.append(outcome)
            if isinstance(outcome, Fetched) and outcome.fetch_offset == leader_end \
                    and self.log(follower_id).high_watermark == leader.log.high_watermark:
                return outcomes
        raise AssertionError(f"broker {follower_id} did not catch up in {max_round_trips} round trips: {outcomes}")

    def _truncation_round(self, follower: Replica, leader: Partition) -> TruncationRound:
        log = follower.log
        epoch = epoch_to_ask(log)
        if self.truncation_mode == HIGH_WATERMARK_MODE or epoch is None:
            offset = log.high_watermark
            self._truncate(follower, offset)
            follower.reconciled(leader.leader_epoch)
            return TruncationRound(None, None, offset, True)
        answer = leader.log.end_offset_for_epoch(epoch)
        decision = decide_truncation(log, *answer)
        self._truncate(follower, decision.offset)
        if decision.complete:
            follower.reconciled(leader.leader_epoch)
        return TruncationRound(epoch, answer, decision.offset, decision.complete)

    def _truncate(self, replica: Replica, offset: int) -> None:
        replica.log.truncate_to(offset)
        replica.note_sizes(durable=False)

    # -- brokers ------------------------------------------------------------------------------

    @_operation
    def flush(self, broker_id: int) -> None:
        """fsync the log; checkpoint the HW (replication-offset-checkpoint) and the recovery point."""
        replica = self.replicas[broker_id]
        log = replica.log
        log.flush()
        replica.note_sizes(durable=True)
        replica.checkpointed_high_watermark = log.high_watermark
        replica.checkpointed_recovery_point = log.recovery_point

    @_operation
    def crash(self, broker_id: int, *, written_back: float = 0.0) -> None:
        """Kill the broker: its segment files keep what was flushed plus ``written_back`` of the rest."""
        replica = self.replicas[broker_id]
        log = replica.log
        replica.log_end_offset_at_crash = log.log_end_offset
        sizes = {segment.log_path: segment.size for segment in log.segments}
        log.close()
        for path, size in sizes.items():
            durable = min(replica.durable_sizes.get(path, 0), size)
            os.truncate(path, durable + int((size - durable) * written_back))
        replica.partition = None
        replica.truncating = False
        change = after_broker_failure(self.state, self.assignment, self.live_brokers, broker_id,
                                      unclean_leader_election=self.unclean_leader_election)
        if change is not None:
            self._publish(*change, reason=f"broker {broker_id} died")

    @_operation
    def restart(self, broker_id: int) -> None:
        """Start the broker again: log recovery, then the controller's reaction (an election or the state)."""
        replica = self.replicas[broker_id]
        self._open(replica, needs_recovery=True)
        if replica.log.log_end_offset < replica.log_end_offset_at_crash:
            replica.lost_on_crash = True
        change = after_broker_startup(self.state, self.assignment, self.live_brokers,
                                      unclean_leader_election=self.unclean_leader_election)
        if change is not None:
            self._publish(*change, reason=f"broker {broker_id} started")
        else:
            self._send_leader_and_isr()

    @_operation
    def controlled_shutdown(self, broker_id: int) -> None:
        """Move the broker's leadership to another ISR member if there is one, then flush and stop it."""
        if self.state.leader == broker_id:
            election = controlled_shutdown_election(self.assignment, self.state.isr, self.live_brokers, {broker_id})
            if election is not None:
                self._publish(election.state_after(self.state), election,
                              reason=f"controlled shutdown of broker {broker_id}")
        self.flush(broker_id)
        self.crash(broker_id)

    @_operation
    def elect_preferred_leader(self) -> bool:
        """Move leadership to the first assigned replica if it is live, in sync and not leading already."""
        election = preferred_replica_election(self.assignment, self.state.isr, self.live_brokers)
        if election is None or election.leader == self.state.leader:
            return False
        self._publish(election.state_after(self.state), election, reason="preferred replica election")
        return True

    def isolate(self, broker_id: int) -> None:
        self.replicas[broker_id].isolated = True

    def reconnect(self, broker_id: int) -> None:
        self.replicas[broker_id].isolated = False

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    @_operation
    def shrink_isr(self) -> set[int]:
        """The leader's periodic ISR check: drop followers not caught up within replica.lag.time.max.ms."""
        leader = self.leader
        if leader is None:
            return set()
        lagging = leader.out_of_sync_replicas()
        if lagging:
            self._write_isr(tuple(b for b in self.state.isr if b not in lagging), f"brokers {sorted(lagging)} lag")
        return lagging

    # -- the controller and the leader's ISR writes -----------------------------------------------

    def _open(self, replica: Replica, *, needs_recovery: bool) -> None:
        log = Log(replica.directory, TP, LogConfig(), recovery_point=replica.checkpointed_recovery_point,
                  high_watermark=replica.checkpointed_high_watermark, needs_recovery=needs_recovery,
                  clock=self.clock)
        replica.partition = Partition(TP, replica.broker_id, log, self.clock,
                                      replica_lag_time_max_ms=self.replica_lag_time_max_ms,
                                      min_insync_replicas=self.min_insync_replicas)
        replica.note_sizes(durable=True)

    def _publish(self, state: LeaderAndIsr, election: Election | None = None, *, reason: str) -> None:
        """Write a new partition state (the controller's) and send LeaderAndIsr to the live replicas."""
        elected = None
        if election is not None:
            leader = self.replicas[election.leader]
            elected = ElectedReplica(leader.log.log_end_offset, leader.log.high_watermark, leader.reconciled_epoch,
                                     leader.lost_on_crash)
        self.state = state
        self.zk_version += 1
        self.state_changes.append(StateChange(state, reason, election, elected))
        self._send_leader_and_isr()

    def _send_leader_and_isr(self) -> None:
        """Each live replica that has not seen the current leader epoch becomes its leader or follower."""
        state = self.state
        partition_state = LeaderAndIsrState(state.leader, state.leader_epoch, state.isr, self.assignment,
                                         zk_version=self.zk_version)
        for replica in self.replicas.values():
            partition = replica.partition
            if partition is None or partition.leader_epoch >= state.leader_epoch:
                continue
            if state.leader == replica.broker_id:
                partition.make_leader(partition_state)
                replica.reconciled(state.leader_epoch)
            else:
                partition.make_follower(partition_state)
                replica.truncating = True

    def _write_isr(self, isr: tuple[int, ...], reason: str) -> None:
        """The leader's conditional write of a new ISR (same leader epoch), then its adoption."""
        self.state = LeaderAndIsr(self.state.leader, self.state.leader_epoch, isr)
        self.zk_version += 1
        self.state_changes.append(StateChange(self.state, reason))
        leader = self.leader
        assert leader is not None
        leader.update_isr(frozenset(isr), self.zk_version)
