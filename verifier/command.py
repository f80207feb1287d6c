"""The verification as a command line: its arguments and options, and how its outcome is told (a report on stdout,
progress and errors on stderr, the exit status). `minikafka verify` (client/cli/verify.py) and the spark-submit
application (verifier/submit.py) are both made of it."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

if TYPE_CHECKING:
    from verifier.job import Ticking

#: Exit statuses: consistent, a violation found, no verdict (bad usage, unreadable input, or Spark failing).
CONSISTENT, VIOLATION, BAD_INPUT = 0, 1, 2

log_dirs_argument = click.argument("log_dirs", nargs=-1, type=click.Path(path_type=Path))


def verify_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--history, --compacted, --json, --master and --output."""
    for option in reversed([
        click.option("--history", "history_file", type=click.Path(path_type=Path),
                     help="A producer history (JSON lines, as `produce --history` writes it) to check against."),
        click.option("--compacted", "compacted_topics", multiple=True, metavar="TOPIC",
                     help="Check TOPIC as compacted even where no cleaner-offset-checkpoint names its partitions "
                          "(repeatable)."),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON object."),
        click.option("--master", metavar="URL", help="Spark master [default: local[*], or spark-submit's]."),
        click.option("--output", type=click.Path(file_okay=False, path_type=Path),
                     help="Write the batch table, the replicas and the violations to DIR as Parquet."),
    ]):
        f = option(f)
    return f


def fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(BAD_INPUT)


def _progress(message: str) -> None:
    click.echo(message, err=True)


def run_verification(log_dirs: tuple[Path, ...], history_file: Path | None, compacted_topics: tuple[str, ...],
                     as_json: bool, master: str | None, output: Path | None, *, say: Callable[[str], None] = _progress,
                     ticking: Ticking | None = None) -> NoReturn:
    """Verify the log directories, print the report (a table, or with `as_json` one JSON object) and exit with
    CONSISTENT or VIOLATION; BAD_INPUT with one line saying why for unreadable input or Spark failing. Progress
    lines go to `say`, the status line (if any) to `ticking`."""
    from verifier import HistoryError, LayoutError, verify
    from verifier.session import under_spark_submit
    from verifier.spark_failure import SPARK_ERRORS, spark_failure

    try:
        # spark-submit merges the application's stderr into its stdout: there, --json prints the object alone.
        quiet = as_json and under_spark_submit()
        report = verify(list(log_dirs), history_file, master, output=output, progress=None if quiet else say,
                        ticking=ticking, compacted_topics=compacted_topics)
    except (LayoutError, HistoryError) as e:
        fail(str(e))
    except SPARK_ERRORS as e:
        fail(spark_failure(e))
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        from verifier.report import render_table

        click.echo(render_table(report))
    sys.exit(CONSISTENT if report.consistent else VIOLATION)
