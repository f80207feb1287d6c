"""`minikafka state-change-log merge`: the brokers' and controllers' state-change.log files in one time-ordered
story, like Kafka's StateChangeLogMerger."""

from __future__ import annotations

import json
from pathlib import Path

import click

from client.state_change_merge import MergeError, format_entry, merge, parse_time, read_log


def _partitions(text: str | None) -> set[int] | None:
    if text is None:
        return None
    try:
        return {int(p) for p in text.split(",") if p.strip()}
    except ValueError:
        raise click.BadParameter(f"expected partition numbers like 0,1,2, got {text!r}",
                                 param_hint="--partitions") from None


@click.group("state-change-log")
def state_change_log_group() -> None:
    """Read the state-change.log files brokers write (one JSON line per state change)."""


@state_change_log_group.command("merge")
@click.option("--logs", "logs", multiple=True, metavar="FILE[,FILE...]",
              help="state-change.log files (repeatable, or comma-separated; more may follow as arguments).")
@click.argument("more_logs", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--topic", help="Only this topic's changes.")
@click.option("--partitions", "partitions_text", metavar="P[,P...]", help="Only these partitions (with or without "
              "--topic).")
@click.option("--start-time", metavar="ISO", help="Only changes at or after this time, e.g. 2024-05-01T10:00:00 "
              "(local time unless an offset is given).")
@click.option("--end-time", metavar="ISO", help="Only changes at or before this time.")
@click.option("--json", "as_json", is_flag=True, help="The entries as JSON lines, each with the file it came from.")
def state_change_log_merge_command(logs: tuple[str, ...], more_logs: tuple[Path, ...], topic: str | None,
                                   partitions_text: str | None, start_time: str | None, end_time: str | None,
                                   as_json: bool) -> None:
    """Merge state-change.log files (e.g. minikafka-data/broker-*/data/state-change.log) in time order, filtered
    by topic, partitions and time, so one partition's story reads across the cluster."""
    paths = [Path(p) for item in logs for p in item.split(",") if p.strip()] + list(more_logs)
    if not paths:
        raise click.UsageError("give the logs to merge: --logs FILE[,FILE...] [FILE...]")
    try:
        start_ms = parse_time(start_time) if start_time else None
        end_ms = parse_time(end_time) if end_time else None
        read = [(str(path), read_log(path)) for path in paths]
    except MergeError as e:
        raise click.ClickException(str(e)) from None
    for path, (_, skipped) in read:
        if skipped:
            click.echo(f"{path}: {skipped} lines that are not state changes skipped", err=True)
    merged = merge([(path, entries) for path, (entries, _) in read], topic=topic,
                   partitions=_partitions(partitions_text), start_ms=start_ms, end_ms=end_ms)
    for entry in merged:
        click.echo(json.dumps({**entry.fields, "log": entry.log}) if as_json else format_entry(entry))
