"""`minikafka chaos run --workload spark-pipeline` as a user runs it: the example Spark pipeline (Kafka source,
windowed counts per key, Parquet and Kafka sinks) streams the soak's topic while brokers are killed -9 (every broker
leads one of the topic's partitions) and partitions' leaders are cut off, and its driver is killed -9 in the middle
of a micro-batch and started again from its checkpoint; after the faults its query runs to completion, and its
Parquet output counts every acknowledged record exactly once, with the replica verifier's report beside it and
both figures in the run's report."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.chaos.test_chaos_soak import chaos_run

FAULTS_S = 30


def test_the_spark_pipeline_counts_every_acknowledged_record_once_through_broker_faults(tmp_path: Path):
    result = chaos_run(tmp_path / "soak", "--duration", str(FAULTS_S), "--seed", "11", "--faults",
                       "kill,isolate-leader", "--workload", "spark-pipeline")
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    summary = json.loads(result.stdout)
    assert summary["workload"] == "spark-pipeline"
    assert summary["faults"]["kill"] >= 1 and summary["faults"]["isolate-leader"] >= 1, summary["faults"]
    assert (summary["pipeline_missing"], summary["pipeline_duplicates"]) == (0, 0), summary["pipeline"]
    pipeline = summary["pipeline"]
    assert pipeline["error"] is None
    # the query streamed while the faults ran, and its output counted every acknowledged record (an unknown one at
    # most once)
    assert pipeline["batches_streamed"] > 0 and pipeline["batches"] > pipeline["batches_streamed"], pipeline
    assert pipeline["driver_kills"] == 1 and pipeline["driver_starts"] >= 2, pipeline
    assert 0 < summary["acked"] <= pipeline["counted"] <= summary["acked"] + summary["unknown"], summary
    assert (summary["lost"], summary["duplicated"], summary["divergences"]) == (0, 0, 0), summary
    assert summary["verify"]["consistent"] and summary["verify"]["acked"] == summary["acked"], summary["verify"]
    assert "--workload spark-pipeline" in summary["replay"]
    page = Path(summary["report"]).read_text()
    [inline] = re.findall(r'<script id="soak-data" type="application/json">(.*?)</script>', page, re.S)
    verdict = json.loads(inline)["verdict"]
    assert (verdict["pipeline_counted"], verdict["pipeline_missing"], verdict["pipeline_duplicates"]) == (
        pipeline["counted"], 0, 0)
