"""`minikafka verify`: the PySpark replica verifier over broker log directories."""

from __future__ import annotations

from pathlib import Path

import click

from client.cli.common import dir_option
from client.cluster import ClusterError, load_cluster
from client.progress import Progress
from verifier.command import fail, log_dirs_argument, run_verification, verify_options


@click.command("verify")
@log_dirs_argument
@dir_option
@verify_options
def verify_command(log_dirs: tuple[Path, ...], directory: Path, history_file: Path | None,
                   compacted_topics: tuple[str, ...], as_json: bool,
                   master: str | None, output: Path | None) -> None:
    """Check that the replicas in broker log directories agree and that nothing acknowledged is lost.

    Reads LOG_DIRs (minikafka's or Apache Kafka's), or without them every broker of the local cluster in --dir
    (running or stopped). Exit status 0 when consistent, 1 when a violation is found, 2 for bad usage, unreadable
    input, or Spark failing (the error says why, and where Spark's log is). Progress goes to stderr (on a terminal
    without --json, also a status line: segments read, the checks under way)."""
    if not log_dirs:
        try:
            cluster = load_cluster(directory)
        except ClusterError as e:
            fail(f"no LOG_DIR given, and {e}")
        log_dirs = tuple(Path(broker.log_dir) for broker in cluster.brokers)
    progress = Progress(enabled=not as_json)
    run_verification(log_dirs, history_file, compacted_topics, as_json, master, output, say=progress.say,
                     ticking=progress.ticking)
