"""The PySpark replica verifier: reads broker log directories (minikafka's or Apache Kafka's) and proves, per
partition, that every batch is intact and every offset accounted for, that the replicas agree below their high
watermarks, that the leader-epoch checkpoints match the batches, that the checkpoints are sane, and, given a
producer history, that no acknowledged record is missing. Compacted partitions are checked by the compaction
contract instead of batch for batch (verifier.compaction).

``verify(log_dirs, history=None, master=None)`` returns a Report whose ``to_json()`` is ``minikafka verify
--json``'s object.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from protocol.history import HistoryError, read_history
from verifier.layout import LayoutError, read_layout

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from verifier.job import Ticking
    from verifier.report import Report

__all__ = ["HistoryError", "LayoutError", "verify"]


def verify(log_dirs: Sequence[Path | str], history: Path | str | None = None, master: str | None = None, *,
           output: Path | str | None = None, spark: SparkSession | None = None,
           progress: Callable[[str], None] | None = None, ticking: Ticking | None = None,
           compacted_topics: Collection[str] = ()) -> Report:
    """Verify the log directories (and the history file, if given) on ``master`` (default local[*]; a running or
    given session is used as it is), telling ``progress`` each step and ``ticking`` (a status line's, see
    verifier.job) how far the scan and the checks are. ``compacted_topics`` are checked as compacted even where no
    cleaner-offset-checkpoint names them (verifier.layout). Raises LayoutError or HistoryError for input that cannot
    be read, before any Spark work."""
    from verifier.job import run_job
    from verifier.session import get_session

    say = progress or (lambda _: None)
    layout = read_layout([Path(p) for p in log_dirs], compacted_topics)
    outcomes = read_history(history) if history is not None else None
    if spark is None:
        spark, started_s = get_session(master)
        if started_s:
            say(f"Spark session started in {started_s:.1f} s")
    return run_job(spark, layout, outcomes, Path(output) if output is not None else None, say, ticking)
