"""`minikafka produce`: stdin's lines as records."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any

import click

from client.accumulator import FutureRecordMetadata
from client.cli.common import (
    CLI_MAX_BLOCK_MS,
    client_config,
    client_config_options,
    client_options,
    client_security,
    resolve_bootstrap,
    run,
    show_client_warnings,
)
from client.idempotence import idempotence_enabled, idempotence_note
from client.outcomes import outcome_of
from client.producer import Producer, ProducerError, parse_acks
from protocol.compression import CODECS
from protocol.history import FAILED, OK, UNKNOWN, HistoryWriter, Outcome


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


def check_idempotence(config: dict[str, Any]) -> None:
    """A usage error for enable.idempotence=true with acks other than all; a note on stderr when acks 0 or 1 turn
    the default idempotence off."""
    acks = parse_acks(config.get("acks", "all"))
    explicit = config.get("enable_idempotence")
    try:
        idempotence_enabled(explicit, acks)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--acks/--producer-property enable.idempotence") from None
    if explicit is None and acks != -1:
        click.echo(f"note: {idempotence_note(acks)} (as in Kafka's producer)", err=True)


def split_key(line: bytes, separator: bytes | None, number: int) -> tuple[bytes | None, bytes]:
    """(key, value) of an input line: split at the first separator, or (None, line) without one."""
    if separator is None:
        return None, line
    key, found, value = line.partition(separator)
    if not found:
        raise click.ClickException(f"line {number} has no key separator {separator.decode()!r}")
    return key, value


class _Outcomes:
    """Reports each record's outcome as it arrives: a failure on stderr at once (with Kafka's error name), a line in
    the history file if there is one; counts the failures."""

    def __init__(self, topic: str, history: HistoryWriter | None) -> None:
        self.topic = topic
        self.history = history
        self.failures = 0

    def track(self, number: int, key: bytes | None, value: bytes, future: FutureRecordMetadata) -> None:
        future.add_done_callback(lambda settled: self._settled(number, key, value, settled))

    def _settled(self, number: int, key: bytes | None, value: bytes, future: FutureRecordMetadata) -> None:
        outcome = outcome_of(self.topic, key, value, future)
        if self.history is not None:
            self.history.write(outcome)
        if outcome.status != OK:
            self.failures += 1
            maybe = " (it may have been written)" if outcome.status == UNKNOWN else ""
            click.echo(f"error: line {number}: {outcome.error}{maybe}", err=True)


async def _produce(bootstrap: str, topic: str, partition: int | None, separator: bytes | None, as_json: bool,
                   config: dict[str, Any], history: HistoryWriter | None) -> int:
    """Send stdin's lines; print acknowledgements in input order; return how many records failed."""
    acknowledged: asyncio.Queue[FutureRecordMetadata | None] = asyncio.Queue()
    outcomes = _Outcomes(topic, history)

    async def report() -> None:
        while (future := await acknowledged.get()) is not None:
            try:
                metadata = await future
            except ProducerError:
                continue  # already reported as it failed
            if as_json:
                click.echo(json.dumps({"partition": metadata.partition, "offset": metadata.offset}))

    producer = Producer(bootstrap, **({"max_block_ms": CLI_MAX_BLOCK_MS, "client_id": "minikafka-cli"}
                                      | client_security() | config))
    reporter = asyncio.create_task(report())
    try:
        number = 0
        async for line in _read_lines(sys.stdin.buffer):
            number += 1
            key, value = split_key(line, separator, number)
            try:
                future = await producer.send(topic, value, key=key, partition=partition)
            except ProducerError as e:
                if history is not None:
                    history.write(Outcome(topic, partition, None, key, value, FAILED, str(e)))
                click.echo(f"error: line {number}: {e}", err=True)
                outcomes.failures += 1
                continue
            outcomes.track(number, key, value, future)
            acknowledged.put_nowait(future)
        await producer.flush()
    finally:
        acknowledged.put_nowait(None)
        await reporter
        await producer.close()
    return outcomes.failures


@click.command("produce")
@click.argument("topic")
@click.option("--partition", type=click.IntRange(min=0), help="Write every record to this partition.")
@click.option("--acks", type=click.Choice(["all", "-1", "1", "0"]),
              help="Acknowledgements [default: all, or acks from the producer configs].")
@click.option("--compression-codec", type=click.Choice(list(CODECS)),
              help="Compress batches with this codec [default: none, or compression.type from the producer configs].")
@click.option("--key-separator", metavar="SEP", help="Split each line at the first SEP into key and value.")
@click.option("--json", "as_json", is_flag=True, help='Print {"partition", "offset"} per acknowledged record.')
@click.option("--history", "history_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Append each record's outcome to FILE as a JSON line, as it arrives.")
@client_config_options("producer")
@client_options
def produce_command(
    topic: str,
    partition: int | None,
    acks: str | None,
    compression_codec: str | None,
    key_separator: str | None,
    as_json: bool,
    history_file: Path | None,
    producer_config_file: Path | None,
    producer_properties: dict[str, str],
    bootstrap_server: str | None,
    directory: Path,
) -> None:
    """Send each line of stdin to TOPIC as one record.

    The producer is idempotent (a retried batch is written once) unless enable.idempotence=false or acks 0 or 1
    turn that off, as in Kafka's producer. A record that fails is reported on stderr as it fails (retries too, once
    per batch and error); the exit status is 1 if any record could not be written."""
    if key_separator == "":
        raise click.BadParameter("must not be empty", param_hint="--key-separator")
    separator = key_separator.encode() if key_separator is not None else None
    config = client_config("producer", producer_config_file, producer_properties,
                           {"acks": acks, "compression_type": compression_codec})
    check_idempotence(config)
    bootstrap = resolve_bootstrap(bootstrap_server, directory)
    history = None
    if history_file is not None:
        try:
            history = HistoryWriter(history_file)
        except OSError as e:
            raise click.BadParameter(f"cannot open {history_file}: {e.strerror}", param_hint="--history") from None
    try:
        with show_client_warnings():
            failures = run(_produce(bootstrap, topic, partition, separator, as_json, config, history))
    finally:
        if history is not None:
            history.close()
    if failures:
        click.echo(f"{failures} record(s) were not written", err=True)
        sys.exit(1)
