"""One partition's replication rules: LEO, high watermark, ISR and leader epochs (no I/O but the log).

This is the pure core the broker's asyncio code drives. Time comes from an injected clock, so the
seeds' step-by-step tables and the failure scenarios can be replayed deterministically; the log is reached
through :class:`~broker.replication.partition_log.PartitionLog` (the broker's file-backed log, or an in-memory
one in tests).

Rules (Kafka 0.11+ in ZooKeeper mode):
- The leader's LEO moves on append. For each follower it records the fetch offset as that
  follower's remote LEO; HW = max(HW, min LEO over the ISR plus caught-up followers), and the HW
  does not advance while the ISR is smaller than min.insync.replicas.
- A follower sets its HW to min(leader HW from the fetch response, its own LEO).
- A follower is caught up when it fetched up to the leader's LEO at that moment; it stays in the
  ISR while it was caught up within replica.lag.time.max.ms, and rejoins once its LEO reaches both
  the HW and the start offset of the leader's current epoch (KAFKA-7128).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Generic, TypeVar

from broker.log.results import AppendInfo
from broker.replication.partition_log import PartitionLog
from protocol.apis.offsets import EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP
from protocol.errors import ErrorCode, KafkaError
from protocol.topic_partition import TopicPartition

Clock = Callable[[], int]
NO_LEADER = -1
#: What ListOffsets answers for a timestamp or an offset there is not.
NO_TIMESTAMP = NO_OFFSET = -1
LogT = TypeVar("LogT", bound=PartitionLog)


class Role(Enum):
    LEADER = "leader"
    FOLLOWER = "follower"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class LeaderAndIsrState:
    """What the controller says about a partition (a LeaderAndIsr partition state)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    zk_version: int = 0
    controller_epoch: int = 0


@dataclass(slots=True)
class RemoteReplica:
    """The leader's view of one follower."""

    broker_id: int
    #: The follower's LEO as of its last fetch; 0 (a lower bound of any LEO) until it first fetches.
    log_end_offset: int = 0
    log_start_offset: int = 0
    last_caught_up_time_ms: int = 0
    last_fetch_leader_log_end_offset: int = 0
    last_fetch_time_ms: int = 0

    def update_fetch_state(self, fetch_offset: int, log_start_offset: int, fetch_time_ms: int,
                           leader_end_offset: int) -> None:
        """Kafka's Replica.updateFetchState: caught up means it fetched the leader's LEO of that moment
        (or, at least, the LEO of the leader at its previous fetch, as of that fetch)."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, fetch_time_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_end_offset = fetch_offset
        self.log_start_offset = log_start_offset
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = fetch_time_ms

    def reset(self, now_ms: int, leader_end_offset: int, in_sync: bool) -> None:
        """On a leader change: LEO unknown (0) until it fetches; ISR members count as caught up now."""
        self.log_end_offset = 0
        self.log_start_offset = 0
        self.last_caught_up_time_ms = now_ms if in_sync else 0
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = now_ms if in_sync else 0


@dataclass(slots=True)
class ReadResult:
    """Records read for a fetch, with the offsets the response reports."""

    records: bytes
    high_watermark: int
    log_start_offset: int
    log_end_offset: int


@dataclass
class Partition(Generic[LogT]):
    """A replica of one partition hosted by this broker, on a log of type ``LogT``."""

    tp: TopicPartition
    local_broker_id: int
    log: LogT
    clock: Clock
    replica_lag_time_max_ms: int = 30000
    min_insync_replicas: int = 1
    role: Role = Role.NONE
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    #: The start offset of the leader's current epoch on the leader's log (set when becoming leader).
    leader_epoch_start_offset: int = -1
    isr: frozenset[int] = frozenset()
    replicas: tuple[int, ...] = ()
    zk_version: int = 0
    controller_epoch: int = 0
    remote_replicas: dict[int, RemoteReplica] = field(default_factory=dict)

    # -- leadership -------------------------------------------------------------------------

    def make_leader(self, state: LeaderAndIsrState) -> bool:
        """Become (or stay) leader for ``state``; returns True if this replica was not leader before.

        The new epoch starts at the current LEO in the epoch cache (Kafka's maybeAssignEpochStartOffset).
        """
        was_leader = self.role is Role.LEADER
        self._apply(state)
        self.role = Role.LEADER
        self.log.assign_epoch_start_offset(state.leader_epoch)
        self.leader_epoch_start_offset = self.log.log_end_offset
        now = self.clock()
        leo = self.log.log_end_offset
        self.remote_replicas = {
            broker_id: self.remote_replicas.get(broker_id, RemoteReplica(broker_id))
            for broker_id in state.replicas if broker_id != self.local_broker_id
        }
        for replica in self.remote_replicas.values():
            if not was_leader:
                replica.reset(now, leo, replica.broker_id in self.isr)
        self.maybe_increment_leader_hw()
        return not was_leader

    def make_follower(self, state: LeaderAndIsrState) -> bool:
        """Follow ``state.leader``; returns True if the leader changed (the fetcher must move)."""
        changed = self.role is not Role.FOLLOWER or self.leader_id != state.leader
        self._apply(state)
        self.role = Role.FOLLOWER
        self.remote_replicas = {}
        self.leader_epoch_start_offset = -1
        return changed

    def _apply(self, state: LeaderAndIsrState) -> None:
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.isr = frozenset(state.isr)
        self.replicas = tuple(state.replicas)
        self.zk_version = state.zk_version
        self.controller_epoch = state.controller_epoch

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    @property
    def effective_min_isr(self) -> int:
        """min.insync.replicas, capped at the number of replicas (Kafka's effectiveMinIsr)."""
        return min(self.min_insync_replicas, max(1, len(self.replicas)))

    # -- epoch fencing ----------------------------------------------------------------------

    def check_leader_epoch(self, current_leader_epoch: int, *, require_leader: bool = True) -> None:
        """Raise FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER as Kafka does
        for a request that names the leader epoch it believes current (-1: no check)."""
        if current_leader_epoch >= 0:
            if current_leader_epoch < self.leader_epoch:
                raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH,
                                 f"{self.tp}: leader epoch {current_leader_epoch} is older than {self.leader_epoch}")
            if current_leader_epoch > self.leader_epoch:
                raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH,
                                 f"{self.tp}: leader epoch {current_leader_epoch} is newer than {self.leader_epoch}")
        if require_leader and not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"broker {self.local_broker_id} is not the leader of {self.tp}")

    # -- the leader's write path ------------------------------------------------------------

    def append_records_to_leader(self, records: bytes, required_acks: int) -> AppendInfo:
        """Append a producer's batches; acks=all needs the ISR to hold min.insync.replicas first."""
        self.check_leader_epoch(-1)
        if required_acks == -1 and len(self.isr) < self.effective_min_isr:
            raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                             f"{self.tp}: ISR {sorted(self.isr)} is smaller than min.insync.replicas "
                             f"{self.effective_min_isr}")
        info = self.log.append_as_leader(records, self.leader_epoch)
        self.maybe_increment_leader_hw()
        return info

    def produce_completion(self, required_offset: int) -> ErrorCode | None:
        """For a waiting acks=all produce: its result once decided, None while it must still wait.

        The ISR shrinking below min.insync.replicas while it waits answers NOT_ENOUGH_REPLICAS_AFTER_APPEND
        at once: the HW is held back from then on, so waiting could only end in a timeout."""
        if not self.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if len(self.isr) < self.effective_min_isr:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        if self.log.high_watermark >= required_offset:
            return ErrorCode.NONE
        return None

    # -- the leader's view of followers -----------------------------------------------------

    def update_follower_fetch_state(self, follower_id: int, fetch_offset: int, follower_log_start_offset: int) -> bool:
        """Record a follower's fetch (its fetch offset is its LEO); returns True if the HW moved."""
        replica = self.remote_replicas.get(follower_id)
        if replica is None:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"broker {follower_id} is not a replica of {self.tp}")
        replica.update_fetch_state(fetch_offset, follower_log_start_offset, self.clock(), self.log.log_end_offset)
        return self.maybe_increment_leader_hw()

    def _caught_up(self, replica: RemoteReplica, now: int) -> bool:
        return now - replica.last_caught_up_time_ms <= self.replica_lag_time_max_ms

    def maybe_increment_leader_hw(self) -> bool:
        """HW = min LEO over the ISR and the caught-up followers (Kafka's maybeIncrementLeaderHW),
        held back while the ISR is below min.insync.replicas (KAFKA-15583). True if it moved."""
        if not self.is_leader or len(self.isr) < self.effective_min_isr:
            return False
        now = self.clock()
        new_hw = self.log.log_end_offset
        for replica in self.remote_replicas.values():
            if replica.broker_id in self.isr or self._caught_up(replica, now):
                new_hw = min(new_hw, replica.log_end_offset)
        if new_hw > self.log.high_watermark:
            self.log.update_high_watermark(new_hw)
            return True
        return False

    def out_of_sync_replicas(self) -> set[int]:
        """ISR followers not caught up within replica.lag.time.max.ms (Kafka's getOutOfSyncReplicas)."""
        now = self.clock()
        return {
            broker_id for broker_id in self.isr
            if broker_id != self.local_broker_id and broker_id in self.remote_replicas
            and not self._caught_up(self.remote_replicas[broker_id], now)
        }

    def is_follower_in_sync(self, follower_id: int) -> bool:
        """A follower may rejoin the ISR once its LEO reaches the HW and the current epoch's start."""
        replica = self.remote_replicas.get(follower_id)
        return (replica is not None
                and replica.log_end_offset >= self.log.high_watermark
                and replica.log_end_offset >= self.leader_epoch_start_offset)

    def update_isr(self, isr: frozenset[int], zk_version: int) -> bool:
        """Adopt an ISR the leader wrote to ZooKeeper; returns True if the HW moved."""
        self.isr = isr
        self.zk_version = zk_version
        return self.maybe_increment_leader_hw()

    # -- reads ------------------------------------------------------------------------------

    def read(self, fetch_offset: int, max_bytes: int, *, up_to_high_watermark: bool) -> ReadResult:
        """Batches from ``fetch_offset``: up to the HW for consumers, up to the LEO for followers."""
        log = self.log
        high_watermark, log_end_offset = log.high_watermark, log.log_end_offset
        limit = high_watermark if up_to_high_watermark else None
        caught_up = fetch_offset == (high_watermark if up_to_high_watermark else log_end_offset)
        records = b"" if caught_up else log.read(fetch_offset, max_bytes, max_offset=limit)
        return ReadResult(records, high_watermark, log.log_start_offset, log_end_offset)

    def list_offset(self, timestamp: int, *, for_consumer: bool) -> tuple[int, int]:
        """ListOffsets on the leader: ``(timestamp, offset)`` for EARLIEST_TIMESTAMP or EARLIEST_LOCAL_TIMESTAMP
        (the log start), LATEST_TIMESTAMP (the HW for a consumer, the LEO for a replica), MAX_TIMESTAMP (the first
        record with the largest timestamp) or a timestamp (its first record), a record only if below the HW; -1
        for what there is not. While a new leader's HW lags the start of its epoch (the HW was
        a follower's, a fetch behind the old leader's), a consumer asking for the latest offset, or for a
        timestamp without an offset below the HW, gets OFFSET_NOT_AVAILABLE (retriable) until the followers'
        fetches move the HW up (Kafka's KIP-207): told the HW, it could read to an end below the one the old
        leader gave it, and miss acknowledged records."""
        log = self.log
        lagging = for_consumer and log.high_watermark < self.leader_epoch_start_offset
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return NO_TIMESTAMP, log.log_start_offset
        if timestamp == LATEST_TIMESTAMP and not lagging:
            return NO_TIMESTAMP, log.high_watermark if for_consumer else log.log_end_offset
        if timestamp != LATEST_TIMESTAMP:
            found = (log.max_timestamp_and_offset() if timestamp == MAX_TIMESTAMP
                     else log.offset_for_timestamp(timestamp))
            if found is not None and found[1] < log.high_watermark:
                return found
            if not lagging:
                return NO_TIMESTAMP, NO_OFFSET
        raise KafkaError(ErrorCode.OFFSET_NOT_AVAILABLE,
                         f"{self.tp}: the high watermark {log.high_watermark} of leader epoch {self.leader_epoch} "
                         f"is below the epoch's start offset {self.leader_epoch_start_offset}")

    # -- the follower's write path ----------------------------------------------------------

    def append_records_to_follower(self, records: bytes, leader_high_watermark: int,
                                   leader_log_start_offset: int) -> AppendInfo | None:
        """Append what the leader sent, then HW = min(leader HW, own LEO); the log start follows the leader's."""
        info = self.log.append_as_follower(records) if records else None
        self.log.update_high_watermark(min(leader_high_watermark, self.log.log_end_offset))
        if leader_log_start_offset > self.log.log_start_offset:
            self.log.delete_records(min(leader_log_start_offset, self.log.high_watermark))
        return info
