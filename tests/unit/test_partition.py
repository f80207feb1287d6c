"""The pure partition rules: the seeds' HW/LEO walk-through, acks=all completion, ISR decisions, fencing."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.replication.partition import NO_OFFSET, NO_TIMESTAMP, LeaderAndIsrState, Partition, Role
from broker.replication.partition_log import PartitionLog
from protocol.apis.offsets import EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP
from protocol.errors import ErrorCode, KafkaError
from protocol.topic_partition import TopicPartition
from tests.unit.logutil import ManualClock, batch, open_log, values_of
from tests.unit.memory_log import MemoryLog

TP = TopicPartition("seed", 0)
LEADER, FOLLOWER = 0, 1


def replica(broker_id: int, clock: ManualClock, **settings: int) -> Partition[MemoryLog]:
    return Partition(TP, broker_id, MemoryLog(TP), clock, **settings)


def fetch(leader: Partition[MemoryLog], follower: Partition[MemoryLog]) -> None:
    """One FETCH round trip: the follower asks from its LEO; the leader records that offset as the
    follower's remote LEO, then answers with records and its HW; the follower appends."""
    fetch_offset = follower.log.log_end_offset
    leader.update_follower_fetch_state(follower.local_broker_id, fetch_offset, follower.log.log_start_offset)
    result = leader.read(fetch_offset, 1 << 20, up_to_high_watermark=False)
    follower.append_records_to_follower(result.records, result.high_watermark, result.log_start_offset)


def two_replicas(clock: ManualClock, **settings: int) -> tuple[Partition[MemoryLog], Partition[MemoryLog]]:
    state = LeaderAndIsrState(leader=LEADER, leader_epoch=0, isr=(LEADER, FOLLOWER), replicas=(LEADER, FOLLOWER))
    leader, follower = replica(LEADER, clock, **settings), replica(FOLLOWER, clock, **settings)
    leader.make_leader(state)
    follower.make_follower(state)
    return leader, follower


def snapshot(leader: Partition[MemoryLog], follower: Partition[MemoryLog]) -> dict[str, int]:
    return {
        "leader LEO": leader.log.log_end_offset, "leader HW": leader.log.high_watermark,
        "remote LEO": leader.remote_replicas[FOLLOWER].log_end_offset,
        "follower LEO": follower.log.log_end_offset, "follower HW": follower.log.high_watermark,
    }


def test_the_seeds_two_replica_walk_through():
    clock = ManualClock()
    leader, follower = two_replicas(clock)
    assert snapshot(leader, follower) == {
        "leader LEO": 0, "leader HW": 0, "remote LEO": 0, "follower LEO": 0, "follower HW": 0}

    leader.append_records_to_leader(batch(b"m1"), required_acks=-1)  # PRODUCE
    assert snapshot(leader, follower) == {
        "leader LEO": 1, "leader HW": 0, "remote LEO": 0, "follower LEO": 0, "follower HW": 0}

    fetch(leader, follower)  # first FETCH: offset 0; the record travels, the HW does not yet
    assert snapshot(leader, follower) == {
        "leader LEO": 1, "leader HW": 0, "remote LEO": 0, "follower LEO": 1, "follower HW": 0}

    fetch(leader, follower)  # second FETCH: offset 1 tells the leader the follower has the record
    assert snapshot(leader, follower) == {
        "leader LEO": 1, "leader HW": 1, "remote LEO": 1, "follower LEO": 1, "follower HW": 1}
    assert values_of(follower.log.read(0, 1000)) == [b"m1"]


def test_consumers_read_below_the_high_watermark_followers_up_to_the_leo():
    clock = ManualClock()
    leader, follower = two_replicas(clock)
    leader.append_records_to_leader(batch(b"a"), required_acks=1)
    leader.append_records_to_leader(batch(b"b"), required_acks=1)
    assert leader.read(0, 1 << 20, up_to_high_watermark=True).records == b""
    assert values_of(leader.read(0, 1 << 20, up_to_high_watermark=False).records) == [b"a", b"b"]
    fetch(leader, follower)
    fetch(leader, follower)
    assert values_of(leader.read(0, 1 << 20, up_to_high_watermark=True).records) == [b"a", b"b"]


def test_acks_all_completes_when_the_high_watermark_passes_the_batch():
    clock = ManualClock()
    leader, follower = two_replicas(clock)
    info = leader.append_records_to_leader(batch(b"x", b"y"), required_acks=-1)
    required = info.last_offset + 1
    assert leader.produce_completion(required) is None
    fetch(leader, follower)
    assert leader.produce_completion(required) is None
    fetch(leader, follower)
    assert leader.produce_completion(required) is ErrorCode.NONE


def test_a_single_replica_isr_commits_at_once():
    clock = ManualClock()
    alone = replica(LEADER, clock)
    alone.make_leader(LeaderAndIsrState(leader=LEADER, leader_epoch=0, isr=(LEADER,), replicas=(LEADER,)))
    info = alone.append_records_to_leader(batch(b"x"), required_acks=-1)
    assert alone.log.high_watermark == 1 and alone.produce_completion(info.last_offset + 1) is ErrorCode.NONE


def test_min_insync_replicas_refuses_acks_all_and_holds_the_high_watermark():
    clock = ManualClock()
    leader = replica(LEADER, clock, min_insync_replicas=2)
    leader.make_leader(LeaderAndIsrState(leader=LEADER, leader_epoch=0, isr=(LEADER,), replicas=(LEADER, FOLLOWER)))
    with pytest.raises(KafkaError) as refused:
        leader.append_records_to_leader(batch(b"x"), required_acks=-1)
    assert refused.value.code is ErrorCode.NOT_ENOUGH_REPLICAS
    leader.append_records_to_leader(batch(b"x"), required_acks=1)
    assert leader.log.high_watermark == 0  # ISR below min.insync.replicas: the HW stays


def test_min_insync_replicas_is_capped_at_the_replica_count():
    clock = ManualClock()
    leader = replica(LEADER, clock, min_insync_replicas=3)
    leader.make_leader(LeaderAndIsrState(leader=LEADER, leader_epoch=0, isr=(LEADER,), replicas=(LEADER,)))
    assert leader.effective_min_isr == 1
    leader.append_records_to_leader(batch(b"x"), required_acks=-1)


def test_isr_shrink_takes_the_stuck_follower_and_keeps_the_idle_caught_up_one():
    clock = ManualClock()
    state = LeaderAndIsrState(leader=LEADER, leader_epoch=0, isr=(0, 1, 2), replicas=(0, 1, 2))
    leader = replica(0, clock, replica_lag_time_max_ms=1000)
    leader.make_leader(state)
    leader.append_records_to_leader(batch(b"x"), required_acks=1)
    leader.update_follower_fetch_state(1, 1, 0)  # broker 1 fetched up to the LEO
    leader.update_follower_fetch_state(2, 0, 0)  # broker 2 is behind
    clock.advance(1500)  # nothing is produced: broker 1 is idle but was caught up at its last fetch
    leader.update_follower_fetch_state(1, 1, 0)
    assert leader.out_of_sync_replicas() == {2}


def test_a_follower_below_the_current_epoch_start_does_not_rejoin():
    clock = ManualClock()
    leader = replica(LEADER, clock)
    leader.make_leader(LeaderAndIsrState(leader=LEADER, leader_epoch=0, isr=(LEADER,), replicas=(LEADER, FOLLOWER)))
    for value in (b"a", b"b", b"c"):
        leader.append_records_to_leader(batch(value), required_acks=1)
    leader.make_leader(LeaderAndIsrState(leader=LEADER, leader_epoch=1, isr=(LEADER,), replicas=(LEADER, FOLLOWER)))
    assert leader.leader_epoch_start_offset == 3
    leader.log.update_high_watermark(2)
    leader.update_follower_fetch_state(FOLLOWER, 2, 0)
    assert not leader.is_follower_in_sync(FOLLOWER)  # LEO 2 reaches the HW but not the epoch start (3)
    leader.update_follower_fetch_state(FOLLOWER, 3, 0)
    assert leader.is_follower_in_sync(FOLLOWER)


def _failed_over_to_the_follower(clock: ManualClock) -> tuple[Partition[MemoryLog], Partition[MemoryLog]]:
    """(new leader, new follower): m1 committed, m2 written on both replicas, the follower's HW still 1 (it learns
    the HW from its next fetch); then the follower elected at epoch 1, which starts at offset 2, and the old leader
    following it."""
    leader, follower = two_replicas(clock)
    leader.append_records_to_leader(batch(b"m1", timestamp=1000), required_acks=-1)
    fetch(leader, follower)
    fetch(leader, follower)
    leader.append_records_to_leader(batch(b"m2", timestamp=2000), required_acks=-1)
    fetch(leader, follower)
    assert snapshot(leader, follower) == {
        "leader LEO": 2, "leader HW": 1, "remote LEO": 1, "follower LEO": 2, "follower HW": 1}
    state = LeaderAndIsrState(leader=FOLLOWER, leader_epoch=1, isr=(LEADER, FOLLOWER), replicas=(LEADER, FOLLOWER))
    follower.make_leader(state)
    leader.make_follower(state)
    return follower, leader


def test_a_new_leader_whose_hw_lags_its_epoch_start_tells_consumers_no_latest_offset_until_it_catches_up():
    clock = ManualClock()
    new_leader, new_follower = _failed_over_to_the_follower(clock)
    assert (new_leader.leader_epoch_start_offset, new_leader.log.high_watermark) == (2, 1)
    for timestamp in (LATEST_TIMESTAMP, 2000, 3000, MAX_TIMESTAMP):  # the latest; m2's (at the HW); none; m2's
        with pytest.raises(KafkaError) as lagging:
            new_leader.list_offset(timestamp, for_consumer=True)
        assert lagging.value.code is ErrorCode.OFFSET_NOT_AVAILABLE and lagging.value.code.retriable
    assert new_leader.list_offset(EARLIEST_TIMESTAMP, for_consumer=True) == (NO_TIMESTAMP, 0)
    assert new_leader.list_offset(EARLIEST_LOCAL_TIMESTAMP, for_consumer=True) == (NO_TIMESTAMP, 0)
    assert new_leader.list_offset(1000, for_consumer=True) == (1000, 0)  # m1, below the HW
    assert new_leader.list_offset(LATEST_TIMESTAMP, for_consumer=False) == (NO_TIMESTAMP, 2)  # a replica: the LEO

    new_leader.update_follower_fetch_state(LEADER, new_follower.log.log_end_offset, 0)  # its next fetch, from 2
    assert new_leader.log.high_watermark == 2
    assert new_leader.list_offset(LATEST_TIMESTAMP, for_consumer=True) == (NO_TIMESTAMP, 2)
    assert new_leader.list_offset(2000, for_consumer=True) == (2000, 1)
    assert new_leader.list_offset(MAX_TIMESTAMP, for_consumer=True) == (2000, 1)
    assert new_leader.list_offset(3000, for_consumer=True) == (NO_TIMESTAMP, NO_OFFSET)


def test_leader_epoch_fencing():
    clock = ManualClock()
    leader, follower = two_replicas(clock)
    leader.make_leader(LeaderAndIsrState(leader=LEADER, leader_epoch=3, isr=(0, 1), replicas=(0, 1)))
    leader.check_leader_epoch(3)
    leader.check_leader_epoch(-1)
    for asked, code in ((2, ErrorCode.FENCED_LEADER_EPOCH), (4, ErrorCode.UNKNOWN_LEADER_EPOCH)):
        with pytest.raises(KafkaError) as fenced:
            leader.check_leader_epoch(asked)
        assert fenced.value.code is code
    with pytest.raises(KafkaError) as not_leader:
        follower.append_records_to_leader(batch(b"x"), required_acks=1)
    assert not_leader.value.code is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert follower.role is Role.FOLLOWER


def test_a_new_leader_stamps_its_epoch_at_its_leo():
    clock = ManualClock()
    leader, follower = two_replicas(clock)
    leader.append_records_to_leader(batch(b"a", b"b"), required_acks=1)
    fetch(leader, follower)
    follower.make_leader(LeaderAndIsrState(leader=FOLLOWER, leader_epoch=1, isr=(FOLLOWER,), replicas=(0, 1)))
    assert [(e.epoch, e.start_offset) for e in follower.log.epoch_cache.entries] == [(0, 0), (1, 2)]
    follower.append_records_to_leader(batch(b"c"), required_acks=1)
    assert follower.log.read(2, 100) and follower.log.end_offset_for_epoch(0) == (0, 2)


def test_an_isr_shrinking_below_min_insync_while_waiting_answers_after_append():
    clock = ManualClock()
    leader, _follower = two_replicas(clock, min_insync_replicas=2)
    info = leader.append_records_to_leader(batch(b"x"), required_acks=-1)
    assert leader.produce_completion(info.last_offset + 1) is None
    leader.update_isr(frozenset({LEADER}), zk_version=1)
    assert leader.produce_completion(info.last_offset + 1) is ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert leader.log.high_watermark == 0


def test_the_file_log_and_the_memory_log_are_partition_logs(tmp_path: Path):
    file_log = open_log(tmp_path)
    try:
        assert isinstance(file_log, PartitionLog) and isinstance(MemoryLog(TP), PartitionLog)
    finally:
        file_log.close()
