"""The verification job: the layout's segments as a DataFrame, the checks, the history, the report."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from pyspark import Accumulator, inheritable_thread_target
from pyspark.sql import DataFrame, Row, SparkSession

from protocol.history import History
from verifier import checks, compaction
from verifier.history_check import check_history
from verifier.layout import Layout
from verifier.report import ReplicaRow, Report, TornTail, Violation
from verifier.source import read_batches, read_keyed_records, read_records
from verifier.splits import Split, plan_splits
from verifier.views import Views, local_table

Progress = Callable[[str], None]
#: Shows a status line while a block runs, from the seconds spent in it (client/progress.py's Progress.ticking).
Ticking = Callable[[Callable[[float], str]], AbstractContextManager[None]]
#: Segment bytes per task of the checks: their tables hold a row per batch, so a task's fixed cost outweighs its work
#: until the data is large.
CHECK_BYTES_PER_TASK = 1 << 30


def _quiet(_: str) -> None:
    """The default progress sink: nothing."""


def _no_status(_describe: Callable[[float], str]) -> AbstractContextManager[None]:
    """The default status line: none."""
    return nullcontext()


class ScanStatus:
    """What the status line says of a verification: the segment bytes read so far (an accumulator the scan's tasks
    add to) and what is being done (the checks under way)."""

    def __init__(self, spark: SparkSession, total_bytes: int) -> None:
        self.bytes_read = spark.sparkContext.accumulator(0)
        self.total_bytes = total_bytes
        self.doing = "checking batches, replicas and checkpoints"

    def __call__(self, seconds: float) -> str:
        return (f"verify {seconds:.0f} s: segments {self.bytes_read.value / 1e6:,.0f}/{self.total_bytes / 1e6:,.0f} "
                f"MB read; {self.doing}")


def run_job(spark: SparkSession, layout: Layout, history: History | None = None, output: Path | None = None,
            progress: Progress = _quiet, ticking: Ticking | None = None) -> Report:
    splits = plan_splits(layout.replicas)
    progress(f"{len(layout.log_dirs)} log directories: {len(layout.partitions)} partitions, "
             f"{len(layout.replicas)} replicas, {sum(len(r.segments) for r in layout.replicas)} segment files "
             f"in {len(splits)} splits")
    total = sum(s.end - s.start for s in splits)
    tasks = tasks_for_checks(total, spark.sparkContext.defaultParallelism)
    status = ScanStatus(spark, total)
    with settings_for_checks(spark, tasks), (ticking or _no_status)(status):
        return _verify_splits(spark, layout, splits, tasks, history, output, progress, status)


@contextmanager
def settings_for_checks(spark: SparkSession, tasks: int) -> Iterator[None]:
    """The session's settings for the checks inside the block: their shuffles in ``tasks`` partitions, no adaptive
    execution, and no description of each query's plan. The checks' tables hold a row per batch or per replica:
    there, adaptive execution's planning of each shuffle's consumers again once it has run costs more than it finds.
    It is off from the start, so that the cached batch table is planned without it too. Spark writes out each query's
    plan when the query starts, for its UI (which the verifier's session does not run): 44 ms for the violations'
    query, each time. The settings are put back as they were afterwards."""
    settings = {"spark.sql.shuffle.partitions": str(tasks), "spark.sql.adaptive.enabled": "false",
                "spark.sql.maxPlanStringLength": "0"}
    before = {key: spark.conf.get(key) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            spark.conf.set(key, value)


def tasks_for_checks(segment_bytes: int, parallelism: int) -> int:
    """How many tasks the checks run in: one per CHECK_BYTES_PER_TASK of segment data, at least 1 and at most one
    per core."""
    return max(1, min(parallelism, -(-segment_bytes // CHECK_BYTES_PER_TASK)))


def _verify_splits(spark: SparkSession, layout: Layout, splits: list[Split], tasks: int, history: History | None,
                   output: Path | None, progress: Progress, status: ScanStatus) -> Report:
    with Views(spark) as views:
        batches = cache_batches(views, splits, tasks, status.bytes_read)
        if layout.compacted:
            views.add("keyed", read_keyed_records(spark, [s for s in splits if (s.topic, s.partition) in
                                                           layout.compacted]), cached=True)
        summary = views.add("summary", checks.replica_summary(views, layout), cached=True)
        summary_rows, found = _summary_and_violations(summary, views, layout)
        progress(f"read {sum(r['batches'] for r in summary_rows)} batches, "
                 f"{sum(r['bytes'] for r in summary_rows)} bytes")
        violations = [Violation(**row.asDict()) for row in found if row["kind"] != checks.TORN_TAIL]
        torn = [_torn_tail(row) for row in found if row["kind"] == checks.TORN_TAIL]
        violations += layout.findings
        notes = list(layout.notes)
        history_counts = None
        if history is not None:
            progress(f"checking {len(history.outcomes)} history records")
            status.doing = f"checking the history ({len(history.outcomes):,} records)"
            topics = {o.topic for o in history.outcomes}
            records = read_records(spark, [s for s in splits if s.topic in topics])
            gone = compaction.superseded(views, history.outcomes, layout.compacted) if layout.compacted else None
            findings = check_history(views, history, records, summary, gone)
            violations += findings.violations
            history_counts = {"acked": findings.acked, "lost": findings.lost, "failed": findings.failed,
                              "failed_present": findings.failed_present, "unknown": findings.unknown,
                              "unknown_present": findings.unknown_present,
                              "duplicates": len(findings.duplicates)}
            notes += list(history.warnings)
            notes += [f"duplicate: the acknowledged value of {topic}-{partition} is at offsets "
                      f"{', '.join(map(str, offsets))}" for topic, partition, offsets in findings.duplicates]
        epochs = {r.replica_id: r.epochs for r in layout.replicas}
        report = Report([_replica_row(row, epochs[row["replica_id"]]) for row in summary_rows], violations, torn,
                        notes, history_counts)
        if output is not None:
            status.doing = f"writing Parquet to {output}"
            _write_parquet(spark, output, batches, summary, report)
            progress(f"wrote batches.parquet, replicas.parquet and violations.parquet to {output}")
        return report


def _summary_and_violations(summary: DataFrame, views: Views, layout: Layout) -> tuple[list[Row], list[Row]]:
    """The collected summary and violations. The summary's query (the first to read the cached batch table, so the
    one that reads the segment files) runs in a thread of its own, with this thread's Spark properties and tags
    (such as its job group), while this one plans the violations' query, the larger one, which then waits for the
    cached tables where it reads them (Spark computes a cached partition once). Leaving the pool waits for the
    thread even when the violations' query fails: the views it reads are dropped afterwards."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        collecting_summary = pool.submit(inheritable_thread_target(views.spark)(summary.collect))
        found = checks.violations(views, layout)
        if layout.compacted:
            found = found.unionByName(views.sql(compaction.agreement()))
        found = found.collect()
    return collecting_summary.result(), found


def cache_batches(views: Views, splits: list[Split], tasks: int, bytes_read: Accumulator[int] | None = None
                  ) -> DataFrame:
    """The view ``batches``: the splits' batches, cached in ``tasks`` partitions by replica, so that the checks by
    replica (the summary, each replica's batches in order, its epochs) need no shuffle of their own. The scan runs
    in tasks of its own (verifier.source), which add the bytes they read to `bytes_read`."""
    return views.add("batches", read_batches(views.spark, splits, bytes_read).repartition(tasks, "replica_id"),
                     cached=True)


def _torn_tail(row: Row) -> TornTail:
    segment, size, detail = row["detail"].split(" ", 2)
    return TornTail(row["broker"], row["topic"], row["partition"], int(segment), row["offset"], int(size), detail)


def _replica_row(row: Row, epochs: tuple[tuple[int, int], ...] | None) -> ReplicaRow:
    return ReplicaRow(row["broker"], row["topic"], row["partition"], row["log_start"], row["hw"],
                      row["hw_checkpoint"], row["leo"], row["recovery_point"], row["batches"], row["records"],
                      row["bytes"], epochs)


def _write_parquet(spark: SparkSession, output: Path, batches: DataFrame, summary: DataFrame, report: Report) -> None:
    target = output.resolve().as_uri()
    batches.write.mode("overwrite").parquet(f"{target}/batches.parquet")
    summary.write.mode("overwrite").parquet(f"{target}/replicas.parquet")
    rows = [(v.kind, v.topic, v.partition, v.broker, v.offset, v.detail) for v in report.violations]
    schema = "kind string, topic string, partition int, broker int, offset bigint, detail string"
    local_table(spark, rows, schema).coalesce(1).write.mode("overwrite").parquet(f"{target}/violations.parquet")
