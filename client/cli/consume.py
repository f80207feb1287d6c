"""`minikafka consume`: print a topic's records, from the partitions or as a member of a group."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from client.cli.common import (
    client_config,
    client_config_options,
    client_options,
    client_security,
    resolve_bootstrap,
    run,
    show_client_warnings,
    text,
)
from client.consumer import Consumer, ConsumerRecord


def record_json(record: ConsumerRecord) -> str:
    """`consume --json`: one line per record."""
    return json.dumps(
        {
            "partition": record.partition,
            "offset": record.offset,
            "key": text(record.key),
            "value": text(record.value),
            "timestamp": record.timestamp,
            "leader_epoch": record.leader_epoch,
        }
    )


async def _consume(
    bootstrap: str,
    topic: str,
    partition: int | None,
    from_beginning: bool,
    offset: int | None,
    max_messages: int | None,
    timeout_ms: int | None,
    as_json: bool,
    config: dict[str, Any],
) -> int:
    """Print records until max_messages, timeout_ms without a record, or SIGTERM; return how many were printed.
    With a group_id in `config`, as a member of that group: from its committed offsets (else from the end, or the
    beginning with from_beginning), committing what was printed, and leaving the group at the end."""
    count = 0
    async with Consumer(bootstrap, **({"client_id": "minikafka-cli"} | client_security() | config)) as consumer:
        if "group_id" in config:
            consumer.subscribe([topic])
        else:
            await _assign(consumer, topic, partition, from_beginning, offset)
        last_record = time.monotonic()
        with _stop_on_sigterm() as stopping:
            while (max_messages is None or count < max_messages) and not stopping.is_set():
                wait_ms = 1000
                if timeout_ms is not None:
                    wait_ms = int(timeout_ms - (time.monotonic() - last_record) * 1000)
                    if wait_ms <= 0:
                        break
                limit = 500 if max_messages is None else max_messages - count
                records = await consumer.poll(timeout_ms=wait_ms, max_records=limit)
                for record in records:
                    click.echo(record_json(record) if as_json else text(record.value) or "")
                if records:
                    count += len(records)
                    last_record = time.monotonic()
    return count


async def _assign(consumer: Consumer, topic: str, partition: int | None, from_beginning: bool,
                  offset: int | None) -> None:
    """Read the partition, or every partition of the topic, from the beginning, an offset, or the end."""
    if partition is None:
        await consumer.metadata.refresh([topic])
        partitions = consumer.metadata.partitions(topic)
        if not partitions:
            error = consumer.metadata.topic_errors.get(topic)
            reason = error.name if error else "no partitions"
            raise click.ClickException(f"cannot consume topic {topic!r}: {reason}")
        consumer.assign([(topic, p.partition) for p in partitions])
    else:
        consumer.assign([(topic, partition)])
    if from_beginning:
        await consumer.seek_to_beginning()
    elif offset is not None and partition is not None:
        consumer.seek((topic, partition), offset)
    else:
        await consumer.seek_to_end()


@contextmanager
def _stop_on_sigterm() -> Iterator[asyncio.Event]:
    """An event SIGTERM sets while the block runs (the consumer then stops and closes, as Kafka's console consumer
    does on SIGTERM: it commits and leaves its group)."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stopping.set)
    try:
        yield stopping
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


@click.command("consume")
@click.argument("topic")
@click.option("--partition", type=click.IntRange(min=0), help="Read only this partition [default: all].")
@click.option("--from-beginning", is_flag=True, help="Start at the log start offset [default: the end].")
@click.option("--offset", type=click.IntRange(min=0), help="Start at this offset (needs --partition).")
@click.option("--max-messages", type=click.IntRange(min=1), help="Stop after this many records.")
@click.option("--timeout-ms", type=click.IntRange(min=0), help="Stop when no record arrived for this long.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per record.")
@click.option("--group", metavar="GROUP",
              help="Consume as a member of GROUP (subscribe): start at its committed offsets (else at the end, or "
                   "the beginning with --from-beginning) and commit what was read.")
@client_config_options("consumer")
@client_options
def consume_command(
    topic: str,
    partition: int | None,
    from_beginning: bool,
    offset: int | None,
    max_messages: int | None,
    timeout_ms: int | None,
    as_json: bool,
    group: str | None,
    consumer_config_file: Path | None,
    consumer_properties: dict[str, str],
    bootstrap_server: str | None,
    directory: Path,
) -> None:
    """Print the records of TOPIC, one per line (the value, or JSON with --json). With --group (or group.id in
    the consumer configs), as a member of that consumer group.

    An error is reported on stderr with Kafka's error name, and the exit status is then 1."""
    if from_beginning and offset is not None:
        raise click.UsageError("--from-beginning and --offset exclude each other")
    if offset is not None and partition is None:
        raise click.UsageError("--offset needs --partition")
    config = client_config("consumer", consumer_config_file, consumer_properties, {"group_id": group})
    if "group_id" in config:
        if partition is not None:
            raise click.UsageError("--partition and --group exclude each other: the group assigns the partitions")
        if from_beginning:
            config["auto_offset_reset"] = "earliest"
    bootstrap = resolve_bootstrap(bootstrap_server, directory)
    with show_client_warnings():
        count = run(_consume(bootstrap, topic, partition, from_beginning, offset, max_messages, timeout_ms, as_json,
                             config))
    click.echo(f"Processed a total of {count} messages", err=True)
