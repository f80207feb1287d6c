"""Seeded random schedules of the replication core, with Kafka's invariants checked after every step.

Each seed builds a 3-replica Cluster (tests/sim/cluster.py: Partition objects over real logs, the election
rules of controller/election.py, leader-epoch truncation), draws its settings (min.insync.replicas 1 or 2,
unclean.leader.election.enable on in about a quarter of the seeds) and runs a schedule drawn from
random.Random(seed): produce (acks=all and acks=1, batches of 1-3 records), fetch (one follower, one round
trip, a third of them limited to one batch; now and then the follower never reads the answer), a consumer's
read, flush, crash (losing the unflushed bytes, or all but a random part of them, which can tear a batch),
restart, controlled shutdown, preferred leader election, isolate/reconnect a broker (cut from the other
brokers), clock advance and the leader's ISR shrink check (the ISR grows inside fetches, as in Kafka).

Some elections knowingly rewrite history: an unclean one, and one whose leader lost records in a crash and
has not reconciled since (the ISR's last member coming back without its unflushed tail; Kafka elects it as
a clean ISR member, and its guarantee does not cover a crash of every in-sync replica). Such a "lossy"
election in epoch e has a cut: the leader's log end for a crash loss; for an unclean leader, its effective
HW just before (below it, it agreed with everyone: invariant 1). A replica's *effective HW* is its HW,
capped at the cut of every lossy election newer than the epoch at which it last reconciled its log
(became leader, or completed truncation): its HW vouches for a history that such an election replaced.
Seeds without lossy elections check the plain HW.

The invariants, checked after EVERY step (a failure names the one it broke):

1. No divergence below the HW: any two live replicas hold identical batches (offsets, leader epoch, records)
   up to the smaller of their effective HWs. Below the HW records are committed; replicas disagreeing there
   is the KIP-101 divergence (seed 002).
   1b. A clean election that is not lossy picks a leader whose LEO is at least every live replica's
   effective HW: the ISR holds every committed record (Kafka elects only from the ISR).
2. The leader's HW is never above the LEO of any ISR member, and every ISR member of a partition that has
   a leader is live (Kafka: HW = min LEO over the ISR; the controller drops dead brokers from the ISR).
3. Acknowledged acks=all records are never lost: at its acknowledgement a record is guarded by the ISR of
   that moment; the guard follows the ISR (replicas that join it, which they do only once they hold
   everything below the HW, are added; members that leave it, or lose the record in a crash, are removed)
   and an unclean election voids every guard. While the guard is not empty, its live members and the
   leader hold the record at its offset. This is DESIGN.md's "never lost while one replica of the ISR
   survives with its disk, unclean election off".
4. Offsets served to consumers never go backwards: a consumer reading from the leader gets batches that
   start exactly at its position and end below the leader's HW; its position is never past the leader's
   LEO and the records below it stay the ones it read. A lossy election moves it back to its cut.
5. The leader's HW does not advance while the ISR is smaller than min.insync.replicas (KAFKA-15583).
6. Every replica's epoch cache agrees with its batches: one entry per run of batches of one leader epoch,
   at the run's first offset, plus at most one at the LEO (a leader's epoch before its first batch).
   OffsetsForLeaderEpoch answers, and so every truncation, come from this cache.

Run (make test):  .venv/bin/pytest -q tests/sim/test_simulation.py     SIM_SEEDS seeds (default 300)
More (sim-long):  SIM_SEEDS=5000 .venv/bin/pytest -q tests/sim/test_simulation.py   (SIM_SEED_BASE: first)
One seed:         SIM_SEED=1234 .venv/bin/pytest -q tests/sim/test_simulation.py
                  (a failure prints this line, the seed's settings and every step with its outcome)
SIM_STEPS sets the steps per seed (default 120).
"""

from __future__ import annotations

import itertools
import os
import random
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from broker.log.log import Log
from broker.replication.partition import Partition
from controller.election import NO_LEADER
from protocol.errors import ErrorCode, KafkaError
from tests.sim.cluster import ACKS_ALL, Batch, Cluster, Produce, StateChange, decode

REPLICAS = 3
SHM = Path("/dev/shm")
DEFAULT_STEPS = 120
STEPS = int(os.environ.get("SIM_STEPS", DEFAULT_STEPS))


def _seeds() -> list[int]:
    if "SIM_SEED" in os.environ:
        return [int(os.environ["SIM_SEED"])]
    base = int(os.environ.get("SIM_SEED_BASE", "0"))
    return list(range(base, base + int(os.environ.get("SIM_SEEDS", "300"))))


class InvariantViolation(AssertionError):
    """An invariant of the module docstring does not hold."""

    def __init__(self, invariant: str, detail: str) -> None:
        super().__init__(f"invariant {invariant}: {detail}")


class SeedFailed(AssertionError):
    """A seed's run failed: the message reports the seed, how to rerun it and every step taken."""


@dataclass
class AckedRecord:
    """A record acknowledged to an acks=all producer, and the replicas that guard it (invariant 3)."""

    offset: int
    value: bytes
    guard: set[int]


@dataclass
class Consumer:
    """A consumer reading committed records from the leader (invariant 4)."""

    position: int = 0
    seen: dict[int, bytes | None] = field(default_factory=dict)


def _records(batches: list[Batch]) -> dict[int, bytes | None]:
    return {batch.base_offset + i: value for batch in batches for i, value in enumerate(batch.values)}


class Checker:
    """Checks the invariants of the module docstring on a Cluster after every step."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.waiting: list[Produce] = []
        self.acked: list[AckedRecord] = []
        self.consumer = Consumer()
        self.cuts: list[tuple[int, int]] = []  # (leader epoch, cut) of the lossy elections
        self.changes_seen = 0
        self.isr = set(cluster.state.isr)
        self.incarnations = {b: replica.partition for b, replica in cluster.replicas.items()}
        self.high_watermarks = self._high_watermarks()
        self._decoded: dict[int, tuple[bytes, list[Batch]]] = {}

    # -- the client actions of a schedule ---------------------------------------------------------

    def produce(self, values: tuple[bytes, ...], acks: int) -> str:
        try:
            produce = self.cluster.produce(*values, acks=acks)
        except KafkaError as e:
            if e.code not in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_ENOUGH_REPLICAS):
                raise
            return e.code.name
        if acks == ACKS_ALL:
            self.waiting.append(produce)
        return f"offsets {produce.base_offset}..{produce.last_offset}"

    def consume(self) -> str:
        leader = self.cluster.leader
        if leader is None:
            return "offline"
        consumer, high_watermark = self.consumer, leader.log.high_watermark
        for batch in self.cluster.read_committed(consumer.position):
            if batch.base_offset != consumer.position or batch.last_offset >= high_watermark:
                raise InvariantViolation("4", f"at position {consumer.position} with the HW at {high_watermark} "
                                              f"the consumer got {batch}")
            consumer.seen.update(_records([batch]))
            consumer.position = batch.last_offset + 1
        return f"position {consumer.position}"

    # -- after every step -------------------------------------------------------------------------

    def check(self) -> None:
        cluster = self.cluster
        logs = {b: replica.log for b, replica in cluster.replicas.items() if replica.live}
        batches = {b: self._batches(b, log) for b, log in logs.items()}
        records = {b: _records(bs) for b, bs in batches.items()}
        self._note_restarts(logs)
        for change in cluster.state_changes[self.changes_seen:]:
            self._note_state_change(change, logs)
        self.changes_seen = len(cluster.state_changes)
        self._note_acks()
        self._check_no_divergence(batches)
        self._check_isr_and_high_watermark(logs)
        self._check_acked_records(records)
        self._check_consumer(records)
        self._check_epoch_caches(logs, batches)
        self.high_watermarks = self._high_watermarks()

    def effective_high_watermark(self, broker_id: int) -> int:
        replica = self.cluster.replicas[broker_id]
        return min([replica.log.high_watermark, *self._cuts_after(replica.reconciled_epoch)])

    def _cuts_after(self, epoch: int) -> list[int]:
        return [cut for cut_epoch, cut in self.cuts if cut_epoch > epoch]

    def _batches(self, broker_id: int, log: Log) -> list[Batch]:
        """The replica's batches, decoding only what was appended since the last step when it just grew."""
        data = log.read(log.log_start_offset, 1 << 30)
        known, batches = self._decoded.get(broker_id, (b"", []))
        if data != known:
            batches = batches + decode(data[len(known):]) if data.startswith(known) else decode(data)
            self._decoded[broker_id] = (data, batches)
        return batches

    def _note_restarts(self, logs: dict[int, Log]) -> None:
        """A replica back from a crash that cost records no longer guards the records it lost."""
        for b, replica in self.cluster.replicas.items():
            if replica.partition is not None and replica.partition is not self.incarnations[b]:
                lost_from = logs[b].log_end_offset
                if lost_from < replica.log_end_offset_at_crash:
                    for record in self.acked:
                        if record.offset >= lost_from:
                            record.guard.discard(b)
            self.incarnations[b] = replica.partition

    def _note_state_change(self, change: StateChange, logs: dict[int, Log]) -> None:
        isr = set(change.state.isr)
        for record in self.acked:
            if record.guard:
                record.guard = (record.guard | (isr - self.isr)) & isr
        self.isr = isr
        if change.elected is None:
            return
        elected, epoch = change.elected, change.state.leader_epoch
        if change.election is not None and change.election.unclean:
            cut = min([elected.high_watermark, *self._cuts_after(elected.reconciled_epoch)])
            for record in self.acked:
                record.guard.clear()
        elif elected.lost_on_crash:
            cut = elected.log_end_offset
        else:
            for b in logs.keys() - {change.state.leader}:
                if elected.log_end_offset < self.effective_high_watermark(b):
                    raise InvariantViolation("1b", f"the clean election in epoch {epoch} of a leader with LEO "
                                                   f"{elected.log_end_offset} is below broker {b}'s effective HW "
                                                   f"{self.effective_high_watermark(b)}")
            return
        self.cuts.append((epoch, cut))
        consumer = self.consumer
        consumer.position = min(consumer.position, cut)
        consumer.seen = {offset: value for offset, value in consumer.seen.items() if offset < cut}

    def _note_acks(self) -> None:
        for produce in self.waiting:
            if produce.result is ErrorCode.NONE:
                for i, value in enumerate(produce.values):
                    self.acked.append(AckedRecord(produce.base_offset + i, value, set(self.cluster.state.isr)))
        self.waiting = [produce for produce in self.waiting if produce.result is None]

    def _check_no_divergence(self, batches: dict[int, list[Batch]]) -> None:
        effective = {b: self.effective_high_watermark(b) for b in batches}
        for a, b in itertools.combinations(sorted(batches), 2):
            limit = min(effective[a], effective[b])
            below_a = [batch for batch in batches[a] if batch.last_offset < limit]
            below_b = [batch for batch in batches[b] if batch.last_offset < limit]
            if below_a != below_b:
                raise InvariantViolation("1", f"brokers {a} and {b} differ below their effective HWs "
                                              f"({effective[a]}, {effective[b]}): {below_a} != {below_b}")

    def _check_isr_and_high_watermark(self, logs: dict[int, Log]) -> None:
        cluster = self.cluster
        leader = cluster.leader
        if leader is None:
            return
        high_watermark, isr = leader.log.high_watermark, cluster.state.isr
        for member in isr:
            if member not in logs or high_watermark > logs[member].log_end_offset:
                raise InvariantViolation("2", f"the HW {high_watermark} is above the LEO of ISR member {member}, "
                                              f"or it is down")
        before = self.high_watermarks.get(cluster.state.leader)
        if before is not None and before[0] is leader and len(isr) < leader.effective_min_isr \
                and high_watermark > before[1]:
            raise InvariantViolation("5", f"the HW moved from {before[1]} to {high_watermark} with the ISR {isr} "
                                          f"below min.insync.replicas")

    def _check_acked_records(self, records: dict[int, dict[int, bytes | None]]) -> None:
        leader_id = self.cluster.state.leader
        for record in self.acked:
            if not record.guard:
                continue
            holders = {b for b in record.guard if b in records}
            if leader_id != NO_LEADER:
                holders.add(leader_id)
            for b in holders:
                if records[b].get(record.offset) != record.value:
                    raise InvariantViolation("3", f"acknowledged {record.value!r} at offset {record.offset} (guard "
                                                  f"{sorted(record.guard)}) is {records[b].get(record.offset)!r} "
                                                  f"on broker {b}")

    def _check_consumer(self, records: dict[int, dict[int, bytes | None]]) -> None:
        leader_id = self.cluster.state.leader
        if leader_id == NO_LEADER:
            return
        consumer, leader_records = self.consumer, records[leader_id]
        leader_end = self.cluster.log(leader_id).log_end_offset
        if consumer.position > leader_end:
            raise InvariantViolation("4", f"the consumer's position {consumer.position} is past the leader's LEO "
                                          f"{leader_end}")
        changed = {o: (v, leader_records.get(o)) for o, v in consumer.seen.items() if leader_records.get(o) != v}
        if changed:
            raise InvariantViolation("4", f"records the consumer read changed on leader {leader_id}: {changed}")

    def _check_epoch_caches(self, logs: dict[int, Log], batches: dict[int, list[Batch]]) -> None:
        """Invariant 6, as: the cache is one entry per run of batches of one epoch, at the run's first offset,
        plus at most one entry at the LEO (a leader's epoch before its first batch)."""
        for b, log in logs.items():
            expected: list[tuple[int, int]] = []
            for batch in batches[b]:
                if not expected or expected[-1][0] != batch.leader_epoch:
                    expected.append((batch.leader_epoch, batch.base_offset))
            entries = [(entry.epoch, entry.start_offset) for entry in log.epoch_cache.entries]
            if entries != expected and not (entries[:-1] == expected and entries[-1][1] == log.log_end_offset):
                raise InvariantViolation("6", f"broker {b}: epoch cache {entries} does not match its batches "
                                              f"({expected}, LEO {log.log_end_offset})")

    def _high_watermarks(self) -> dict[int, tuple[Partition | None, int]]:
        return {b: (replica.partition, replica.log.high_watermark)
                for b, replica in self.cluster.replicas.items() if replica.live}


# -- schedules ------------------------------------------------------------------------------------

Action = Callable[[], object]

WEIGHTS = {
    "produce": 24, "fetch": 40, "consume": 6, "flush": 8, "crash": 4, "restart": 8, "controlled_shutdown": 2,
    "elect_preferred_leader": 2, "isolate": 3, "reconnect": 4, "advance": 8, "shrink_isr": 6,
}


class Schedule:
    """Draws the next step for a cluster from one seeded random.Random."""

    def __init__(self, rng: random.Random, cluster: Cluster, checker: Checker) -> None:
        self.rng = rng
        self.cluster = cluster
        self.checker = checker
        self.values = itertools.count()

    def _candidates(self) -> dict[str, list[int]]:
        """The brokers each kind of step that takes one may act on now (empty: it cannot run)."""
        cluster = self.cluster
        live = sorted(cluster.live_brokers)
        return {
            "fetch": [b for b in cluster.assignment if cluster.can_fetch(b)],
            "flush": live, "crash": live, "controlled_shutdown": live,
            "restart": [b for b in cluster.assignment if b not in live],
            "isolate": [b for b in live if not cluster.replicas[b].isolated],
            "reconnect": [b for b, replica in cluster.replicas.items() if replica.isolated],
        }

    def next(self) -> tuple[str, Action]:
        rng, cluster = self.rng, self.cluster
        candidates = self._candidates()
        kinds = [kind for kind in WEIGHTS if candidates.get(kind, True)]
        kind = rng.choices(kinds, weights=[WEIGHTS[k] for k in kinds])[0]
        broker = rng.choice(candidates[kind]) if kind in candidates else None
        if kind == "produce":
            acks = rng.choice((ACKS_ALL, ACKS_ALL, 1))
            values = tuple(f"v{next(self.values)}".encode() for _ in range(rng.randint(1, 3)))
            return f"produce(acks={acks}, {[v.decode() for v in values]})", lambda: self.checker.produce(values, acks)
        if kind == "fetch":
            max_bytes = rng.choice((1, 1 << 20, 1 << 20))  # 1: the leader sends its first batch only
            lose = rng.random() < 0.1
            return (f"fetch({broker}, max_bytes={max_bytes}, lose_response={lose})",
                    lambda: cluster.fetch(broker, max_bytes=max_bytes, lose_response=lose))
        if kind == "crash":
            written_back = 0.0 if rng.random() < 0.5 else round(rng.random(), 2)
            return (f"crash({broker}, written_back={written_back})",
                    lambda: cluster.crash(broker, written_back=written_back))
        if kind == "advance":
            ms = rng.choice((100, 300, 600, 1200))
            return f"advance({ms})", lambda: cluster.advance(ms)
        if kind == "consume":
            return "consume()", self.checker.consume
        if broker is None:
            return f"{kind}()", getattr(cluster, kind)
        method = getattr(cluster, kind)
        return f"{kind}({broker})", lambda: method(broker)


@dataclass
class Run:
    """One seed's run: its settings and the steps taken, with their outcomes."""

    seed: int
    settings: dict[str, object]
    steps: list[str] = field(default_factory=list)

    def report(self, cluster: Cluster, error: Exception) -> str:
        steps = "" if STEPS == DEFAULT_STEPS else f"SIM_STEPS={STEPS} "
        lines = [f"seed {self.seed} {self.settings} failed at step {len(self.steps)}: {error}",
                 f"reproduce: SIM_SEED={self.seed} {steps}.venv/bin/pytest -q tests/sim/test_simulation.py", "steps:"]
        lines += [f"{i:4d}. {step}" for i, step in enumerate(self.steps, 1)]
        lines.append(f"state: {cluster.state}")
        for b, replica in cluster.replicas.items():
            lines.append(f"broker {b}: {cluster.view(b) if replica.live else 'down'} "
                         f"reconciled_epoch={replica.reconciled_epoch} isolated={replica.isolated}")
        return "\n".join(lines)


def simulate(seed: int, root: Path) -> tuple[Run, Checker]:
    """Run one seed's schedule, checking every invariant after every step."""
    rng = random.Random(seed)
    min_insync_replicas, unclean_leader_election = rng.choice((1, 2)), rng.random() < 0.25
    cluster = Cluster(root, REPLICAS, min_insync_replicas=min_insync_replicas,
                      unclean_leader_election=unclean_leader_election)
    settings = {"min.insync.replicas": min_insync_replicas, "unclean.leader.election.enable": unclean_leader_election}
    checker = Checker(cluster)
    schedule = Schedule(rng, cluster, checker)
    run = Run(seed, settings)
    try:
        for _ in range(STEPS):
            description, action = schedule.next()
            run.steps.append(description)
            try:
                outcome = action()
                run.steps[-1] += f" -> {outcome}" if outcome is not None else ""
                checker.check()
            except Exception as e:
                raise SeedFailed(run.report(cluster, e)) from e
    finally:
        cluster.close()
    return run, checker


@pytest.fixture
def sim_dir(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A directory for the replicas' logs: in /dev/shm when there is one, since fsync is pointless here (the
    harness decides what a crash keeps) and costs most of a seed's time on a real disk."""
    if not os.access(SHM, os.W_OK):
        yield request.getfixturevalue("tmp_path")
        return
    with tempfile.TemporaryDirectory(dir=SHM, prefix="minikafka-sim-") as directory:
        yield Path(directory)


@pytest.mark.parametrize("seed", _seeds())
def test_random_schedule(seed: int, sim_dir: Path) -> None:
    simulate(seed, sim_dir)
