"""`minikafka console` in a real browser: headless Chromium (tests/devtools.py) loads the page served by the command
against a real cluster; a partition's drawing shows the leader, ISR, LEO and HW that `topic describe --replicas
--json` reports, and a follower stopped with SIGSTOP leaves the ISR on the page within replica.lag.time.max.ms plus
a few seconds, then comes back; a consumer group's committed offsets and lag are shown as consumer-groups
--describe gives them. The page must say nothing on its console.

Screenshots of each step are kept under the test's tmp directory, in `screenshots/` (pytest prints where; it keeps
the last runs' tmp directories, e.g. /tmp/pytest-of-root/pytest-current/test_console_draws_*/screenshots/).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from client.cluster import ClusterState, start_broker
from tests.devtools import Browser
from tests.integration.clusterutil import (
    PROJECT_ROOT,
    cli,
    cluster_fixture,
    connect,
    consume_in_group,
    controller_of,
    create_topic,
    pause,
    produce,
    produce_values,
    resume,
    stop_broker,
)
from tests.polling import eventually

LAG_MS = 3000
#: A stopped follower leaves the ISR on the page within LAG_MS and this: the leader's check (every LAG_MS / 2), its
#: ZooKeeper write, the console's poll (every 500 ms) and its push.
FEW_S = 5
cluster = cluster_fixture(brokers=3, configs={"replica.lag.time.max.ms": str(LAG_MS),
                                              "replica.fetch.wait.max.ms": "200",
                                              "auto.leader.rebalance.enable": "false"})

#: What the page shows of one partition: its leadership, and each drawn replica's numbers.
PARTITION_JS = """
(() => {
  const p = document.querySelector('div.partition[data-topic="%s"][data-partition="%d"]');
  if (!p) return null;
  return {
    leader: Number(p.dataset.leader), leader_epoch: Number(p.dataset.leaderEpoch),
    isr: p.dataset.isr ? p.dataset.isr.split(",").map(Number) : [], state: p.dataset.state,
    epochs: p.querySelector(".epochs").textContent,
    replicas: [...p.querySelectorAll("g.replica")].map(g => ({
      broker: Number(g.dataset.broker), role: g.dataset.role, leo: Number(g.dataset.leo), hw: Number(g.dataset.hw),
      in_isr: g.dataset.inIsr === "true", current: g.dataset.current === "true",
      remote_leo: g.dataset.remoteLeo === undefined ? null : Number(g.dataset.remoteLeo)})),
  };
})()
"""
#: The epoch marks drawn on one replica's row.
EPOCH_MARKS_JS = """[...document.querySelectorAll('div.partition[data-topic="%s"] g.replica[data-broker="%d"] \
text.epoch-label')].map(t => t.textContent)"""
BROKERS_JS = "Object.fromEntries([...document.querySelectorAll('div.broker')].map(b => [b.dataset.broker, " \
             "b.dataset.status]))"


@asynccontextmanager
async def console(*options: str) -> AsyncIterator[str]:
    """`minikafka console OPTIONS --port 0` running; its URL, read from the first line it prints."""
    process = subprocess.Popen([sys.executable, "-m", "client.cli", "console", *options, "--port", "0"],
                               cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=os.environ.copy())
    try:
        assert process.stdout is not None
        url = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 30)
        assert url.startswith("http://127.0.0.1:"), (url, process.stderr.read() if process.poll() is not None else "")
        yield url.strip()
    finally:
        process.terminate()
        assert process.wait(timeout=15) == 0


#: What `shown` last read of each partition, for the messages of waits that time out.
LAST_SHOWN: dict[tuple[str, int], Any] = {}


async def shown(browser: Browser, topic: str, partition: int) -> dict[str, Any] | None:
    """What the page draws of a partition (PARTITION_JS), None before it draws it."""
    LAST_SHOWN[(topic, partition)] = page = await browser.evaluate(PARTITION_JS % (topic, partition))
    return page


def waiting_for(what: str, topic: str) -> Callable[[], str]:
    """A wait's description, with what the page drew last of the topic's partition 0."""
    return lambda: f"{what}; the page drew {json.dumps(LAST_SHOWN.get((topic, 0)))}"


def described(directory: Path, topic: str) -> dict[str, Any]:
    [entry] = json.loads(cli("topic", "describe", topic, "--replicas", "--json", "--dir", str(directory)).stdout)
    return entry


async def watched_partition(cluster: ClusterState, topic: str, records: int) -> tuple[int, int, int]:
    """A topic of one partition on every broker, led by a broker that is not the controller, min.insync.replicas 2,
    with `records` records; (its leader, the other broker that is not the controller, the controller)."""
    controller, _ = await controller_of(cluster)
    leader, follower = [b.id for b in cluster.brokers if b.id != controller]
    await create_topic(cluster, topic, assignments={0: [leader, follower, controller]},
                       configs={"min.insync.replicas": "2"}, in_sync=True)
    await produce_values(cluster, topic, [f"value {i}".encode() for i in range(records)])
    return leader, follower, controller


async def test_console_draws_a_partition_and_a_stopped_follower_leaving_the_isr(cluster: ClusterState,
                                                                               tmp_path: Path) -> None:
    topic = "console-watched"
    leader, follower, controller = await watched_partition(cluster, topic, 20)
    screenshots = tmp_path / "screenshots"
    print(f"screenshots in {screenshots}")

    async with console("--dir", str(cluster.directory)) as url, Browser(tmp_path / "chromium") as browser:
        await browser.open(url)

        async def settled() -> dict[str, Any] | None:
            page = await shown(browser, topic, 0)
            return page if page and all(r["leo"] == 20 and r["hw"] == 20 for r in page["replicas"]) else None

        page = await eventually(settled, waiting_for("every replica drawn at LEO 20 and HW 20", topic), timeout_s=20)
        truth = described(cluster.directory, topic)
        assert page["leader"] == truth["leader"] == leader
        assert page["leader_epoch"] == truth["leader_epoch"]
        assert sorted(page["isr"]) == sorted(truth["isr"]) == sorted([leader, follower, controller])
        drawn = {r["broker"]: (r["role"], r["leo"], r["hw"], r["in_isr"]) for r in page["replicas"]}
        assert drawn == {s["broker"]: (s["role"], s["leo"], s["hw"], True) for s in truth["replica_states"]}
        assert page["replicas"][0]["broker"] == leader  # the leader's row first, as the seeds draw it
        [leader_state] = [s for s in truth["replica_states"] if s["role"] == "leader"]
        remote = {f["broker"]: f["remote_leo"] for f in leader_state["followers"]}
        assert {r["broker"]: r["remote_leo"] for r in page["replicas"] if r["role"] == "follower"} == remote
        assert f"epoch {truth['leader_epoch']} from offset 0" in page["epochs"]
        await browser.screenshot(screenshots / "1-steady.png")

        await pause(cluster, follower)
        paused_at = time.monotonic()
        try:
            async with connect(cluster.broker(leader)) as connection:
                await produce(connection, topic, 0, [f"value {i}".encode() for i in range(20, 30)], acks=1)

            async def follower_out() -> dict[str, Any] | None:
                page = await shown(browser, topic, 0)
                row = next((r for r in page["replicas"] if r["broker"] == follower), None) if page else None
                return page if page and follower not in page["isr"] and row and not row["in_isr"] else None

            page = await eventually(follower_out, waiting_for(f"broker {follower} to leave the ISR", topic),
                                    timeout_s=LAG_MS / 1000 + FEW_S)
            left_after = time.monotonic() - paused_at
            print(f"broker {follower} left the ISR on the page {left_after:.1f} s after SIGSTOP")
            assert left_after < LAG_MS / 1000 + FEW_S
            assert page["state"] == "under-replicated"
            statuses = await browser.evaluate(BROKERS_JS)
            assert statuses[str(follower)] == "not answering", statuses
            await eventually(lambda: _leader_leo(browser, topic, leader, 30), "the leader's LEO to reach 30")
            await browser.screenshot(screenshots / "2-follower-stopped.png")
        finally:
            await resume(cluster, follower)

        async def rejoined() -> dict[str, Any] | None:
            page = await shown(browser, topic, 0)
            return page if page and sorted(page["isr"]) == sorted([leader, follower, controller]) and all(
                r["leo"] == 30 and r["current"] for r in page["replicas"]) else None

        await eventually(rejoined, waiting_for(f"broker {follower} to rejoin the ISR", topic), timeout_s=30)
        await browser.screenshot(screenshots / "3-rejoined.png")
        timeline = await browser.evaluate("document.querySelector('#timeline tbody').textContent")
        assert f"{topic}-0" in timeline and "isr" in timeline.lower()
    assert browser.problems == []


async def _leader_leo(browser: Browser, topic: str, leader: int, leo: int) -> bool:
    page = await shown(browser, topic, 0)
    return bool(page) and any(r["broker"] == leader and r["leo"] == leo for r in page["replicas"])


async def test_console_draws_where_each_leader_epoch_starts(cluster: ClusterState, tmp_path: Path) -> None:
    topic = "console-epochs"
    first, second, _ = await watched_partition(cluster, topic, 10)

    async with console("--dir", str(cluster.directory)) as url, Browser(tmp_path / "chromium") as browser:
        await browser.open(url)
        await eventually(lambda: _leader_leo(browser, topic, first, 10), "the page to draw the first leader's log")
        # A controlled shutdown: the second replica leads, in epoch 1. If the stopping broker fetches as a follower
        # and rejoins the ISR before it exits, the controller takes it out again when it is gone, in epoch 2 (as
        # Kafka's controller does): the new leader's epoch cache then starts epoch 2 at offset 10, where epoch 1 was.
        await stop_broker(cluster, first)
        try:
            async with connect(cluster.broker(second)) as connection:
                await produce(connection, topic, 0, [f"value {i}".encode() for i in range(10, 15)])

            async def second_leads() -> dict[str, Any] | None:
                page = await shown(browser, topic, 0)
                return page if page and page["leader"] == second and page["leader_epoch"] >= 1 and any(
                    r["broker"] == second and r["leo"] == 15 and r["hw"] == 15 for r in page["replicas"]) else None

            page = await eventually(second_leads, waiting_for(f"broker {second} to lead in a new epoch", topic),
                                    timeout_s=20)
            epoch = page["leader_epoch"]
            assert epoch in (1, 2), page
            assert f"epoch 0 from offset 0 · epoch {epoch} from offset 10" in page["epochs"]
            [stopped] = [r for r in page["replicas"] if r["broker"] == first]
            assert (stopped["leo"], stopped["in_isr"], stopped["current"]) == (10, False, False)
            assert (await browser.evaluate(BROKERS_JS))[str(first)] == "down"
            assert await browser.evaluate(EPOCH_MARKS_JS % (topic, second)) == [f"e{epoch}"]
            await browser.screenshot(tmp_path / "screenshots" / "new-leader-epoch.png")
        finally:
            await start_broker(cluster.directory, first)

        async def first_follows() -> dict[str, Any] | None:
            page = await shown(browser, topic, 0)
            return page if page and first in page["isr"] and any(
                r["broker"] == first and r["leo"] == 15 and r["current"] for r in page["replicas"]) else None

        await eventually(first_follows, waiting_for(f"broker {first} to rejoin the ISR", topic), timeout_s=30)
        assert await browser.evaluate(EPOCH_MARKS_JS % (topic, first)) == [f"e{epoch}"]
    assert browser.problems == []


async def test_console_over_the_wire_says_the_timeline_is_unavailable(cluster: ClusterState, tmp_path: Path) -> None:
    async with console("--bootstrap-server", cluster.brokers[0].address) as url, \
            Browser(tmp_path / "chromium") as browser:
        await browser.open(url)
        statuses = await eventually(
            lambda: _all_up(browser, {str(b.id) for b in cluster.brokers}), "every broker to show as up")
        assert set(statuses.values()) == {"up"}
        note = await browser.evaluate("document.querySelector('#timeline-note').textContent")
        assert "Timeline unavailable" in note and "--dir" in note
        assert await browser.evaluate("document.querySelector('#timeline').hidden") is True
        await browser.screenshot(tmp_path / "screenshots" / "over-the-wire.png")
    assert browser.problems == []


async def _all_up(browser: Browser, ids: set[str]) -> dict[str, str] | None:
    statuses = await browser.evaluate(BROKERS_JS)
    return statuses if set(statuses) == ids and set(statuses.values()) == {"up"} else None


#: What the page shows of one consumer group: its state, lag, and each partition's row.
GROUP_JS = """
(() => {
  const g = document.querySelector('div.group[data-group="%s"]');
  if (!g) return null;
  return {
    state: g.querySelector(".badge").textContent, lag: Number(g.dataset.lag),
    rows: [...g.querySelectorAll("tbody tr")].map(r => [...r.querySelectorAll("td")].map(td => td.textContent)),
  };
})()
"""


async def test_console_shows_a_consumer_groups_committed_offsets_and_lag(cluster: ClusterState,
                                                                          tmp_path: Path) -> None:
    topic, group = "console-grouped", "console-readers"
    await create_topic(cluster, topic, partitions=1, replication_factor=3)
    await produce_values(cluster, topic, [f"value {i}".encode() for i in range(10)])
    consumer = consume_in_group(cluster, topic, group, {"auto.commit.interval.ms": 100})
    async with console("--dir", str(cluster.directory)) as url, Browser(tmp_path / "chromium") as browser:
        await browser.open(url)
        try:
            async def caught_up() -> dict[str, Any] | None:
                page = await browser.evaluate(GROUP_JS % group)
                return page if page and page["state"] == "Stable" and page["rows"] and \
                    page["rows"][0][:4] == [f"{topic}-0", "10", "10", "0"] else None

            page = await eventually(caught_up, f"group {group} shown Stable at offset 10, lag 0", timeout_s=30)
            assert page["lag"] == 0 and page["rows"][0][4] != "-"  # a member holds the partition
        finally:
            consumer.terminate()
            assert consumer.wait(timeout=15) == 0, consumer.stderr.read() if consumer.stderr else ""
        await produce_values(cluster, topic, [f"value {i}".encode() for i in range(10, 15)])

        async def behind() -> dict[str, Any] | None:
            page = await browser.evaluate(GROUP_JS % group)
            return page if page and page["state"] == "Empty" and page["lag"] == 5 else None

        page = await eventually(behind, f"group {group} shown Empty with lag 5", timeout_s=30)
        assert page["rows"] == [[f"{topic}-0", "10", "15", "5", "-"]]
        await browser.screenshot(tmp_path / "screenshots" / "group-lag.png")
    assert browser.problems == []
