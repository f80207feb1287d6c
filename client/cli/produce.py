"""`minikafka produce`: stdin's lines as records."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO

import click

from client.accumulator import FutureRecordMetadata
from client.cli.common import CLI_MAX_BLOCK_MS, client_options, resolve_bootstrap, run
from client.producer import Producer, ProducerError


async def _read_lines(stream: IO[bytes]) -> AsyncIterator[bytes]:
    """Lines of a binary stream without their line ending, read in a thread as they arrive."""
    read = getattr(stream, "read1", stream.read)
    pending = b""
    while chunk := await asyncio.to_thread(read, 65536):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.removesuffix(b"\r")
    if pending:
        yield pending


def split_key(line: bytes, separator: bytes | None, number: int) -> tuple[bytes | None, bytes]:
    """(key, value) of an input line: split at the first separator, or (None, line) without one."""
    if separator is None:
        return None, line
    key, found, value = line.partition(separator)
    if not found:
        raise click.ClickException(f"line {number} has no key separator {separator.decode()!r}")
    return key, value


async def _produce(
    bootstrap: str, topic: str, partition: int | None, acks: str, separator: bytes | None, as_json: bool
) -> list[str]:
    """Send stdin's lines; print acknowledgements in input order; return the failures."""
    failures: list[str] = []
    acknowledged: asyncio.Queue[tuple[int, FutureRecordMetadata] | None] = asyncio.Queue()

    async def report() -> None:
        while (item := await acknowledged.get()) is not None:
            number, future = item
            try:
                metadata = await future
            except ProducerError as e:
                failures.append(f"line {number}: {e}")
                continue
            if as_json:
                click.echo(json.dumps({"partition": metadata.partition, "offset": metadata.offset}))

    producer = Producer(bootstrap, acks=acks, max_block_ms=CLI_MAX_BLOCK_MS, client_id="minikafka-cli")
    reporter = asyncio.create_task(report())
    try:
        number = 0
        async for line in _read_lines(sys.stdin.buffer):
            number += 1
            key, value = split_key(line, separator, number)
            future = await producer.send(topic, value, key=key, partition=partition)
            acknowledged.put_nowait((number, future))
        await producer.flush()
    finally:
        acknowledged.put_nowait(None)
        await reporter
        await producer.close()
    return failures


@click.command("produce")
@click.argument("topic")
@click.option("--partition", type=click.IntRange(min=0), help="Write every record to this partition.")
@click.option(
    "--acks", type=click.Choice(["all", "-1", "1", "0"]), default="all", show_default=True, help="Acknowledgements."
)
@click.option("--key-separator", metavar="SEP", help="Split each line at the first SEP into key and value.")
@click.option("--json", "as_json", is_flag=True, help='Print {"partition", "offset"} per acknowledged record.')
@client_options
def produce_command(
    topic: str,
    partition: int | None,
    acks: str,
    key_separator: str | None,
    as_json: bool,
    bootstrap_server: str | None,
    directory: Path,
) -> None:
    """Send each line of stdin to TOPIC as one record.

    Exits with status 1 if any record could not be written."""
    if key_separator == "":
        raise click.BadParameter("must not be empty", param_hint="--key-separator")
    separator = key_separator.encode() if key_separator is not None else None
    bootstrap = resolve_bootstrap(bootstrap_server, directory)
    failures = run(_produce(bootstrap, topic, partition, acks, separator, as_json))
    if failures:
        raise click.ClickException(f"{len(failures)} record(s) were not written; the first: {failures[0]}")
