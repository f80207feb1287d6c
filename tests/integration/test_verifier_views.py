"""The verification's views: the segment files are read once however many checks refer to the batches, the checks
by replica read them without a shuffle, the small tables live in the query plan, and nothing of a verification
stays in the session."""

from __future__ import annotations

import re
from pathlib import Path

from tests.verifierutil import log_dir, write_replica
from verifier import checks
from verifier.job import cache_batches, settings_for_checks, tasks_for_checks
from verifier.layout import read_layout
from verifier.source import read_batches
from verifier.splits import plan_splits
from verifier.views import Views, local_table


def _leaves(frame) -> list[str]:
    """The names of the leaves of the frame's physical plan: where its rows come from."""
    leaves = frame._jdf.queryExecution().sparkPlan().collectLeaves()
    return [leaves.apply(i).nodeName() for i in range(leaves.size())]


def test_a_cached_view_is_read_from_the_cache_by_every_query_that_names_it(spark, tmp_path: Path):
    directory = log_dir(tmp_path, 1)
    write_replica(directory, "t", 0, [(0, [b"a", b"b"]), (1, [b"c"])])
    splits = plan_splits(read_layout([directory]).replicas)
    with Views(spark) as views:
        batches = views.add("batches", read_batches(spark, splits), cached=True)
        assert batches.count() == 2
        twice = views.sql("SELECT a.base_offset FROM {batches} a JOIN {batches} b ON a.base_offset = b.base_offset")
        leaves = _leaves(twice)
        assert len(leaves) == 2 and all(leaf.startswith("Scan In-memory table") for leaf in leaves), leaves
        assert sorted(r[0] for r in twice.collect()) == [0, 2]


def _shuffles_above_batches(frame, *, of_aggregates: bool = True) -> list[str]:
    """The shuffles (exchanges other than broadcasts) in the frame's executed plan with a scan of the cached batch
    table below them, as Spark describes them; without ``of_aggregates``, only those of batch rows (no aggregation
    in between)."""
    found = []

    def walk(node) -> bool:
        """Whether the node's rows come from the batch table (without ``of_aggregates``: are batch rows)."""
        children = node.children()
        below = any([walk(children.apply(i)) for i in range(children.size())])
        name = node.nodeName()
        if name == "Exchange" and below:
            found.append(node.simpleString(100))
        if name.startswith("Scan In-memory table"):
            return "_batches" in name
        return below and (of_aggregates or not name.endswith("Aggregate"))

    walk(frame._jdf.queryExecution().executedPlan())
    return found


def test_the_checks_by_replica_read_the_cached_batches_without_a_shuffle(spark, tmp_path: Path):
    directories = [log_dir(tmp_path, broker) for broker in (1, 2, 3)]
    for directory in directories:
        for partition in (0, 1):
            write_replica(directory, "t", partition, [(0, [b"a", b"b"]), (1, [b"c"]), (1, [b"d", b"e"])])
    layout = read_layout(directories)
    with settings_for_checks(spark, 2), Views(spark) as views:
        cache_batches(views, plan_splits(layout.replicas), 2)
        query = checks.replica_summary(views, layout)
        assert _shuffles_above_batches(query) == []
        summary = views.add("summary", query, cached=True)
        rows = summary.collect()
        assert sorted((r["broker"], r["partition"], r["batches"], r["leo"]) for r in rows) == [
            (broker, partition, 3, 5) for broker in (1, 2, 3) for partition in (0, 1)]
        found = checks.violations(views, layout)
        assert found.collect() == []
        # Only the agreement of replicas moves batch rows: by partition, once.
        (by_partition,) = _shuffles_above_batches(found, of_aggregates=False)
        assert re.search(r"hashpartitioning\(topic#\d+, partition#\d+, 2\)", by_partition), by_partition


def test_the_violations_are_planned_before_any_job_runs_and_found_without_a_collected_summary(spark, tmp_path: Path):
    one, two = log_dir(tmp_path, 1), log_dir(tmp_path, 2)
    write_replica(one, "t", 0, [(0, [b"a", b"b"]), (0, [b"c"]), (0, [b"d"])])
    write_replica(two, "t", 0, [(0, [b"a", b"b"]), (1, [b"x"]), (1, [b"y"])])
    layout = read_layout([one, two])
    group = f"planning-{tmp_path.name}"
    spark.sparkContext.setJobGroup(group, "the views and the violations' query of a verification")
    try:
        with settings_for_checks(spark, 1), Views(spark) as views:
            cache_batches(views, plan_splits(layout.replicas), 1)
            views.add("summary", checks.replica_summary(views, layout), cached=True)
            found = checks.violations(views, layout)
            assert spark.sparkContext.statusTracker().getJobIdsForGroup(group) == []
            # The replicas' bounds come from the summary inside the query: nothing was collected before it.
            assert [(r["kind"], r["broker"], r["offset"]) for r in found.collect()] == [("divergence", 2, 2)]
    finally:
        spark.sparkContext._jsc.clearJobGroup()


def test_the_checks_run_in_a_task_per_gibibyte_of_segments_and_at_most_one_per_core():
    assert tasks_for_checks(0, 2) == 1
    assert tasks_for_checks(505_000_000, 2) == 1
    assert tasks_for_checks(2**30 + 1, 2) == 2
    assert tasks_for_checks(4 * 2**30, 2) == 2
    assert tasks_for_checks(4 * 2**30, 8) == 4
    assert tasks_for_checks(4 * 2**30, 0) == 1


def test_a_local_table_is_in_the_plan_with_its_schema_and_rows(spark):
    rows = [(1, 2**40, "a", True, b"\x00"), (2, None, None, False, None)]
    table = local_table(spark, rows, "n int, big bigint, s string, flag boolean, raw binary")
    assert _leaves(table) == ["LocalTableScan"]
    assert table.schema.simpleString() == "struct<n:int,big:bigint,s:string,flag:boolean,raw:binary>"
    assert [tuple(r) for r in table.collect()] == [(1, 2**40, "a", True, bytearray(b"\x00")),
                                                    (2, None, None, False, None)]
    assert local_table(spark, [], "n int, s string").count() == 0


def test_a_verifications_views_are_dropped_and_uncached_when_it_ends(spark):
    def ours() -> list[str]:
        return [t.name for t in spark.catalog.listTables() if t.name.startswith("minikafka_verify_")]

    before = ours()
    with Views(spark) as views:
        numbers = views.add("numbers", local_table(spark, [(1,), (2,)], "n int"), cached=True)
        assert views.sql("SELECT sum(n) FROM {numbers}").collect()[0][0] == 3
        assert numbers.storageLevel.useMemory
        assert len(ours()) == len(before) + 1
    assert ours() == before
    assert not numbers.storageLevel.useMemory
