"""`minikafka chaos run`: a seeded soak under faults that ends in the replica verifier's verdict."""

from __future__ import annotations

import json
import logging
import random
import sys
from pathlib import Path
from typing import Any

import click

from client.chaos.runner import PRODUCERS, WORKLOADS, ChaosError, ChaosOptions, run_chaos
from client.chaos.schedule import FAULT_KINDS, parse_kinds
from client.chaos.verdict import verify_log_dirs
from client.cli.common import key_values, run
from client.progress import Progress


@click.group("chaos")
def chaos_group() -> None:
    """Break a local cluster on purpose and check that no acknowledged record was lost."""


def _faults(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    try:
        return parse_kinds(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


@chaos_group.command("run")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=Path("minikafka-chaos"),
              show_default=True, help="Where the soak's cluster, history and summary go (a previous soak's is "
                                      "replaced).")
@click.option("--duration", type=click.FloatRange(min=0), default=60, show_default=True,
              help="Seconds of faults (the first round of every chosen kind always completes).")
@click.option("--seed", type=int, default=None, help="The schedule's seed [default: random, printed].")
@click.option("--faults", callback=_faults, metavar="LIST",
              help=f"Comma-separated fault kinds [default: all]: {', '.join(FAULT_KINDS)}.")
@click.option("--brokers", type=click.IntRange(min=3), default=3, show_default=True, help="Number of brokers.")
@click.option("--config", "overrides", multiple=True, metavar="KEY=VALUE", callback=key_values,
              help="A broker setting replacing the soak's (repeatable), e.g. min.insync.replicas=1.")
@click.option("--workload", type=click.Choice(WORKLOADS), default=PRODUCERS, show_default=True,
              help="What runs against the cluster: the producers, a checking consumer and a consumer group; "
                   "spark-pipeline adds the example Spark pipeline, whose Parquet output must count every "
                   "acknowledged record exactly once.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
def chaos_run_command(directory: Path, duration: float, seed: int | None, faults: tuple[str, ...], brokers: int,
                      overrides: dict[str, str], workload: str, as_json: bool) -> None:
    """Run a cluster under idempotent acks=all load while a nemesis injects faults on a seeded schedule (kill -9,
    SIGSTOP, controlled shutdown, network partitions), then verify every replica against the producers' history.

    Needs root (partitions are nftables rules). Exit status 0 when nothing acknowledged was lost or written
    twice and nothing diverged (and the pipeline's output, with --workload spark-pipeline, counted each
    acknowledged record exactly once), 1 otherwise (the command that replays the run is printed), 2 when the soak
    could not run."""
    logging.getLogger("client.producer").setLevel(logging.ERROR)  # retries during faults are expected
    options = ChaosOptions(directory=directory, duration_s=duration,
                           seed=random.SystemRandom().randrange(1 << 31) if seed is None else seed,
                           faults=faults, brokers=brokers, overrides=overrides, workload=workload)
    try:
        summary = run(run_chaos(options, verify_log_dirs, Progress(enabled=not as_json)))
    except ChaosError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(2)
    except click.ClickException as e:  # the cluster failed under it: nothing was judged
        click.echo(f"Error: {e.format_message()}", err=True)
        sys.exit(2)
    click.echo(json.dumps(summary) if as_json else describe_summary(summary))
    if not summary["passed"]:
        click.echo(f"replay: {summary['replay']}", err=True)
        sys.exit(1)


def describe_summary(summary: dict[str, Any]) -> str:
    """The summary as a few lines of text."""
    faults = ", ".join(f"{kind} {count}" for kind, count in summary["faults"].items())
    unavailable = ", ".join(f"{tp} {ms} ms" for tp, ms in summary["unavailable_ms"].items())
    verify = summary["verify"]
    lines = [
        f"chaos run: seed {summary['seed']}, {summary['elapsed_s']} s of faults on {summary['brokers']} brokers",
        f"faults: {faults}",
        f"records: attempted {summary['attempted']}, acked {summary['acked']}, failed {summary['failed']}, "
        f"unknown {summary['unknown']}",
        f"lost: {summary['lost']}, divergences: {summary['divergences']}",
        f"group {summary['group']['group']}: delivered {summary['group']['delivered']}, commits "
        f"{summary['group']['commits']}, missed {summary['group_missed']}, commit regressions "
        f"{summary['commit_regressions']}",
        *_pipeline_lines(summary),
        f"longest time without an acks=all write: {unavailable}",
        f"verifier: {'consistent' if verify.get('consistent') else 'INCONSISTENT'} (acked {verify.get('acked')}, "
        f"lost {verify.get('lost')}, violations {len(verify.get('violations', []))})",
        *[f"  lost {example}" for example in summary["lost_examples"]],
        *[f"  divergence: {violation}" for violation in summary["consumer"]["violations"]],
        *[f"  group missed {example}" for example in summary["group"]["missed_examples"]],
        *[f"  commit regression: {regression}" for regression in summary["group"]["regressions"]],
        *[f"  verifier: {v}" for v in verify.get("violations", [])[:20]],
        f"report: {summary['report']}",
        "PASSED" if summary["passed"] else "FAILED",
    ]
    return "\n".join(lines)


def _pipeline_lines(summary: dict[str, Any]) -> list[str]:
    """The pipeline's figures and examples (none for the producers' workload)."""
    if "pipeline" not in summary:
        return []
    pipeline = summary["pipeline"]
    return [f"pipeline: counted {pipeline['counted']}, missing {summary['pipeline_missing']}, duplicates "
            f"{summary['pipeline_duplicates']}, driver started {pipeline['driver_starts']} times",
            *([f"  pipeline error: {pipeline['error']}"] if pipeline["error"] else []),
            *[f"  pipeline missed {example}" for example in pipeline["missing_examples"]],
            *[f"  pipeline duplicate {example}" for example in pipeline["duplicate_examples"]]]
