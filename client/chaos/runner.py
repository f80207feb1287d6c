"""`minikafka chaos run`: a soak of the whole cluster under faults, ending in the replica verifier's verdict.

1. A cluster in DIR with timeouts suited to chaos (CHAOS_CONFIG), a topic with one partition per broker, RF 3,
   min.insync.replicas 2 and unclean election off (broker settings that --config may change).
2. Idempotent acks=all producers writing DIR/history.jsonl, a consumer checking what it reads, and consumers
   sharing a group that consume and commit (client.chaos.group_workload); with `--workload spark-pipeline`, also
   the example Spark pipeline reading the topic, restarted from its checkpoint whenever its driver dies; the faults
   start once it committed a micro-batch, and its driver is killed -9 once in the middle of one (client.chaos.pipeline).
3. The nemesis: faults one at a time on the seed's schedule, until the duration has passed and every chosen kind
   was injected at least once (the first round always completes).
4. Heal everything, wait for every partition's full ISR, stop the producers, let the group commit past every
   acknowledged record, read every partition and the group's committed offsets (the pipeline: close its windows and
   run its query to completion), stop the cluster, run the verifier over the brokers' directories with the history.

The summary counts records attempted, acknowledged, failed and unknown; acknowledged records missing from the
final read (lost); acknowledged records the final read holds more than once (duplicated: a retry written twice);
what the consumer saw change or go backwards (divergences); faults per kind; each partition's
longest time without an acknowledgement; acknowledged records the group never delivered (group_missed) and
committed offsets that went backwards (commit_regressions); with the pipeline, acknowledged records its Parquet
output did not count (pipeline_missing) and records it counted more often than they can have been written
(pipeline_duplicates); and the verifier's JSON. A run passes only when nothing was lost, duplicated, divergent,
missed by the group or the pipeline, committed backwards or counted twice, and the verifier found nothing.
Beside it, DIR/report.html draws the run (client/chaos/report.py): the faults, each partition's leader and ISR as
ZooKeeper held them, writes per second, the verdict.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from client import netsplit
from client.admin import Admin, NewTopic
from client.chaos.duplicates import duplicated
from client.chaos.group_workload import GROUP, GroupConsumers
from client.chaos.nemesis import Nemesis, Timeouts
from client.chaos.observer import LeadershipObserver
from client.chaos.pipeline import PipelineError, SparkPipeline
from client.chaos.report import REPORT_FILE, SoakRecord, render_report, report_data
from client.chaos.schedule import FAULT_KINDS, schedule
from client.chaos.workload import CheckingConsumer, HistoryProducers, ReadRecord
from client.cluster import (
    CHROOT,
    CLUSTER_FILE,
    ClusterState,
    any_running,
    cluster_down,
    cluster_up,
    load_cluster,
)
from client.consumer import Consumer
from client.progress import Progress
from protocol.history import HistoryWriter
from zk.client import ZkClient

TOPIC = "chaos"
PRODUCERS = "producers"
SPARK_PIPELINE = "spark-pipeline"
#: What runs against the cluster: the producers, checking consumer and group always; the Spark pipeline with it.
WORKLOADS = (PRODUCERS, SPARK_PIPELINE)
HISTORY_FILE = "history.jsonl"
SUMMARY_FILE = "chaos-summary.json"
REPLICATION_FACTOR = 3
#: The Spark pipeline's: the topic of the record that closes its windows, its output topic, its directory.
PIPELINE_END_TOPIC = f"{TOPIC}-pipeline-end"
PIPELINE_OUTPUT_TOPIC = f"{TOPIC}-counts"
PIPELINE_DIR = "pipeline"
#: Timeouts of a few seconds, so that faults of a few seconds expire sessions and shrink ISRs.
CHAOS_CONFIG: dict[str, str] = {
    "zookeeper.session.timeout.ms": "3000",
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.wait.max.ms": "200",
    "replica.socket.timeout.ms": "3000",
    "controller.socket.timeout.ms": "3000",
    "controlled.shutdown.retry.backoff.ms": "200",
    "replica.high.watermark.checkpoint.interval.ms": "500",
    "min.insync.replicas": "2",
    "unclean.leader.election.enable": "false",
}
_READ_TIMEOUT_S = 60.0
#: How long a Spark driver may take to start and commit its first micro-batch on a loaded machine.
_PIPELINE_START_S = 300.0

#: Runs the replica verifier over broker log directories with a history (telling its progress); returns its JSON
#: report.
Verifier = Callable[[list[Path], Path, Callable[[str], None]], Mapping[str, Any]]


class ChaosError(RuntimeError):
    """The soak could not run (bad options, no root, the cluster did not start); nothing was judged."""


@dataclass(frozen=True)
class ChaosOptions:
    """What `minikafka chaos run` was asked for."""

    directory: Path
    duration_s: float
    seed: int
    faults: tuple[str, ...] = tuple(FAULT_KINDS)
    brokers: int = 3
    overrides: Mapping[str, str] = field(default_factory=dict)
    producers: int = 2
    rate: float = 100.0
    workload: str = PRODUCERS

    def replay_command(self) -> str:
        """The command that runs the same schedule again (in a fresh directory)."""
        words = ["minikafka", "chaos", "run", "--dir", f"{self.directory}-replay", "--duration",
                 f"{self.duration_s:g}", "--seed", str(self.seed), "--faults", ",".join(self.faults),
                 "--brokers", str(self.brokers)]
        if self.workload != PRODUCERS:
            words += ["--workload", self.workload]
        for key, value in self.overrides.items():
            words += ["--config", f"{key}={value}"]
        return shlex.join(words)

    @property
    def config(self) -> dict[str, str]:
        return {**CHAOS_CONFIG, **self.overrides}

    @property
    def timeouts(self) -> Timeouts:
        config = self.config
        return Timeouts(session_s=int(config["zookeeper.session.timeout.ms"]) / 1000,
                        lag_s=int(config["replica.lag.time.max.ms"]) / 1000)


class _Progress:
    """One line per event on stderr, stamped with the seconds since the soak started, said through the command's
    status line (`terminal`), which shows how far the faults and the verification are while they run."""

    def __init__(self, terminal: Progress) -> None:
        self.terminal = terminal
        self.start = time.monotonic()

    def __call__(self, message: str) -> None:
        self.terminal.say(f"[{time.monotonic() - self.start:7.1f}s] {message}")


async def run_chaos(options: ChaosOptions, verify: Verifier, terminal: Progress | None = None) -> dict[str, Any]:
    """Run the soak; returns the summary (its "passed" says whether nothing was lost, duplicated or found
    divergent). Event lines go to stderr, and to `terminal`'s status line how far it is (none if not given)."""
    if options.brokers < REPLICATION_FACTOR:
        raise ChaosError(f"the soak's topic has replication factor {REPLICATION_FACTOR}: it needs at least "
                         f"{REPLICATION_FACTOR} brokers, not {options.brokers}")
    if not netsplit.can_change_rules():
        raise ChaosError("the soak cuts the network with nftables rules, which needs root and nft (Debian's "
                         "nftables); nothing was started")
    directory = _prepare_directory(options.directory)
    progress = _Progress(terminal or Progress(enabled=False))
    progress(f"seed {options.seed}: faults {', '.join(options.faults)} for {options.duration_s:g} s on "
             f"{options.brokers} brokers in {directory}")
    try:
        state = await cluster_up(directory, brokers=options.brokers, overrides=options.config)
    except Exception as e:
        raise ChaosError(f"the cluster did not start: {e}") from None
    try:
        summary, record = await _soak(options, state, progress)
    finally:
        with contextlib.suppress(Exception):
            await asyncio.to_thread(netsplit.heal, load_cluster(directory).addresses)
        await cluster_down(directory)
        progress("cluster stopped")
    log_dirs = [Path(b.log_dir) for b in state.brokers]
    progress(f"verifying {len(log_dirs)} log directories with the history")
    with progress.terminal.ticking(lambda seconds: f"chaos: verifying the replicas ({seconds:.0f} s)"):
        report = dict(await asyncio.to_thread(verify, log_dirs, directory / HISTORY_FILE,
                                              lambda message: progress(f"verifier: {message}")))
    summary["verify"] = report
    summary["passed"] = (summary["lost"] == 0 and summary["duplicated"] == 0 and summary["divergences"] == 0
                         and summary["group_missed"] == 0 and not summary.get("pipeline_missing")
                         and not summary.get("pipeline_duplicates") and not summary.get("pipeline", {}).get("error")
                         and summary["commit_regressions"] == 0 and bool(report.get("consistent")))
    summary["replay"] = options.replay_command()
    summary["report"] = str(directory / REPORT_FILE)
    progress(f"verifier: {'consistent' if report.get('consistent') else 'VIOLATIONS'}; soak "
             f"{'passed' if summary['passed'] else 'FAILED'}")
    (directory / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    (directory / REPORT_FILE).write_text(render_report(report_data(summary, record)), encoding="utf-8")
    progress(f"report: {directory / REPORT_FILE}")
    return summary


async def _soak(options: ChaosOptions, state: ClusterState, progress: _Progress) -> tuple[dict[str, Any], SoakRecord]:
    directory = state.directory
    partitions = options.brokers
    topics = [NewTopic(TOPIC, partitions, REPLICATION_FACTOR)]
    pipeline = None
    if options.workload == SPARK_PIPELINE:
        try:
            pipeline = SparkPipeline(state.bootstrap_servers, TOPIC, PIPELINE_END_TOPIC, PIPELINE_OUTPUT_TOPIC,
                                     directory / PIPELINE_DIR, progress)
        except PipelineError as e:
            raise ChaosError(str(e)) from None
        topics += [NewTopic(PIPELINE_END_TOPIC, 1, REPLICATION_FACTOR),
                   NewTopic(PIPELINE_OUTPUT_TOPIC, partitions, REPLICATION_FACTOR, {"cleanup.policy": "compact"})]
    async with Admin(state.bootstrap_servers, request_timeout_ms=10_000) as admin:
        await admin.create_topics(topics)
    zk = ZkClient(state.zookeeper.connect, chroot=CHROOT, session_timeout_ms=30_000)
    await zk.start()
    history = HistoryWriter(directory / HISTORY_FILE)
    try:
        nemesis = Nemesis(directory, TOPIC, partitions, zk, options.timeouts, progress, group=GROUP)
        if not await nemesis.wait_full_isr():
            raise ChaosError(f"topic {TOPIC} did not get its full ISR")
        producers = HistoryProducers(state.bootstrap_servers, TOPIC, partitions, history, label=f"s{options.seed}",
                                     count=options.producers, rate=options.rate)
        consumer = CheckingConsumer(state.bootstrap_servers, TOPIC, partitions)
        group = GroupConsumers(state.bootstrap_servers, TOPIC, partitions)
        observer = LeadershipObserver(nemesis.partition_state, partitions)
        observing = asyncio.create_task(observer.run())
        workload = [asyncio.create_task(producers.run()), asyncio.create_task(consumer.run()),
                    asyncio.create_task(group.run())]
        if pipeline is not None:
            workload.append(asyncio.create_task(pipeline.run()))
        started = time.monotonic()

        def status(seconds: float) -> str:
            stats = producers.stats
            return (f"chaos: {seconds:.0f} of {options.duration_s:g} s, {sum(nemesis.faults.values())} faults, "
                    f"{len(stats.acked)} acked, {stats.failed} failed, {stats.unknown} unknown")

        try:
            with progress.terminal.ticking(status):
                if pipeline is not None:
                    progress("waiting for the pipeline's first micro-batch before the faults")
                    if not await pipeline.streaming(_PIPELINE_START_S):
                        raise ChaosError(f"the pipeline committed no micro-batch within {_PIPELINE_START_S:.0f} s "
                                         f"(see {pipeline.log})")
                    started = time.monotonic()
                    workload.append(asyncio.create_task(pipeline.kill_mid_batch()))
                await _unleash(nemesis, options, started)
                progress("healing everything; waiting for every partition's full ISR")
                await nemesis.heal_everything()
                await nemesis.wait_recovered()
                full_isr = await nemesis.wait_full_isr()
        finally:
            producers.stop()
            stopped = time.monotonic()
            await asyncio.gather(workload[0], return_exceptions=True)
            consumer.stop()
            progress("waiting for the group to commit past every acknowledged record")
            group_caught_up = await group.caught_up(producers.stats.acked, _READ_TIMEOUT_S)
            group.stop()
            if pipeline is not None:
                pipeline.stop()
            await asyncio.gather(*workload[1:], return_exceptions=True)
            observing.cancel()
            await asyncio.gather(observing, return_exceptions=True)
        for task in workload:
            if task.exception() is not None:
                raise ChaosError(f"the workload failed: {task.exception()!r}")
        progress(f"producers stopped ({producers.stats.attempted} records attempted); reading every partition")
        final = await read_to_end(load_cluster(directory).bootstrap_servers, TOPIC, partitions)
        group.commits.read_back(await group.read_committed())
        if pipeline is not None:
            await pipeline.close_windows()
    finally:
        history.close()
        await zk.close()
    pipeline_verdict: dict[str, Any] = {}
    if pipeline is not None:
        progress("running the pipeline to completion and comparing its output with the history")
        with progress.terminal.ticking(lambda seconds: f"chaos: finishing the pipeline ({seconds:.0f} s)"):
            pipeline_verdict = await pipeline.verdict(TOPIC, directory / HISTORY_FILE)
        progress(f"pipeline: counted {pipeline_verdict['pipeline']['counted']}, missing "
                 f"{pipeline_verdict['pipeline_missing']}, duplicates {pipeline_verdict['pipeline_duplicates']}")
    stats = producers.stats
    lost = [a for a in stats.acked if final[a.partition].get(a.offset) != ReadRecord(a.key, a.value)]
    twice = duplicated(stats.acked, final)
    changed = [f"{TOPIC}-{p}: offset {o} was read as {r} during the soak and as {final[p].get(o)} at the end"
               for p, seen in consumer.seen.items() for o, r in seen.items() if final[p].get(o) != r]
    violations = consumer.violations + changed
    unavailable = stats.unavailable_ms(range(partitions), started, stopped)
    record = SoakRecord(TOPIC, partitions, REPLICATION_FACTOR, int(options.config["min.insync.replicas"]), started,
                        stopped, nemesis.injected, observer.changes, stats.times)
    return {
        "seed": options.seed,
        "workload": options.workload,
        "duration_s": options.duration_s,
        "elapsed_s": round(stopped - started, 1),
        "brokers": options.brokers,
        "attempted": stats.attempted,
        "acked": len(stats.acked),
        "failed": stats.failed,
        "unknown": stats.unknown,
        "lost": len(lost),
        "duplicated": len(twice),
        "divergences": len(violations),
        "faults": {kind: nemesis.faults[kind] for kind in options.faults},
        "unavailable_ms": {f"{TOPIC}-{p}": ms for p, ms in unavailable.items()},
        "full_isr_at_end": full_isr,
        "consumer": {"read": consumer.read, "violations": violations[:20]},
        "lost_examples": [f"{TOPIC}-{a.partition} offset {a.offset}: {a.value!r}" for a in lost[:20]],
        "duplicated_examples": twice[:20],
        **group.verdict(stats.acked, group_caught_up),
        **pipeline_verdict,
    }, record


async def _unleash(nemesis: Nemesis, options: ChaosOptions, started: float) -> None:
    """Faults from the schedule until the duration has passed and the first round is complete."""
    for plan in schedule(options.seed, options.faults):
        first_round_done = plan.number > len(options.faults)
        if first_round_done and time.monotonic() - started >= options.duration_s:
            return
        await nemesis.run(plan)


async def read_to_end(bootstrap: str, topic: str, partitions: int) -> dict[int, dict[int, ReadRecord]]:
    """Every record of every partition from its log start to its high watermark, by partition and offset."""
    records: dict[int, dict[int, ReadRecord]] = {p: {} for p in range(partitions)}
    async with Consumer(bootstrap, auto_offset_reset="earliest", request_timeout_ms=10_000,
                        fetch_max_wait_ms=100, client_id="chaos-final-read") as consumer:
        tps = [(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_end()
        ends = {p: await consumer.position((topic, p)) for p in range(partitions)}
        await consumer.seek_to_beginning()
        deadline = time.monotonic() + _READ_TIMEOUT_S
        while [tp for tp in tps if await consumer.position(tp) < ends[tp[1]]]:
            if time.monotonic() > deadline:
                raise ChaosError(f"could not read {topic} to its end {ends} within {_READ_TIMEOUT_S:.0f} s")
            for record in await consumer.poll(timeout_ms=500, max_records=10_000):
                records[record.partition][record.offset] = ReadRecord(
                    *(None if b is None else b.decode("utf-8", errors="backslashreplace")
                      for b in (record.key, record.value)))
    return records


def _prepare_directory(directory: Path) -> Path:
    """The soak's directory, empty: a previous soak's (its history and stopped cluster) is removed; any other
    non-empty directory is refused."""
    directory = directory.resolve()
    if directory.exists() and any(directory.iterdir()):
        if not (directory / HISTORY_FILE).exists() or not (directory / CLUSTER_FILE).exists():
            raise ChaosError(f"{directory} is not empty and holds no earlier soak: choose another --dir")
        if any_running(load_cluster(directory)):
            raise ChaosError(f"a cluster still runs in {directory}: `minikafka cluster down --dir {directory}`")
        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    return directory
