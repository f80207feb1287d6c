"""`minikafka dump-log`: the batches of segment files, like kafka-dump-log."""

from __future__ import annotations

import json
from pathlib import Path

import click

from client.cli.common import text
from protocol.compression import CODEC_NAMES
from protocol.records import RecordBatchError, decode_batch, iter_batches, validate_batch


@click.command("dump-log")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--print-data", is_flag=True, help="Also print every record's key, value and headers.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per batch (and per record).")
def dump_log(paths: tuple[Path, ...], print_data: bool, as_json: bool) -> None:
    """Print the batches of segment files (.log), like Kafka's kafka-dump-log (compressed batches' records too).

    Stops at the first invalid batch and says where it is.
    """
    for path in paths:
        click.echo(f"Dumping {path}" if not as_json else json.dumps({"file": str(path)}))
        data = path.read_bytes()
        try:
            for position, header in iter_batches(data):
                _echo_batch(data, position, header.size_in_bytes, print_data, as_json)
        except RecordBatchError as e:
            raise click.ClickException(f"{path}: invalid batch: {e}") from None
        if not as_json:
            click.echo(f"{path.name}: {len(data)} bytes, base offset {int(path.stem) if path.stem.isdigit() else '?'}")


def _echo_batch(data: bytes, position: int, size: int, print_data: bool, as_json: bool) -> None:
    header = validate_batch(data, position)
    fields = {
        "baseOffset": header.base_offset, "lastOffset": header.last_offset, "count": header.record_count,
        "position": position, "size": size, "partitionLeaderEpoch": header.partition_leader_epoch,
        "baseTimestamp": header.base_timestamp, "maxTimestamp": header.max_timestamp, "crc": header.crc,
        "producerId": header.producer_id, "isTransactional": header.is_transactional,
        "compressCodec": CODEC_NAMES[header.compression],
    }
    click.echo(json.dumps(fields) if as_json else " ".join(f"{k}: {v}" for k, v in fields.items()))
    if not print_data:
        return
    for record in decode_batch(data, position)[1]:
        shown = {
            "offset": record.offset, "timestamp": record.timestamp,
            "key": text(record.key), "value": text(record.value),
            "headers": {h.key: text(h.value) for h in record.headers},
        }
        click.echo(json.dumps(shown) if as_json else "| " + " ".join(f"{k}: {v}" for k, v in shown.items()))

