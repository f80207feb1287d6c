"""The verification's views: the segment files are read once however many checks refer to the batches, the small
tables live in the query plan, and nothing of a verification stays in the session."""

from __future__ import annotations

from pathlib import Path

from tests.verifierutil import log_dir, write_replica
from verifier.layout import read_layout
from verifier.source import read_splits
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
        batches = views.add("batches", read_splits(spark, splits), cached=True)
        assert batches.count() == 2
        twice = views.sql("SELECT a.base_offset FROM {batches} a JOIN {batches} b ON a.base_offset = b.base_offset")
        leaves = _leaves(twice)
        assert len(leaves) == 2 and all(leaf.startswith("Scan In-memory table") for leaf in leaves), leaves
        assert sorted(r[0] for r in twice.collect()) == [0, 2]


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
