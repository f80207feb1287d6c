"""`minikafka replica-verification`: check that every replica of each partition holds the same batches, like
Kafka's kafka-replica-verification (the online check; the PySpark verifier is the offline one)."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from pathlib import Path

import click

from client.cli.common import client_options, client_security, resolve_bootstrap, run
from client.replica_verification import ReplicaVerifier, Report


def _report_json(report: Report, **extra: object) -> str:
    return json.dumps({"time_ms": report.time_ms, "max_lag": report.max_lag, "partition": report.partition,
                       "offset": report.offset, "partitions": report.partitions, "mismatches": list(report.problems),
                       **extra})


@click.command("replica-verification")
@click.option("--topic-white-list", default=".*", show_default=True, metavar="REGEX",
              help="The topics to verify: a regular expression matching the whole name.")
@click.option("--report-interval-ms", type=click.IntRange(min=1), default=30000, show_default=True,
              help="How often to print the largest lag.")
@click.option("--once", is_flag=True, help="Verify up to each partition's high watermark of now, then exit: 0 if "
              "every replica agrees, 1 otherwise.")
@click.option("--timeout-ms", type=click.IntRange(min=0), default=30000, show_default=True,
              help="With --once: how long replicas may take to catch up to that high watermark.")
@click.option("--json", "as_json", is_flag=True, help="JSON objects instead of report lines.")
@client_options
def replica_verification_command(topic_white_list: str, report_interval_ms: int, once: bool, timeout_ms: int,
                                 as_json: bool, bootstrap_server: str | None, directory: Path) -> None:
    """Fetch the same offsets from every replica of each partition (followers too, each up to its own high
    watermark) and compare the batches: offsets, leader epochs, CRCs. Prints, like Kafka's tool, the largest lag
    (high watermark minus verified offset) and where, and each disagreement found."""
    try:
        re.compile(topic_white_list)
    except re.error as e:
        raise click.BadParameter(f"{topic_white_list!r} is an invalid regex: {e}",
                                 param_hint="--topic-white-list") from None
    bootstrap = resolve_bootstrap(bootstrap_server, directory)

    async def verify() -> bool:
        verifier = ReplicaVerifier(bootstrap, topic_white_list, **client_security())
        try:
            try:
                await verifier.start(once=once)
            except ValueError as e:
                raise click.ClickException(str(e)) from None
            if once:
                return _once(verifier, await verifier.run_once(timeout_ms / 1000), as_json)
            await _forever(verifier, report_interval_ms / 1000, as_json)
            return True
        finally:
            await verifier.close()

    if not run(verify()):
        sys.exit(1)


def _once(verifier: ReplicaVerifier, agreed: bool, as_json: bool) -> bool:
    report = verifier.report()
    unfinished = {p.name: {"verified_to": p.offset, "goal": p.target, "unreadable": p.unreadable}
                  for p in verifier.unfinished()}
    if as_json:
        click.echo(_report_json(report, ok=agreed, unfinished=unfinished))
        return agreed
    for problem in report.problems:
        click.echo(problem)
    for name, where in unfinished.items():
        why = "; ".join(where["unreadable"].values()) or "replicas did not catch up"
        click.echo(f"partition {name}: verified only up to offset {where['verified_to']} of {where['goal']} ({why})")
    click.echo(report.line())
    click.echo(f"every replica agrees up to the high watermark ({report.partitions} partitions)" if agreed
               else "replicas disagree or could not be verified up to the high watermark")
    return agreed


async def _forever(verifier: ReplicaVerifier, interval_s: float, as_json: bool) -> None:
    click.echo(f"{time.strftime('%Y-%m-%d %H:%M:%S')}: verification process is started.", err=as_json)
    shown = 0
    next_report = time.monotonic() + interval_s
    while True:
        moved = await verifier.verify_round()
        report = verifier.report()
        for problem in report.problems[shown:]:
            click.echo(json.dumps({"mismatch": problem}) if as_json else problem)
        shown = len(report.problems)
        if time.monotonic() >= next_report:
            click.echo(_report_json(report) if as_json else report.line())
            next_report = time.monotonic() + interval_s
        if not moved:
            await asyncio.sleep(min(0.5, interval_s))
