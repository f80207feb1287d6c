"""The seeds' failure scenarios and Kafka's leader-epoch acceptance tests, step by step on the pure core.

Each scenario drives tests/sim/cluster.py (Partition objects over real logs, the controller's election
rules, the fetcher's truncation order) and asserts, after the steps that matter, the exact LEO, HW,
epoch-cache entries and record values of every replica. Brokers are named A=0, B=1, C=2; A is the first
replica of the assignment, so it leads epoch 0.

Leader epochs count every state change the controller writes, as in Kafka's ZooKeeper mode: a follower
leaving the ISR because its broker died also starts a new epoch (same leader). That is why the epochs
below run ahead of the seeds' figures, which only count leader changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.replication.truncation import HIGH_WATERMARK_MODE, LEADER_EPOCH_MODE
from controller.election import NO_LEADER, LeaderAndIsr
from protocol.errors import ErrorCode
from tests.sim.cluster import ACKS_ALL, Cluster, Fetched, ReplicaView, TruncationRound, read_batches
from tests.unit.test_pure_core import FORBIDDEN, ROOT, imported_roots

A, B, C = 0, 1, 2
MODES = [HIGH_WATERMARK_MODE, LEADER_EPOCH_MODE]


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    """Cluster(tmp_path, size, **settings), closed after the test."""
    clusters: list[Cluster] = []

    def make(size: int, **settings: Any) -> Cluster:
        clusters.append(Cluster(tmp_path, size, **settings))
        return clusters[-1]

    yield make
    for cluster in clusters:
        cluster.close()


def replicate(cluster: Cluster, *values: bytes, acks: int = ACKS_ALL) -> None:
    """Produce each value in its own batch and let every follower that reaches the leader catch up after each."""
    for value in values:
        produce = cluster.produce(value, acks=acks)
        for follower in [b for b in cluster.assignment if b != cluster.state.leader and cluster.can_fetch(b)]:
            cluster.catch_up(follower)
        assert produce.result is ErrorCode.NONE


def bounce(cluster: Cluster, broker: int) -> None:
    """Kafka's test `bounce`: controlled shutdown, start again, and wait until it is back in the ISR."""
    cluster.controlled_shutdown(broker)
    cluster.restart(broker)
    cluster.catch_up(broker)
    assert broker in cluster.state.isr


@pytest.mark.parametrize("mode", MODES)
def test_seed_003_follower_truncating_to_its_hw_loses_an_acknowledged_record(make_cluster, mode):
    """Seed 003 (and KIP-101's first scenario): B restarts while its HW lags A's by one fetch round.

    Unclean election is on, as it was by default before 0.11 and as in Kafka's own KIP-101 acceptance
    tests: with it off, the controller takes the restarted B out of the ISR and the partition would
    just stay offline when A dies. The elections are the same in both modes; only the truncation rule
    differs, and it alone decides whether the acknowledged m1 survives.
    """
    cluster = make_cluster(2, truncation_mode=mode, unclean_leader_election=True)
    replicate(cluster, b"m0")
    m1 = cluster.produce(b"m1")
    cluster.fetch(B)  # B appends m1; the response carries HW 1
    cluster.flush(B)  # B's disk: m0, m1; its HW checkpoint: 1
    cluster.fetch(B, lose_response=True)  # A learns B has m1: HW 2, m1 acknowledged; B dies before the answer
    cluster.flush(A)
    assert m1.result is ErrorCode.NONE
    assert cluster.view(A) == ReplicaView(2, 2, [(0, 0)], [b"m0", b"m1"])
    assert cluster.view(B) == ReplicaView(2, 1, [(0, 0)], [b"m0", b"m1"])

    cluster.crash(B)
    assert cluster.state == LeaderAndIsr(A, 1, (A,))
    assert cluster.view(A) == ReplicaView(2, 2, [(0, 0), (1, 2)], [b"m0", b"m1"])
    cluster.restart(B)
    assert cluster.view(B) == ReplicaView(2, 1, [(0, 0)], [b"m0", b"m1"])

    # B, follower of A in epoch 1, truncates before fetching.
    if mode == HIGH_WATERMARK_MODE:
        assert cluster.fetch(B) == TruncationRound(None, None, 1, True)  # to its HW: m1 goes
        assert cluster.view(B) == ReplicaView(1, 1, [(0, 0)], [b"m0"])
    else:
        assert cluster.fetch(B) == TruncationRound(0, (0, 2), 2, True)  # epoch 0 ends at 2 on A: keep m1
        assert cluster.view(B) == ReplicaView(2, 1, [(0, 0)], [b"m0", b"m1"])

    cluster.crash(A)  # before B fetches again
    assert cluster.state == LeaderAndIsr(B, 2, (B,)) and cluster.state_changes[-1].election.unclean
    cluster.restart(A)
    assert cluster.view(A) == ReplicaView(2, 2, [(0, 0)], [b"m0", b"m1"])

    if mode == HIGH_WATERMARK_MODE:
        assert cluster.view(B) == ReplicaView(1, 1, [(0, 0), (2, 1)], [b"m0"])
        assert cluster.fetch(A) == TruncationRound(None, None, 2, True)  # its own HW, 2: nothing to cut yet
        assert cluster.fetch(A) == Fetched(2, 0, 1, out_of_range=True)  # past B's LEO: truncate to it
        assert cluster.view(A) == ReplicaView(1, 1, [(0, 0)], [b"m0"])
    else:
        assert cluster.view(B) == ReplicaView(2, 2, [(0, 0), (2, 2)], [b"m0", b"m1"])
        assert cluster.fetch(A) == TruncationRound(0, (0, 2), 2, True)
        assert cluster.view(A) == ReplicaView(2, 2, [(0, 0)], [b"m0", b"m1"])

    # Seed 002's epilogue: B's first write opens its epoch in the cache (epoch 2 here, 1 in the figure).
    replicate(cluster, b"m2")
    if mode == HIGH_WATERMARK_MODE:  # the acknowledged m1 is gone from both replicas
        expected = ReplicaView(2, 2, [(0, 0), (2, 1)], [b"m0", b"m2"])
    else:
        expected = ReplicaView(3, 3, [(0, 0), (2, 2)], [b"m0", b"m1", b"m2"])
    assert cluster.view(A) == cluster.view(B) == expected


@pytest.mark.parametrize("mode", MODES)
def test_seed_002_both_replicas_crash_and_the_shorter_log_leads(make_cluster, mode):
    """Seed 002's second scenario: A has m0, m1 (HW 2), B has m1 only in memory; both crash, B comes
    back first and leads, and takes m2 at offset 1 (min.insync.replicas=1, acks=1)."""
    cluster = make_cluster(2, truncation_mode=mode)
    replicate(cluster, b"m0", acks=1)
    cluster.flush(A)
    cluster.flush(B)  # B's disk: m0, HW 1
    cluster.produce(b"m1", acks=1)
    cluster.fetch(B)
    cluster.fetch(B, lose_response=True)
    cluster.flush(A)  # A's disk: m0, m1, HW 2
    assert cluster.view(A) == ReplicaView(2, 2, [(0, 0)], [b"m0", b"m1"])
    assert cluster.view(B) == ReplicaView(2, 1, [(0, 0)], [b"m0", b"m1"])

    cluster.crash(A)  # "at the same time": A's death is handled first, so B leads for a moment
    assert cluster.state == LeaderAndIsr(B, 1, (B,))
    cluster.crash(B)  # B loses the unflushed m1; it is the ISR's last member, so the ISR keeps it
    assert cluster.state == LeaderAndIsr(NO_LEADER, 2, (B,))
    cluster.restart(B)  # B comes back first and, as the ISR's only member, leads (a clean election)
    assert cluster.state == LeaderAndIsr(B, 3, (B,)) and not cluster.state_changes[-1].election.unclean
    assert cluster.view(B) == ReplicaView(1, 1, [(0, 0), (3, 1)], [b"m0"])
    cluster.produce(b"m2", acks=1)
    assert cluster.view(B) == ReplicaView(2, 2, [(0, 0), (3, 1)], [b"m0", b"m2"])

    cluster.restart(A)
    assert cluster.view(A) == ReplicaView(2, 2, [(0, 0)], [b"m0", b"m1"])
    if mode == HIGH_WATERMARK_MODE:
        # A's HW (2) is the partition's HW: it keeps everything, and fetches from 2 = B's LEO.
        assert cluster.catch_up(A) == [TruncationRound(None, None, 2, True), Fetched(2, 0, 2)]
        assert cluster.view(A) == ReplicaView(2, 2, [(0, 0)], [b"m0", b"m1"])
        a_batches, b_batches = read_batches(cluster.log(A)), read_batches(cluster.log(B))
        assert a_batches[0] == b_batches[0]
        assert (a_batches[1].values, b_batches[1].values) == ((b"m1",), (b"m2",))  # diverged below the HW
    else:
        # Epoch 0 ends at 1 on B: A drops m1 and fetches m2.
        assert cluster.catch_up(A) == [TruncationRound(0, (0, 1), 1, True), Fetched(1, 1, 2), Fetched(2, 0, 2)]
        assert cluster.view(A) == cluster.view(B) == ReplicaView(2, 2, [(0, 0), (3, 1)], [b"m0", b"m2"])
        assert read_batches(cluster.log(A)) == read_batches(cluster.log(B))


def test_kafka_leader_epoch_basic_workflow(make_cluster):
    """EpochDrivenReplicationProtocolAcceptanceTest.shouldFollowLeaderEpochBasicWorkflow (Kafka 3.8)."""
    cluster = make_cluster(2)

    def epochs(broker: int) -> list[tuple[int, int]]:
        return cluster.view(broker).epochs

    def latest_epoch(broker: int) -> int:
        return read_batches(cluster.log(broker))[-1].leader_epoch

    replicate(cluster, b"m0")
    assert (latest_epoch(A), latest_epoch(B)) == (0, 0)
    assert epochs(A) == epochs(B) == [(0, 0)]

    bounce(cluster, B)  # B leaves the ISR: epoch 1, which the leader opens at its LEO at once
    assert epochs(A) == [(0, 0), (1, 1)]
    assert epochs(B) == [(0, 0)]  # a follower learns epochs from the batches only

    replicate(cluster, b"m1")
    assert epochs(A) == epochs(B) == [(0, 0), (1, 1)]
    assert (latest_epoch(A), latest_epoch(B)) == (1, 1)

    bounce(cluster, A)  # leadership moves to B: epoch 2
    assert cluster.state.leader == B
    assert epochs(B) == [(0, 0), (1, 1), (2, 2)]
    assert epochs(A) == [(0, 0), (1, 1)]

    replicate(cluster, b"m2")
    assert (latest_epoch(A), latest_epoch(B)) == (2, 2)
    assert epochs(A) == epochs(B) == [(0, 0), (1, 1), (2, 2)]
    assert cluster.epoch_checkpoint_text(A) == cluster.epoch_checkpoint_text(B) == "0\n3\n0 0\n1 1\n2 2\n"


def test_kip_279_follower_epochs_0_2_4_converge_on_leader_epochs_1_3_5(make_cluster):
    """Two logs that share no epoch converge in three OffsetsForLeaderEpoch rounds (KIP-279).

    The histories are built with unclean elections and no replication: each replica leads the
    epochs of its parity in turn (it crashes after flushing, so nothing is lost, and the other,
    the only live replica, takes over).
    """
    cluster = make_cluster(2, unclean_leader_election=True)
    writes = {0: [b"f0", b"f1"], 1: [b"l0", b"l1", b"l2"], 2: [b"f2", b"f3"], 3: [b"l3"],
              4: [b"f4", b"f5"], 5: [b"l4", b"l5", b"l6"]}
    for epoch, values in writes.items():
        assert cluster.state.leader_epoch == epoch
        leader = cluster.state.leader
        for value in values:
            cluster.produce(value, acks=1)
        if epoch < 5:
            cluster.flush(leader)
            cluster.crash(leader)
            cluster.restart(leader)
    assert cluster.state == LeaderAndIsr(B, 5, (B,))
    assert cluster.view(A) == ReplicaView(6, 6, [(0, 0), (2, 2), (4, 4)], [b"f0", b"f1", b"f2", b"f3", b"f4", b"f5"])
    assert cluster.view(B).epochs == [(1, 0), (3, 3), (5, 4)]

    assert cluster.fetch(A) == TruncationRound(4, (3, 4), 4, False)  # B has no epoch 4; A has no epoch 3
    assert cluster.view(A).epochs == [(0, 0), (2, 2)]
    assert cluster.fetch(A) == TruncationRound(2, (1, 3), 2, False)
    assert cluster.view(A).epochs == [(0, 0)]
    assert cluster.fetch(A) == TruncationRound(0, (0, 0), 0, True)  # epoch 0 ends where B's log starts
    assert cluster.view(A) == ReplicaView(0, 0, [], [])
    cluster.catch_up(A)
    assert cluster.view(A) == cluster.view(B) == ReplicaView(
        7, 7, [(1, 0), (3, 3), (5, 4)], [b"l0", b"l1", b"l2", b"l3", b"l4", b"l5", b"l6"])
    assert read_batches(cluster.log(A)) == read_batches(cluster.log(B))


@pytest.mark.parametrize("mode", MODES)
def test_unclean_elections_with_alternating_failures(make_cluster, mode):
    """EpochDrivenReplicationProtocolAcceptanceTest.logsShouldNotDivergeOnUncleanLeaderElections: the
    brokers stop and start in turn, each time electing the other uncleanly; with leader epochs the logs
    end identical, with high-watermark truncation they diverge."""
    cluster = make_cluster(2, truncation_mode=mode, unclean_leader_election=True)
    replicate(cluster, b"m0", acks=1)
    cluster.controlled_shutdown(A)
    assert cluster.state == LeaderAndIsr(B, 1, (B,))
    cluster.produce(b"b1", acks=1)
    cluster.controlled_shutdown(B)
    assert cluster.state == LeaderAndIsr(NO_LEADER, 2, (B,))
    cluster.restart(A)
    assert cluster.state == LeaderAndIsr(A, 3, (A,)) and cluster.state_changes[-1].election.unclean
    for value in (b"a1", b"a2", b"a3"):
        cluster.produce(value, acks=1)
    cluster.controlled_shutdown(A)
    cluster.restart(B)
    assert cluster.state == LeaderAndIsr(B, 5, (B,))
    cluster.produce(b"b2", acks=1)
    cluster.controlled_shutdown(B)
    cluster.restart(A)
    assert cluster.state == LeaderAndIsr(A, 7, (A,))
    for value in (b"a4", b"a5"):
        cluster.produce(value, acks=1)
    assert cluster.view(A) == ReplicaView(6, 6, [(0, 0), (3, 1), (7, 4)], [b"m0", b"a1", b"a2", b"a3", b"a4", b"a5"])

    cluster.restart(B)
    assert cluster.view(B) == ReplicaView(3, 3, [(0, 0), (1, 1), (5, 2)], [b"m0", b"b1", b"b2"])
    outcomes = cluster.catch_up(B)
    if mode == HIGH_WATERMARK_MODE:
        assert outcomes[0] == TruncationRound(None, None, 3, True)  # its HW is its LEO: it keeps b1, b2
        assert cluster.view(B).values == [b"m0", b"b1", b"b2", b"a3", b"a4", b"a5"]
        assert read_batches(cluster.log(A))[1:3] != read_batches(cluster.log(B))[1:3]
    else:
        assert outcomes[:2] == [TruncationRound(5, (3, 4), 2, False), TruncationRound(1, (0, 1), 1, True)]
        assert cluster.view(B) == cluster.view(A)
        assert read_batches(cluster.log(A)) == read_batches(cluster.log(B))


def test_kafka_7128_a_follower_below_the_leaders_epoch_start_stays_out_of_the_isr(make_cluster):
    """KAFKA-7128: after a failover the new leader's HW lags (here held back by min.insync.replicas=2);
    a follower that reaches that HW but not the start of the leader's epoch must not join the ISR, or
    its election would lose records committed under the previous leader."""
    cluster = make_cluster(3, min_insync_replicas=2)
    cluster.isolate(C)  # C never fetched
    cluster.advance(1500)
    cluster.catch_up(B)
    assert cluster.shrink_isr() == {C}
    assert cluster.state == LeaderAndIsr(A, 0, (A, B))
    replicate(cluster, b"m0")
    m1 = cluster.produce(b"m1")
    cluster.fetch(B)
    cluster.fetch(B, lose_response=True)
    assert m1.result is ErrorCode.NONE  # committed by the ISR (A, B)
    assert cluster.view(A) == ReplicaView(2, 2, [(0, 0)], [b"m0", b"m1"])
    assert cluster.view(B) == ReplicaView(2, 1, [(0, 0)], [b"m0", b"m1"])
    assert cluster.view(C) == ReplicaView(0, 0, [], [])

    cluster.crash(A)
    assert cluster.state == LeaderAndIsr(B, 1, (B,))
    leader = cluster.leader
    assert leader.leader_epoch_start_offset == 2
    assert cluster.view(B) == ReplicaView(2, 1, [(0, 0), (1, 2)], [b"m0", b"m1"])  # HW held: ISR below 2

    cluster.reconnect(C)
    assert cluster.fetch(C) == TruncationRound(None, None, 0, True)  # no epochs yet: its HW
    assert cluster.fetch(C, max_bytes=1) == Fetched(0, 1, 1)
    assert cluster.fetch(C, max_bytes=1) == Fetched(1, 1, 1)
    # C's LEO was 1 at that fetch: it reached the HW (1) but not epoch 1's start (2): it stays out.
    assert leader.remote_replicas[C].log_end_offset == 1 and not leader.is_follower_in_sync(C)
    assert cluster.state.isr == (B,)
    assert cluster.view(C) == ReplicaView(2, 1, [(0, 0)], [b"m0", b"m1"])

    assert cluster.fetch(C) == Fetched(2, 0, 2)  # now at 2: it joins, and the HW moves
    assert cluster.state == LeaderAndIsr(B, 1, (B, C))
    assert cluster.view(B).high_watermark == 2

    cluster.crash(B)
    assert cluster.state == LeaderAndIsr(C, 2, (C,))
    assert cluster.view(C) == ReplicaView(2, 2, [(0, 0), (2, 2)], [b"m0", b"m1"])  # m1 survives


def test_the_harness_crash_keeps_flushed_bytes_and_recovery_cuts_a_torn_batch(make_cluster):
    cluster = make_cluster(1)
    for value in (b"a", b"b", b"c"):
        cluster.produce(value, acks=1)
        if value == b"a":
            cluster.flush(A)
    cluster.crash(A, written_back=0.75)  # of b and c (not flushed) the OS wrote b and half of c
    assert cluster.state == LeaderAndIsr(NO_LEADER, 1, (A,))
    cluster.restart(A)
    assert cluster.state == LeaderAndIsr(A, 2, (A,))
    assert cluster.view(A) == ReplicaView(2, 2, [(0, 0), (2, 2)], [b"a", b"b"])
    assert cluster.log(A).bytes_truncated_by_recovery > 0


@pytest.mark.parametrize("name", ["cluster.py", "test_scenarios.py", "test_simulation.py"])
def test_the_harness_imports_no_io_framework(name):
    assert imported_roots(ROOT / "tests" / "sim" / name) & FORBIDDEN == set()
