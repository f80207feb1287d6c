"""The nemesis's schedule, drawn from a seed: which fault comes next, on what, for how long. Pure: the same seed
and kinds give the same schedule, whatever the cluster does.

Targets are abstract (the leader of the k-th partition, the k-th broker) and resolved when the fault starts;
durations are fractions that the nemesis scales by the cluster's timeouts. Faults come in rounds: each round is
the chosen kinds in a shuffled order, so every kind appears once per round.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

KILL = "kill"
PAUSE = "pause"
SHUTDOWN = "shutdown"
ISOLATE_LEADER = "isolate-leader"
ISOLATE_FOLLOWER = "isolate-follower"
ISOLATE_CONTROLLER = "isolate-controller"
CUT_ZOOKEEPER = "cut-zk"
KILL_COORDINATOR = "kill-coordinator"

#: Every kind of fault, and what it does.
FAULT_KINDS: dict[str, str] = {
    KILL: "kill -9 a broker, restart it after the hold",
    PAUSE: "SIGSTOP a broker, SIGCONT after the hold",
    SHUTDOWN: "controlled shutdown (SIGTERM) of a broker, restart after the hold",
    ISOLATE_LEADER: "cut a partition's leader from the other brokers and ZooKeeper, at once or followers first",
    ISOLATE_FOLLOWER: "cut a partition's follower from the other brokers (it keeps ZooKeeper)",
    ISOLATE_CONTROLLER: "cut the controller from the other brokers and ZooKeeper",
    CUT_ZOOKEEPER: "cut one broker from ZooKeeper only",
    KILL_COORDINATOR: "kill -9 the broker coordinating the soak's consumer group, restart it after the hold",
}


@dataclass(frozen=True, slots=True)
class FaultPlan:
    """One fault: `target` picks the partition or broker (modulo how many there are), `hold` and `gap` are
    fractions in [0, 1) of the nemesis's hold and gap ranges; `staged` (isolate-leader): followers first, then
    ZooKeeper too."""

    number: int
    kind: str
    target: int
    hold: float
    gap: float
    staged: bool


def parse_kinds(text: str | None) -> tuple[str, ...]:
    """A comma-separated list of fault kinds (all of them if None or "all"); ValueError for an unknown one."""
    if text is None or text.strip().lower() == "all":
        return tuple(FAULT_KINDS)
    kinds = tuple(dict.fromkeys(k.strip().lower() for k in text.split(",") if k.strip()))
    unknown = [k for k in kinds if k not in FAULT_KINDS]
    if not kinds or unknown:
        raise ValueError(f"unknown fault kind(s) {', '.join(unknown) or repr(text)}; choose among "
                         f"{', '.join(FAULT_KINDS)}")
    return kinds


def schedule(seed: int, kinds: Sequence[str]) -> Iterator[FaultPlan]:
    """The endless schedule of faults for `seed`: rounds of `kinds` in shuffled order."""
    rng = random.Random(seed)
    number = 0
    while True:
        round_ = list(kinds)
        rng.shuffle(round_)
        for kind in round_:
            number += 1
            yield FaultPlan(number=number, kind=kind, target=rng.randrange(1 << 30), hold=rng.random(),
                            gap=rng.random(), staged=rng.random() < 0.5)
