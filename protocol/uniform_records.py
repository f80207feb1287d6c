"""Decoding the records of a batch that all have one shape in one pass of a regex (C code), not one by one.

A shape is a key length and a value length (None: null). A record has it, as this module reads records, if its key
and value have those lengths, its attributes byte and headerCount are 0, its timestampDelta and offsetDelta are
one- or two-byte varints and its length is the shortest encoding of its length. Producers write whole batches of
such records whenever their keys and values are of fixed sizes.

decode_uniform applies when every record of a batch has the given shape and returns None otherwise: the caller then
decodes the batch record by record. Where it applies its results are exactly those of decoding record by record:
a record the regex matches is one the general decoder reads the same way, and a batch is decoded here only if the
regex tiles its records region with exactly recordCount records. It never raises.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from protocol.varint import SHORT_VARINT_VALUES, SMALL_VARINTS, encode_varint

_ONE = rb"[\x00-\x7f]"  # a one-byte varint
_TWO = rb"[\x80-\xff][\x00-\x7f]"  # a two-byte varint
_SHORT = b"(" + _ONE + b"|" + _TWO + b")"  # a one- or two-byte varint, captured
_ATTRIBUTES = rb"\x00"  # record attributes 0
_NO_HEADERS = rb"\x00"  # headerCount 0

#: timestampDelta and offsetDelta of each total size in bytes, after the record attributes.
_DELTAS_OF_SIZE = {
    2: _ONE + _ONE,
    3: b"(?:" + _ONE + _TWO + b"|" + _TWO + _ONE + b")",
    4: _TWO + _TWO,
}

# offsets, timestamps, keys, values, headers: protocol.records.RecordColumns' fields
Columns = tuple[list[int], list[int], list[bytes | None], list[bytes | None], list[tuple[()]]]


class Shape(NamedTuple):
    """The key and value length of every record of a batch; None: null."""

    key_size: int | None
    value_size: int | None


def _field(size: int | None) -> tuple[bytes, int]:
    """Regex for a key or value of ``size`` bytes (None: null) with its length, capturing it unless null, and the
    number of bytes it matches."""
    length = encode_varint(-1 if size is None else size)
    if size is None:
        return re.escape(length), len(length)
    return re.escape(length) + b"(.{%d})" % size, len(length) + size


@lru_cache(maxsize=64)
def _pattern(shape: Shape) -> re.Pattern[bytes]:
    """Regex matching one record of ``shape`` (groups: timestampDelta, offsetDelta, key unless null, value unless
    null) or else everything left (then its timestampDelta group is empty)."""
    key, key_bytes = _field(shape.key_size)
    value, value_bytes = _field(shape.value_size)
    fixed = 1 + key_bytes + value_bytes + 1  # attributes, key, value, headerCount
    # The record's length counts its deltas' bytes too: it is one of three encodings, each followed by deltas of
    # the size it implies.
    length = b"|".join(
        re.escape(encode_varint(fixed + size)) + b"(?=" + _ATTRIBUTES + deltas + b")"
        for size, deltas in _DELTAS_OF_SIZE.items()
    )
    record = b"(?:" + length + b")" + _ATTRIBUTES + _SHORT + _SHORT + key + value + _NO_HEADERS
    return re.compile(record + b"|.+", re.DOTALL)


def _add_deltas(base: int, deltas: tuple[bytes, ...]) -> list[int]:
    """base + the value of each one- or two-byte varint encoding in ``deltas``."""
    values = SHORT_VARINT_VALUES
    absolute = {delta: base + values[delta] for delta in set(deltas)}
    return list(map(absolute.__getitem__, deltas))


def decode_uniform(
    data: bytes,
    pos: int,
    end: int,
    count: int,
    shape: Shape,
    base_offset: int,
    timestamp: int,
    log_append_time: bool,
) -> Columns | None:
    """The columns of the ``count`` records at data[pos:end] if they all have ``shape``, else None.

    Offsets are ``base_offset`` + offsetDelta; timestamps ``timestamp`` (the batch's maxTimestamp) under
    LOG_APPEND_TIME, else ``timestamp`` (its baseTimestamp) + timestampDelta.
    """
    rows = _pattern(shape).findall(data, pos, end)
    if not rows or len(rows) != count or not rows[-1][0]:
        return None
    columns = zip(*rows, strict=True)
    timestamp_deltas = next(columns)
    offset_deltas = next(columns)
    if offset_deltas == SMALL_VARINTS[:count]:  # 0 .. count - 1, as producers write them
        offsets = list(range(base_offset, base_offset + count))
    else:
        offsets = _add_deltas(base_offset, offset_deltas)
    timestamps = [timestamp] * count if log_append_time else _add_deltas(timestamp, timestamp_deltas)
    keys = [None] * count if shape.key_size is None else list(next(columns))
    values = [None] * count if shape.value_size is None else list(next(columns))
    return offsets, timestamps, keys, values, [()] * count
