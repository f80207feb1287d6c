"""The chaos run's report: what the soak recorded becomes the page's data (times from the start of the faults,
each partition's states as intervals, its windows without an acknowledged write, writes per second, the verdict),
inline in one page."""

from __future__ import annotations

import json
import re

from client.chaos.record import InjectedFault, StateChange, WriteTimes, gaps
from client.chaos.report import QUIET_S, SoakRecord, render_report, report_data, writes_per_second
from client.chaos.workload import ProducerStats

START, STOP = 100.0, 130.0
SUMMARY = {
    "seed": 7, "brokers": 3, "duration_s": 25, "elapsed_s": 30.0, "attempted": 10, "acked": 7, "failed": 2,
    "unknown": 1, "lost": 0, "duplicated": 1, "divergences": 0, "faults": {"kill": 1, "isolate-leader": 1},
    "unavailable_ms": {"chaos-0": 21500, "chaos-1": 500}, "consumer": {"read": 7, "violations": []},
    "lost_examples": [], "duplicated_examples": ["partition 0: 'v' at offsets [3, 4]"],
    "verify": {"consistent": True, "acked": 7, "lost": 0, "violations": []}, "passed": True,
    "replay": "minikafka chaos run --seed 7",
}


def record() -> SoakRecord:
    kill = InjectedFault(1, "kill", started=102.0, said=["kill -9 broker 1, restart after 3.0 s"], healed=105.0,
                         recovered=106.5)
    isolate = InjectedFault(2, "isolate-leader", started=110.0, said=["broker 2 (leader of chaos-0): cut", "</script>"])
    states = [StateChange(99.0, 0, 1, 0, (1, 2, 3)), StateChange(99.5, 1, 2, 0, (2, 3, 1)),
              StateChange(105.0, 0, 2, 1, (2, 3)), StateChange(110.0, 0, 2, 1, (2, 3, 1))]
    writes = WriteTimes(acked={0: [100.5, 101.0, 108.0, 129.5], 1: [START + i / 2 for i in range(1, 60)]},
                        failed=[103.2, 103.9], unknown=[104.1])
    return SoakRecord("chaos", 2, 3, 2, START, STOP, [kill, isolate], states, writes)


def test_faults_are_timed_from_the_start_of_the_soak_with_what_the_nemesis_said() -> None:
    faults = report_data(SUMMARY, record())["faults"]
    assert faults == [
        {"number": 1, "kind": "kill", "what": "kill -9 broker 1, restart after 3.0 s", "start_s": 2.0,
         "healed_s": 5.0, "recovered_s": 6.5},
        {"number": 2, "kind": "isolate-leader", "what": "broker 2 (leader of chaos-0): cut; </script>",
         "start_s": 10.0, "healed_s": None, "recovered_s": None},
    ]


def test_each_partition_has_its_leader_and_isr_as_intervals_and_its_quiet_windows() -> None:
    zero, one = report_data(SUMMARY, record())["partitions"]
    assert zero["name"] == "chaos-0"
    assert zero["states"] == [
        {"from_s": 0.0, "to_s": 5.0, "leader": 1, "leader_epoch": 0, "isr": [1, 2, 3]},
        {"from_s": 5.0, "to_s": 10.0, "leader": 2, "leader_epoch": 1, "isr": [2, 3]},
        {"from_s": 10.0, "to_s": 30.0, "leader": 2, "leader_epoch": 1, "isr": [2, 3, 1]},
    ]
    assert zero["quiet"] == [{"from_s": 1.0, "to_s": 8.0}, {"from_s": 8.0, "to_s": 29.5}]
    assert one["states"] == [{"from_s": 0.0, "to_s": 30.0, "leader": 2, "leader_epoch": 0, "isr": [2, 3, 1]}]
    assert one["quiet"] == []
    assert QUIET_S == 1.0


def test_a_state_replaced_before_the_faults_started_is_left_out() -> None:
    earlier = [StateChange(90.0, 0, 3, 0, (3,)), *record().states]
    soak = record()
    data = report_data(SUMMARY, SoakRecord(soak.topic, 2, 3, 2, START, STOP, soak.faults, earlier, soak.writes))
    assert [s["leader"] for s in data["partitions"][0]["states"]] == [1, 2, 2]


def test_writes_are_counted_per_second() -> None:
    writes = WriteTimes(acked={0: [100.1, 100.9, 101.5], 1: [102.99]}, failed=[101.0, 99.0], unknown=[103.0])
    assert writes_per_second(writes, 100.0, 102.5) == [
        {"second": 0, "acked": 2, "failed": 0, "unknown": 0},
        {"second": 1, "acked": 1, "failed": 1, "unknown": 0},
        {"second": 2, "acked": 0, "failed": 0, "unknown": 0},
    ]
    per_second = report_data(SUMMARY, record())["writes"]
    assert len(per_second) == 30
    assert sum(w["acked"] for w in per_second) == 4 + 59
    assert (per_second[3]["failed"], per_second[4]["unknown"]) == (2, 1)


def test_the_verdict_carries_the_summary_and_the_verifier() -> None:
    verdict = report_data(SUMMARY, record())["verdict"]
    assert verdict["passed"] is True and verdict["seed"] == 7
    assert verdict["faults"] == {"kill": 1, "isolate-leader": 1}
    assert verdict["verifier"] == {"consistent": True, "acked": 7, "lost": 0, "violations": []}
    assert verdict["unavailable_ms"] == {"chaos-0": 21500, "chaos-1": 500}
    assert (verdict["duplicated"], verdict["duplicated_examples"]) == (1, ["partition 0: 'v' at offsets [3, 4]"])
    assert verdict["pipeline_missing"] is None and verdict["pipeline_problems"] == []  # the producers' workload


def test_the_verdict_carries_the_pipeline_figures_and_what_it_missed() -> None:
    pipeline = {"pipeline_missing": 1, "pipeline_duplicates": 0, "pipeline": {
        "counted": 6, "error": None, "missing_examples": ["chaos-0 'k' (ok at offset 3): not counted"],
        "duplicate_examples": []}}
    verdict = report_data({**SUMMARY, **pipeline}, record())["verdict"]
    assert (verdict["pipeline_counted"], verdict["pipeline_missing"], verdict["pipeline_duplicates"]) == (6, 1, 0)
    assert verdict["pipeline_problems"] == ["pipeline missed chaos-0 'k' (ok at offset 3): not counted"]


def test_the_page_holds_its_data_inline_and_nothing_from_elsewhere() -> None:
    data = report_data(SUMMARY, record())
    page = render_report(data)
    [inline] = re.findall(r'<script id="soak-data" type="application/json">(.*?)</script>', page, re.S)
    assert json.loads(inline) == data
    assert "</script>" not in inline
    assert not re.search(r'(src|href)="(?!data:)', page)  # no file or address to fetch
    assert "http://" not in page and "https://" not in page


def test_the_longest_time_without_an_acknowledgement_is_the_widest_gap() -> None:
    stats = ProducerStats()
    stats.times.acked[0] = [101.0, 104.0, 105.0]
    assert stats.unavailable_ms([0, 1], 100.0, 110.0) == {0: 5000, 1: 10000}
    assert gaps([3.0, 1.0, 20.0], 0.0, 10.0) == [(0.0, 1.0), (1.0, 3.0), (3.0, 10.0)]
