"""`minikafka delete-records`: delete partitions' records below an offset, like Kafka's kafka-delete-records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from client.admin import Admin
from client.cli.common import client_options, client_security, resolve_bootstrap, run
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition

Offsets = dict[tuple[str, int], int]


def parse_offsets(text: str) -> Offsets:
    """kafka-delete-records' --offset-json-file: {"partitions": [{"topic": "t", "partition": 0, "offset": 4}],
    "version": 1}; offset -1 is the high watermark. ValueError says what is wrong."""
    try:
        value: Any = json.loads(text)
    except ValueError as e:
        raise ValueError(f"not JSON: {e}") from None
    entries = value.get("partitions") if isinstance(value, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ValueError('expected {"partitions": [{"topic": ..., "partition": ..., "offset": ...}], "version": 1}')
    offsets: Offsets = {}
    duplicates = []
    for entry in entries:
        fields = [entry.get(key) for key in ("topic", "partition", "offset")] if isinstance(entry, dict) else []
        if not fields or not isinstance(fields[0], str) or not all(
                isinstance(n, int) and not isinstance(n, bool) for n in fields[1:]):
            raise ValueError(f"not a topic, partition and offset: {entry!r}")
        topic, partition, offset = fields
        if (topic, partition) in offsets:
            duplicates.append(f"{topic}-{partition}")
        offsets[(topic, partition)] = offset
    if duplicates:
        raise ValueError(f"Offset json file contains duplicate topic partitions: {','.join(duplicates)}")
    return offsets


def result_lines(results: dict[TopicPartition, tuple[ErrorCode, int]]) -> list[str]:
    """kafka-delete-records' report: each partition's low watermark, or its error."""
    return ["Records delete operation completed:"] + [
        f"partition: {t}-{p}\tlow_watermark: {low}" if error == ErrorCode.NONE else f"partition: {t}-{p}\terror: "
        f"{error.name}" for (t, p), (error, low) in sorted(results.items())]


@click.command("delete-records")
@click.option("--offset-json-file", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help='The partitions and offsets: {"partitions": [{"topic": "t", "partition": 0, "offset": 4}], '
                   '"version": 1} (offset -1: the high watermark).')
@client_options
def delete_records_command(offset_json_file: Path, bootstrap_server: str | None, directory: Path) -> None:
    """Delete each partition's records below its offset through its leader (DeleteRecords), like
    kafka-delete-records: its log start offset moves there. Prints each partition's new low watermark or its
    error; exits 1 if a partition failed."""
    try:
        offsets = parse_offsets(offset_json_file.read_text())
    except OSError as e:
        raise click.BadParameter(f"cannot read {offset_json_file}: {e.strerror}",
                                 param_hint="--offset-json-file") from None
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--offset-json-file") from None
    bootstrap = resolve_bootstrap(bootstrap_server, directory)

    async def delete() -> dict[TopicPartition, tuple[ErrorCode, int]]:
        async with Admin(bootstrap, client_id="minikafka-cli", **client_security()) as admin:
            return await admin.delete_records(offsets)

    click.echo("Executing records delete operation")
    results = run(delete())
    click.echo("\n".join(result_lines(results)))
    if any(error != ErrorCode.NONE for error, _ in results.values()):
        raise SystemExit(1)
