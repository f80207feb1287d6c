"""The verifier as a spark-submit application, with `minikafka verify`'s options and exit statuses:

    spark-submit --master spark://HOST:7077 verifier/submit.py LOG_DIR ... [--history FILE] [--json] [--output DIR]

The master is spark-submit's. The executors need the minikafka package (``pip install``) and must reach the log
directories under the same paths.
"""

from __future__ import annotations

from pathlib import Path

import click

from verifier.command import fail, log_dirs_argument, run_verification, verify_options


@click.command("verify")
@log_dirs_argument
@verify_options
def submit_command(log_dirs: tuple[Path, ...], history_file: Path | None,
                   compacted_topics: tuple[str, ...], as_json: bool, master: str | None,
                   output: Path | None) -> None:
    """Check that the replicas in the broker log directories LOG_DIR ... agree and that nothing acknowledged is
    lost. Exit status 0 when consistent, 1 when a violation is found, 2 for bad usage, unreadable input, or Spark
    failing."""
    if not log_dirs:
        fail("no LOG_DIR given: name the broker log directories to verify")
    run_verification(log_dirs, history_file, compacted_topics, as_json, master, output)


if __name__ == "__main__":
    submit_command(prog_name="verify")
