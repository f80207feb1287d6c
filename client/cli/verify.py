"""`minikafka verify`: the PySpark replica verifier over broker log directories."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from client.cli.common import dir_option
from client.cluster import ClusterError, load_cluster

#: Exit statuses: consistent, a violation found, no verdict (bad usage, unreadable input, or Spark failing).
CONSISTENT, VIOLATION, BAD_INPUT = 0, 1, 2


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(BAD_INPUT)


def _progress(message: str) -> None:
    click.echo(message, err=True)


@click.command("verify")
@click.argument("log_dirs", nargs=-1, type=click.Path(path_type=Path))
@dir_option
@click.option("--history", "history_file", type=click.Path(path_type=Path),
              help="A producer history (JSON lines, as `produce --history` writes it) to check against.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--master", metavar="URL", help="Spark master [default: local[*], or spark-submit's].")
@click.option("--output", type=click.Path(file_okay=False, path_type=Path),
              help="Write the batch table, the replicas and the violations to DIR as Parquet.")
def verify_command(log_dirs: tuple[Path, ...], directory: Path, history_file: Path | None, as_json: bool,
                   master: str | None, output: Path | None) -> None:
    """Check that the replicas in broker log directories agree and that nothing acknowledged is lost.

    Reads LOG_DIRs (minikafka's or Apache Kafka's), or without them every broker of the local cluster in --dir
    (running or stopped). Exit status 0 when consistent, 1 when a violation is found, 2 for bad usage, unreadable
    input, or Spark failing (the error says why, and where Spark's log is). Progress goes to stderr."""
    from verifier import HistoryError, LayoutError, verify
    from verifier.session import under_spark_submit
    from verifier.spark_failure import SPARK_ERRORS, spark_failure

    if not log_dirs:
        try:
            cluster = load_cluster(directory)
        except ClusterError as e:
            _fail(f"no LOG_DIR given, and {e}")
        log_dirs = tuple(Path(broker.log_dir) for broker in cluster.brokers)
    try:
        # spark-submit merges the application's stderr into its stdout: there, --json prints the object alone.
        quiet = as_json and under_spark_submit()
        report = verify(list(log_dirs), history_file, master, output=output, progress=None if quiet else _progress)
    except (LayoutError, HistoryError) as e:
        _fail(str(e))
    except SPARK_ERRORS as e:
        _fail(spark_failure(e))
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        from verifier.report import render_table

        click.echo(render_table(report))
    sys.exit(CONSISTENT if report.consistent else VIOLATION)
