"""The picture of a chaos run, `DIR/report.html` beside its JSON verdict: the faults on a timeline, each partition's
leader and ISR over time, acknowledged and failed writes per second, the windows in which a partition took no
acks=all write, and the verifier's verdict. One file with everything inline (the data as JSON, the style, the
script that draws it), so that it opens offline.

`report_data` turns what the soak recorded (client/chaos/record.py) and its summary into the page's data (pure);
`render_report` puts that data into the page (report.html, package data).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from client.chaos.record import InjectedFault, StateChange, WriteTimes, gaps

REPORT_FILE = "report.html"
#: A partition without an acknowledged write for at least this long is shown as a window without acks=all writes.
QUIET_S = 1.0
_DATA_MARK = "/*SOAK-DATA*/null"


@dataclass(frozen=True, slots=True)
class SoakRecord:
    """What the soak recorded between `started` and `stopped` (the faults' start, the producers' stop)."""

    topic: str
    partitions: int
    replication_factor: int
    min_insync_replicas: int
    started: float
    stopped: float
    faults: Sequence[InjectedFault]
    states: Sequence[StateChange]
    writes: WriteTimes


def report_data(summary: Mapping[str, Any], record: SoakRecord) -> dict[str, Any]:
    """The page's data: times in seconds since the faults started (states seen before then count from 0)."""
    return {
        "topic": record.topic,
        "elapsed_s": _seconds(record.stopped, record),
        "replication_factor": record.replication_factor,
        "min_insync_replicas": record.min_insync_replicas,
        "quiet_s": QUIET_S,
        "verdict": _verdict(summary),
        "faults": [{"number": f.number, "kind": f.kind, "what": "; ".join(f.said),
                    "start_s": _seconds(f.started, record),
                    "healed_s": None if f.healed is None else _seconds(f.healed, record),
                    "recovered_s": None if f.recovered is None else _seconds(f.recovered, record)}
                   for f in record.faults],
        "partitions": [_partition(p, record) for p in range(record.partitions)],
        "writes": writes_per_second(record.writes, record.started, record.stopped),
    }


def _verdict(summary: Mapping[str, Any]) -> dict[str, Any]:
    verify = summary.get("verify", {})
    return {
        "passed": bool(summary.get("passed")),
        **{key: summary.get(key) for key in ("seed", "brokers", "duration_s", "elapsed_s", "attempted", "acked",
                                             "failed", "unknown", "lost", "duplicated", "divergences", "faults",
                                             "unavailable_ms", "lost_examples", "duplicated_examples", "replay",
                                             "group_missed", "commit_regressions", "pipeline_missing",
                                             "pipeline_duplicates")},
        "pipeline_counted": summary.get("pipeline", {}).get("counted"),
        "consumer_violations": summary.get("consumer", {}).get("violations", []),
        "group_problems": [*(f"group missed {e}" for e in summary.get("group", {}).get("missed_examples", [])),
                           *(f"commit regression: {e}" for e in summary.get("group", {}).get("regressions", []))],
        "pipeline_problems": _pipeline_problems(summary.get("pipeline", {})),
        "verifier": {"consistent": bool(verify.get("consistent")), "acked": verify.get("acked"),
                     "lost": verify.get("lost"), "violations": [str(v) for v in verify.get("violations", [])]},
    }


def _pipeline_problems(pipeline: Mapping[str, Any]) -> list[str]:
    return [*(f"pipeline missed {e}" for e in pipeline.get("missing_examples", [])),
            *(f"pipeline duplicate {e}" for e in pipeline.get("duplicate_examples", [])),
            *([f"pipeline error: {pipeline['error']}"] if pipeline.get("error") else [])]


def _seconds(moment: float, record: SoakRecord) -> float:
    """`moment` in seconds since the faults started, within the soak."""
    return round(min(max(moment - record.started, 0.0), record.stopped - record.started), 3)


def _partition(partition: int, record: SoakRecord) -> dict[str, Any]:
    """The partition's states as intervals (a state replaced before the faults started is left out), and its
    windows without an acknowledged write."""
    changes = [c for c in record.states if c.partition == partition]
    states = []
    for change, following in zip(changes, [*changes[1:], None], strict=True):
        start = _seconds(change.at, record)
        end = _seconds(following.at if following is not None else record.stopped, record)
        if end > start or following is None:
            states.append({"from_s": start, "to_s": end, "leader": change.leader,
                           "leader_epoch": change.leader_epoch, "isr": list(change.isr)})
    quiet = [(a, b) for a, b in gaps(record.writes.acked.get(partition, ()), record.started, record.stopped)
             if b - a >= QUIET_S]
    return {"partition": partition, "name": f"{record.topic}-{partition}", "states": states,
            "quiet": [{"from_s": _seconds(a, record), "to_s": _seconds(b, record)} for a, b in quiet]}


def writes_per_second(writes: WriteTimes, start: float, end: float) -> list[dict[str, int]]:
    """Acknowledged, failed and unknown writes in each second from `start` to `end`."""
    seconds = max(1, math.ceil(end - start))
    counts = [{"second": s, "acked": 0, "failed": 0, "unknown": 0} for s in range(seconds)]
    series = {"acked": [t for times in writes.acked.values() for t in times], "failed": writes.failed,
              "unknown": writes.unknown}
    for name, times in series.items():
        for t in times:
            if start <= t <= end:
                counts[min(int(t - start), seconds - 1)][name] += 1
    return counts


def render_report(data: Mapping[str, Any]) -> str:
    """The report page with `data` inline (as JSON that cannot end its script element early)."""
    page = resources.files("client.chaos").joinpath("report.html").read_text(encoding="utf-8")
    inline = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e")
    return page.replace(_DATA_MARK, inline, 1)
