"""`minikafka log-dirs`: each broker's log dirs and the replicas in them, as Kafka's kafka-log-dirs --describe
prints them (JSON)."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import click

from client.admin import Admin
from client.cli.common import client_options, client_security, resolve_bootstrap, run
from protocol.apis.log_dirs import LogDirResult
from protocol.errors import ErrorCode


def _names(text: str | None, option: str, convert: type) -> list[Any] | None:
    if text is None:
        return None
    try:
        return [convert(item.strip()) for item in text.split(",") if item.strip()]
    except ValueError:
        raise click.BadParameter(f"expected a comma-separated list, got {text!r}", param_hint=option) from None


def log_dirs_json(described: Mapping[int, list[LogDirResult]], topics: Collection[str]) -> dict[str, Any]:
    """kafka-log-dirs' JSON: per broker its log dirs (error null, or the error's name) with the replicas of
    `topics` (all if empty): partition, size in bytes, offset lag, isFuture (always false: replicas never move
    between dirs here)."""
    return {"version": 1, "brokers": [{"broker": broker, "logDirs": [{
        "logDir": result.log_dir,
        "error": None if result.error_code == ErrorCode.NONE else ErrorCode.from_code(result.error_code).name,
        "partitions": [{"partition": f"{topic.name}-{p.partition_index}", "size": p.partition_size,
                        "offsetLag": p.offset_lag, "isFuture": False}
                       for topic in result.topics if not topics or topic.name in topics for p in topic.partitions],
    } for result in results]} for broker, results in sorted(described.items())]}


@click.command("log-dirs")
@click.option("--describe", is_flag=True, required=True, help="Describe the log dirs (the only action).")
@click.option("--broker-list", help="The brokers to ask, e.g. 1,2,3 [default: every live broker].")
@click.option("--topic-list", help="The topics whose replicas to show, e.g. a,b [default: all].")
@client_options
def log_dirs_command(describe: bool, broker_list: str | None, topic_list: str | None, bootstrap_server: str | None,
                     directory: Path) -> None:
    """Each broker's log dirs with every replica's size in bytes and offset lag (DescribeLogDirs), as the JSON
    line kafka-log-dirs --describe prints."""
    brokers = _names(broker_list, "--broker-list", int)
    topics = _names(topic_list, "--topic-list", str) or []
    bootstrap = resolve_bootstrap(bootstrap_server, directory)

    async def describe_dirs() -> dict[int, list[LogDirResult]]:
        async with Admin(bootstrap, client_id="minikafka-cli", **client_security()) as admin:
            return await admin.describe_log_dirs(brokers)

    click.echo(json.dumps(log_dirs_json(run(describe_dirs()), topics), separators=(",", ":")))
