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
from collections.abc import Iterator, Sequence
from functools import lru_cache
from itertools import accumulate
from operator import add, itemgetter
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


def record_field(size: int | None, capture: bool = True) -> tuple[bytes, int]:
    """Regex for a key or value of ``size`` bytes (None: null) with its length, capturing it unless null (or not
    ``capture``), and the number of bytes it matches."""
    length = encode_varint(-1 if size is None else size)
    if size is None:
        return re.escape(length), len(length)
    return re.escape(length) + (b"(.{%d})" if capture else b".{%d}") % size, len(length) + size


def fixed_record_bytes(shape: Shape) -> int:
    """The bytes of a record of ``shape`` counted by its length, but its deltas: attributes, key, value,
    headerCount."""
    return 1 + record_field(shape.key_size)[1] + record_field(shape.value_size)[1] + 1


@lru_cache(maxsize=64)
def _pattern(shape: Shape, capture_value: bool = True, capture_timestamp: bool = True) -> re.Pattern[bytes]:
    """Regex matching one record of ``shape`` (groups: timestampDelta unless not ``capture_timestamp``, offsetDelta,
    key unless null, value unless null or not ``capture_value``) or else everything left (then its first group is
    empty)."""
    key, _key_bytes = record_field(shape.key_size)
    value, _value_bytes = record_field(shape.value_size, capture_value)
    fixed = fixed_record_bytes(shape)
    # The record's length counts its deltas' bytes too: it is one of three encodings, each followed by deltas of
    # the size it implies.
    length = b"|".join(
        re.escape(encode_varint(fixed + size)) + b"(?=" + _ATTRIBUTES + deltas + b")"
        for size, deltas in _DELTAS_OF_SIZE.items()
    )
    timestamp_delta = _SHORT if capture_timestamp else b"(?:" + _ONE + b"|" + _TWO + b")"
    record = b"(?:" + length + b")" + _ATTRIBUTES + timestamp_delta + _SHORT + key + value + _NO_HEADERS
    return re.compile(record + b"|.+", re.DOTALL)


def _add_deltas(base: int, deltas: tuple[bytes, ...]) -> list[int]:
    """base + the value of each one- or two-byte varint encoding in ``deltas``."""
    values = SHORT_VARINT_VALUES
    absolute = {delta: base + values[delta] for delta in set(deltas)}
    return list(map(absolute.__getitem__, deltas))


def _rows(data: bytes, pos: int, end: int, count: int, shape: Shape, capture_value: bool = True,
          capture_timestamp: bool = True) -> list[tuple[bytes, ...]] | None:
    """The regex's groups for each of the ``count`` records at data[pos:end], if they all have ``shape``."""
    rows = _pattern(shape, capture_value, capture_timestamp).findall(data, pos, end)
    return rows if rows and len(rows) == count and rows[-1][0] else None


def _offsets(offset_deltas: tuple[bytes, ...], count: int, base_offset: int) -> Sequence[int]:
    if offset_deltas == SMALL_VARINTS[:count]:  # 0 .. count - 1, as producers write them
        return range(base_offset, base_offset + count)
    return _add_deltas(base_offset, offset_deltas)


class _Decoded(NamedTuple):
    """What every decoding of a batch's regex rows starts with: the raw deltas, offsets, timestamps and keys, and
    the columns left (values, if the regex captured them)."""

    timestamp_deltas: tuple[bytes, ...]
    offset_deltas: tuple[bytes, ...]
    offsets: list[int]
    timestamps: list[int]
    keys: list[bytes | None]
    rest: Iterator[tuple[bytes, ...]]


def _decoded(rows: list[tuple[bytes, ...]], count: int, shape: Shape, base_offset: int, timestamp: int,
             log_append_time: bool) -> _Decoded:
    columns = zip(*rows, strict=True)
    timestamp_deltas = next(columns)
    offset_deltas = next(columns)
    offsets = list(_offsets(offset_deltas, count, base_offset))
    timestamps = [timestamp] * count if log_append_time else _add_deltas(timestamp, timestamp_deltas)
    keys = [None] * count if shape.key_size is None else list(next(columns))
    return _Decoded(timestamp_deltas, offset_deltas, offsets, timestamps, keys, columns)


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
    rows = _rows(data, pos, end, count, shape)
    if rows is None:
        return None
    decoded = _decoded(rows, count, shape, base_offset, timestamp, log_append_time)
    values = [None] * count if shape.value_size is None else list(next(decoded.rest))
    return decoded.offsets, decoded.timestamps, decoded.keys, values, [()] * count


def decode_uniform_keys(data: bytes, pos: int, end: int, count: int, shape: Shape,
                        base_offset: int) -> tuple[Sequence[int], list[bytes | None]] | None:
    """Offsets and keys of the ``count`` records at data[pos:end] (as decode_uniform has them), if they all have
    ``shape``, else None: what the log cleaner's offset map takes of a batch."""
    null_keys = shape.key_size is None  # the timestamp delta is captured then, so that a row is a tuple of groups
    rows = _rows(data, pos, end, count, shape, capture_value=False, capture_timestamp=null_keys)
    if rows is None:
        return None
    offsets = _offsets(tuple(map(itemgetter(1 if null_keys else 0), rows)), count, base_offset)
    return offsets, [None] * count if null_keys else list(map(itemgetter(1), rows))


def decode_uniform_spans(data: bytes, pos: int, end: int, count: int, shape: Shape, base_offset: int, timestamp: int,
                         log_append_time: bool) -> tuple[list[int], list[int], list[bytes | None], list[int]] | None:
    """Offsets, timestamps and keys of the ``count`` records at data[pos:end] (as decode_uniform has them), and where
    each record starts (``count + 1`` positions: the last is ``end``), if they all have ``shape``, else None. Values
    are not copied: the log cleaner copies the records it keeps whole, from their positions."""
    rows = _rows(data, pos, end, count, shape, capture_value=False)
    if rows is None:
        return None
    decoded = _decoded(rows, count, shape, base_offset, timestamp, log_append_time)
    sizes = map(_record_sizes(shape).__getitem__, map(add, map(len, decoded.timestamp_deltas),
                                                       map(len, decoded.offset_deltas)))
    return decoded.offsets, decoded.timestamps, decoded.keys, list(accumulate(sizes, initial=pos))


@lru_cache(maxsize=64)
def _record_sizes(shape: Shape) -> dict[int, int]:
    """The bytes of a record of ``shape`` (its length's varint included) by the bytes of its two deltas."""
    fixed = fixed_record_bytes(shape)
    return {deltas: len(encode_varint(fixed + deltas)) + fixed + deltas for deltas in _DELTAS_OF_SIZE}
