"""`minikafka chaos run` as a user runs it: a real cluster under acks=all load, every kind of fault on a seeded
schedule (the consumer group's coordinator among the brokers killed), and the replica verifier's verdict over the
brokers' directories and the producers' history, with the group's: every acknowledged record delivered to the
group, no committed offset going backwards; the run's report opens in headless Chromium without a word on its
console and shows every fault (its screenshot is kept in the test's tmp directory, screenshots/report.png).

A safe configuration (RF 3, min.insync.replicas 2, unclean election off) loses nothing; an unsafe one
(min.insync.replicas 1 and unclean election, with the leader cut from its followers and then from ZooKeeper,
as Jepsen did) must make the same checker fail.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from client.chaos.report import REPORT_FILE
from client.chaos.runner import HISTORY_FILE
from client.chaos.schedule import FAULT_KINDS, ISOLATE_LEADER, schedule
from tests.devtools import Browser
from tests.integration.clusterutil import cli

SOAK_S = 60
UNSAFE = ("--config", "min.insync.replicas=1", "--config", "unclean.leader.election.enable=true")
MAX_UNSAFE_SEEDS = 3


def chaos_run(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli("chaos", "run", "--dir", str(directory), "--json", *args, check=False, timeout_s=900)


def test_a_soak_with_every_kind_of_fault_loses_no_acknowledged_record(tmp_path: Path):
    result = chaos_run(tmp_path / "soak", "--duration", str(SOAK_S), "--seed", "7")
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    summary = json.loads(result.stdout)
    assert set(summary["faults"]) == set(FAULT_KINDS) and min(summary["faults"].values()) >= 1, summary["faults"]
    assert (summary["lost"], summary["duplicated"], summary["divergences"]) == (0, 0, 0), summary
    # the consumer group, its coordinator killed too: every acknowledged record delivered, no commit backwards
    assert (summary["group_missed"], summary["commit_regressions"]) == (0, 0), summary["group"]
    group = summary["group"]
    assert group["caught_up"] and group["delivered"] >= summary["acked"] and group["commits"] > 0, group
    assert summary["acked"] > 0 and summary["attempted"] == summary["acked"] + summary["failed"] + summary["unknown"]
    verify = summary["verify"]
    assert verify["consistent"] and verify["lost"] == 0 and verify["acked"] == summary["acked"], verify
    assert set(summary["unavailable_ms"]) == {"chaos-0", "chaos-1", "chaos-2"}
    history = (tmp_path / "soak" / HISTORY_FILE).read_text().splitlines()
    assert len(history) == summary["attempted"]
    assert sum(json.loads(line)["status"] == "ok" for line in history) == summary["acked"]
    for kind in FAULT_KINDS:  # a line of progress per fault
        assert f" {kind}: " in result.stderr, result.stderr
    assert "(coordinator of group chaos-group)" in result.stderr, result.stderr  # found, not picked at random
    assert summary["report"] == str(tmp_path / "soak" / REPORT_FILE)
    asyncio.run(report_shows_the_soak(Path(summary["report"]), summary, tmp_path))


async def report_shows_the_soak(report: Path, summary: dict[str, Any], tmp_path: Path) -> None:
    """The report, opened from its file, says nothing on its console, holds every fault of the verdict, draws
    every partition's leader and ISR, and gives the verdict."""
    async with Browser(tmp_path / "chromium") as browser:
        await browser.open(report.as_uri())
        kinds = await browser.evaluate("[...document.querySelectorAll('#faults tbody tr')].map(r => r.dataset.kind)")
        assert Counter(kinds) == Counter(summary["faults"]), kinds
        drawn = await browser.evaluate("document.querySelectorAll('#chart g.fault').length")
        assert drawn == sum(summary["faults"].values())
        lanes = await browser.evaluate("[...document.querySelectorAll('#chart text.lane')].map(t => t.textContent)")
        for partition in summary["unavailable_ms"]:
            assert {f"{partition} leader", f"{partition} ISR", f"{partition} no acks"} <= set(lanes), lanes
        assert await browser.evaluate("document.querySelector('#verdict').dataset.passed") == "true"
        assert await browser.evaluate("document.querySelectorAll('#chart rect.writes-acked').length") > 0
        await browser.screenshot(tmp_path / "screenshots" / "report.png")
    assert browser.problems == []


def test_the_checker_fails_a_soak_with_unclean_election_and_min_insync_replicas_1(tmp_path: Path):
    # Seeds whose first fault cuts the leader from its followers before ZooKeeper: the ISR shrinks to the leader
    # alone, it acknowledges alone, and the unclean election of a follower drops those records.
    staged = (s for s in itertools.count(1) if next(schedule(s, (ISOLATE_LEADER,))).staged)
    seeds = list(itertools.islice(staged, MAX_UNSAFE_SEEDS))
    runs = []
    for seed in seeds:
        result = chaos_run(tmp_path / f"unsafe-{seed}", "--duration", "0", "--seed", str(seed),
                           "--faults", ISOLATE_LEADER, *UNSAFE)
        runs.append(result)
        if result.returncode == 1:
            break
    result = runs[-1]
    assert result.returncode == 1, "\n".join(f"{r.returncode}: {r.stdout}\n{r.stderr}" for r in runs)
    summary = json.loads(result.stdout)
    assert summary["lost"] > 0 or summary["divergences"] > 0, summary
    assert summary["verify"]["lost"] > 0 and not summary["verify"]["consistent"], summary["verify"]
    assert summary["verify"]["lost"] == summary["lost"], summary
    assert f"replay: minikafka chaos run --dir {tmp_path}/unsafe-{summary['seed']}-replay" in result.stderr
