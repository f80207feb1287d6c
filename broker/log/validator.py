"""The leader's check of compressed batches before it appends them, as Kafka's LogValidator (pure).

A compressed batch is decompressed and its records decoded: their count must be the header's (recordCount, and
lastOffsetDelta + 1), their offset deltas 0 to count - 1, every record well formed, filling the payload exactly,
and their timestamps int64s. The topic's ``compression.type`` then decides what is stored:

- ``producer``: the batch as it came; only its maxTimestamp is set to its records' largest (Kafka's in-place
  assignment; the CRC is recomputed only if that changed it). Offsets and the leader epoch are stamped by the log.
- ``uncompressed`` or a codec: a batch in another codec is built again, its records in the topic's codec (its
  producer id, epoch and first sequence kept), as Kafka's buildRecordsAndAssignOffsets does.

Uncompressed batches bound for an uncompressed log never come here (:func:`needs_validation`): their path is as
it was. A batch that does not decompress or disagrees with its header raises InvalidRecordError (Kafka's
CORRUPT_MESSAGE); nothing of the append is written then.
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.compression import CODECS, NONE
from protocol.records import (
    BatchBuilder,
    BatchHeader,
    InvalidRecordError,
    RecordColumns,
    decode_batch_columns,
    read_header,
    set_max_timestamp,
)

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

#: The codec each compression.type stores batches in (None: the producer's).
_TARGET_CODECS: dict[str, int | None] = {"producer": None, "uncompressed": NONE,
                                         **{name: codec for name, codec in CODECS.items() if codec != NONE}}

Batches = list[tuple[int, BatchHeader]]


def needs_validation(batches: Sequence[tuple[int, BatchHeader]], compression_type: str) -> bool:
    """Whether an append goes through :func:`validate_for_leader`: it holds a compressed batch, or the topic
    recompresses into a codec."""
    if _TARGET_CODECS[compression_type]:
        return True
    return any(header.compression for _position, header in batches)


def validate_for_leader(data: bytearray | memoryview, batches: Batches,
                        compression_type: str) -> tuple[bytearray | memoryview, Batches]:
    """Check the batches of ``data`` (whole batches back to back, their CRCs checked: ``batches``), and return the
    bytes to append with their batches: ``data`` itself, its maxTimestamps set in place, unless a batch had to be
    built again in the topic's codec."""
    target = _TARGET_CODECS[compression_type]
    view = memoryview(data)
    pieces: list[bytes | memoryview] = []
    rebuilt = False
    for position, header in batches:
        end = position + header.size_in_bytes
        source = header.compression
        codec = source if target is None else target
        if source == NONE and codec == NONE:
            pieces.append(view[position:end])
            continue
        columns = _checked_records(bytes(view[position:end]), header)
        if codec == source:
            set_max_timestamp(data, position, max(columns.timestamps))
            pieces.append(view[position:end])
        else:
            pieces.append(_rebuilt(header, columns, codec))
            rebuilt = True
    if not rebuilt:
        return data, [(position, read_header(data, position)) for position, _header in batches]
    out = bytearray().join(pieces)
    validated: Batches = []
    position = 0
    for piece in pieces:
        validated.append((position, read_header(out, position)))
        position += len(piece)
    return out, validated


def _checked_records(batch: bytes, header: BatchHeader) -> RecordColumns:
    """The records of one batch, checked against its header."""
    count = header.record_count
    if count <= 0 or header.last_offset_delta != count - 1:
        raise InvalidRecordError(f"batch at offset {header.base_offset} has recordCount {count} and "
                                 f"lastOffsetDelta {header.last_offset_delta}")
    _header, columns = decode_batch_columns(batch)
    base = header.base_offset
    if columns.offsets != list(range(base, base + count)):
        deltas = [offset - base for offset in columns.offsets]
        raise InvalidRecordError(f"batch at offset {base} has offset deltas {deltas[:10]}..., not 0 to {count - 1}")
    if min(columns.timestamps) < _INT64_MIN or max(columns.timestamps) > _INT64_MAX:
        raise InvalidRecordError(f"batch at offset {base} has a record timestamp beyond an int64")
    return columns


def _rebuilt(header: BatchHeader, columns: RecordColumns, codec: int) -> bytes:
    """The records again in one batch of ``codec``, the producer's id, epoch and first sequence kept."""
    builder = BatchBuilder(producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                           base_sequence=header.base_sequence, compression=codec)
    try:
        for timestamp, key, value, headers in zip(columns.timestamps, columns.keys, columns.values, columns.headers,
                                                  strict=True):
            builder.append(value, key, headers, timestamp)
    except ValueError as e:  # timestamps too far apart for a delta of an int64
        raise InvalidRecordError(f"batch at offset {header.base_offset}: {e}") from None
    return builder.build()
