"""The nemesis's schedule is a pure function of the seed and the chosen fault kinds."""

from __future__ import annotations

import itertools

import pytest

from client.chaos.runner import ChaosOptions
from client.chaos.schedule import FAULT_KINDS, parse_kinds, schedule


def first(seed: int, kinds: tuple[str, ...], count: int) -> list:
    return list(itertools.islice(schedule(seed, kinds), count))


def test_the_same_seed_gives_the_same_schedule_and_another_seed_another():
    kinds = tuple(FAULT_KINDS)
    assert first(42, kinds, 30) == first(42, kinds, 30)
    assert first(42, kinds, 30) != first(43, kinds, 30)


def test_every_round_injects_every_chosen_kind_once():
    kinds = tuple(FAULT_KINDS)
    plans = first(5, kinds, 3 * len(kinds))
    for start in range(0, len(plans), len(kinds)):
        assert sorted(p.kind for p in plans[start:start + len(kinds)]) == sorted(kinds)
    assert [p.number for p in plans] == list(range(1, len(plans) + 1))
    assert all(0 <= p.hold < 1 and 0 <= p.gap < 1 and p.target >= 0 for p in plans)


def test_fault_kinds_are_parsed_and_checked():
    assert parse_kinds(None) == tuple(FAULT_KINDS) == parse_kinds("all")
    assert parse_kinds(" kill, isolate-leader ,kill") == ("kill", "isolate-leader")
    with pytest.raises(ValueError, match="unknown fault kind"):
        parse_kinds("kill,partition-everything")
    with pytest.raises(ValueError, match="unknown fault kind"):
        parse_kinds(",")


def test_a_failing_run_replays_with_the_same_seed_kinds_and_settings(tmp_path):
    options = ChaosOptions(tmp_path / "soak", duration_s=60, seed=7, faults=("kill", "cut-zk"), brokers=3,
                           overrides={"min.insync.replicas": "1"})
    assert options.replay_command() == (
        f"minikafka chaos run --dir {tmp_path / 'soak'}-replay --duration 60 --seed 7 --faults kill,cut-zk "
        "--brokers 3 --config min.insync.replicas=1")
    assert options.config["min.insync.replicas"] == "1" and options.timeouts.session_s == 3.0


def test_a_pipeline_run_replays_with_its_workload(tmp_path):
    options = ChaosOptions(tmp_path / "soak", duration_s=30, seed=11, faults=("kill",), workload="spark-pipeline")
    assert options.replay_command().endswith("--faults kill --brokers 3 --workload spark-pipeline")
