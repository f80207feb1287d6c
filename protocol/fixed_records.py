"""Reading the records of a batch laid out as producers write them, without a step per record to find them.

A batch has the *fixed layout* when all its records have one shape (protocol.uniform_records' Shape: one key length
and one value length, attributes and headerCount 0), every timestampDelta is a one-byte varint and the offsetDelta
of record i is i (one byte below 64, two below 8192). Then where each record starts follows from the count alone:
one regex match without captures checks the whole records region, slices with a step check the offset deltas, and
keys are sliced at computed positions. Producers write such batches whenever their keys and values have fixed sizes
and a batch spans less than 64 ms, which is what the log cleaner reads most.

The functions here return None when a batch does not have the layout (the caller then uses
protocol.uniform_records or the general decoder) and otherwise exactly what those would return. They never raise.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import repeat
from operator import add
from typing import NamedTuple

from protocol.uniform_records import Shape, fixed_record_bytes, record_field
from protocol.varint import SMALL_VARINTS, SMALL_VARINTS_LIMIT, encode_varint

#: Records whose offsetDelta is one byte long (0 .. 63); the rest, up to SMALL_VARINTS_LIMIT, take two.
_ONE_BYTE_DELTAS = 64
#: The one-byte offset deltas 0 .. 63, and the first and second bytes of the two-byte ones 64 .. 8191.
_SHORT_DELTAS = b"".join(SMALL_VARINTS[:_ONE_BYTE_DELTAS])
_LONG_DELTAS_FIRST = bytes(SMALL_VARINTS[i][0] for i in range(_ONE_BYTE_DELTAS, SMALL_VARINTS_LIMIT))
_LONG_DELTAS_SECOND = bytes(SMALL_VARINTS[i][1] for i in range(_ONE_BYTE_DELTAS, SMALL_VARINTS_LIMIT))
#: The value of each one-byte zigzag varint.
_ONE_BYTE_VALUES = tuple((b >> 1) ^ -(b & 1) for b in range(0x80))


class _Run(NamedTuple):
    """Where things are in the records of one offsetDelta size: each record's bytes, and the offsets within a
    record of its timestampDelta, its offsetDelta and its key."""

    size: int
    timestamp_at: int
    delta_at: int
    key_at: int


@lru_cache(maxsize=256)
def _run(shape: Shape, delta_bytes: int) -> _Run:
    fixed = fixed_record_bytes(shape)
    length = len(encode_varint(fixed + 1 + delta_bytes))
    key_length = len(encode_varint(-1 if shape.key_size is None else shape.key_size))
    return _Run(length + fixed + 1 + delta_bytes, length + 1, length + 2, length + 2 + delta_bytes + key_length)


def _record_pattern(shape: Shape, delta_bytes: int) -> bytes:
    length = encode_varint(fixed_record_bytes(shape) + 1 + delta_bytes)
    delta = rb"[\x00-\x7f]" if delta_bytes == 1 else rb"[\x80-\xff][\x00-\x7f]"
    key, value = record_field(shape.key_size, False)[0], record_field(shape.value_size, False)[0]
    return re.escape(length) + rb"\x00[\x00-\x7f]" + delta + key + value + rb"\x00"


@lru_cache(maxsize=1024)
def _pattern(shape: Shape, count: int) -> re.Pattern[bytes]:
    """Regex matching exactly the records region of ``count`` records of ``shape`` in the fixed layout (but for
    the offset deltas' values)."""
    short = min(count, _ONE_BYTE_DELTAS)
    return re.compile(b"(?:%s){%d}(?:%s){%d}" % (_record_pattern(shape, 1), short, _record_pattern(shape, 2),
                                                  count - short), re.DOTALL)


class _Found(NamedTuple):
    """A batch's records region in the fixed layout: its two runs of records and where the second starts."""

    short: _Run
    long: _Run
    middle: int


def _find(data: bytes, pos: int, end: int, count: int, shape: Shape) -> _Found | None:
    """The layout of the ``count`` records at data[pos:end] if they have ``shape`` in the fixed layout."""
    if not 0 < count <= SMALL_VARINTS_LIMIT or _pattern(shape, count).fullmatch(data, pos, end) is None:
        return None
    short, long = _run(shape, 1), _run(shape, 2)
    middle = pos + min(count, _ONE_BYTE_DELTAS) * short.size
    long_count = count - _ONE_BYTE_DELTAS
    if data[pos + short.delta_at:middle:short.size] != _SHORT_DELTAS[:count]:
        return None
    if long_count > 0 and (data[middle + long.delta_at:end:long.size] != _LONG_DELTAS_FIRST[:long_count]
                           or data[middle + long.delta_at + 1:end:long.size] != _LONG_DELTAS_SECOND[:long_count]):
        return None
    return _Found(short, long, middle)


def _keys(data: bytes, pos: int, end: int, found: _Found, key_size: int | None, count: int) -> list[bytes | None]:
    if key_size is None:
        return [None] * count
    short, long, middle = found
    return [data[at:at + key_size] for at in (*range(pos + short.key_at, middle, short.size),
                                              *range(middle + long.key_at, end, long.size))]


def decode_fixed_keys(data: bytes, pos: int, end: int, count: int, shape: Shape,
                      base_offset: int) -> tuple[range, list[bytes | None]] | None:
    """Offsets and keys of the ``count`` records at data[pos:end] if they have ``shape`` in the fixed layout (as
    protocol.uniform_records.decode_uniform_keys has them), else None."""
    found = _find(data, pos, end, count, shape)
    if found is None:
        return None
    return range(base_offset, base_offset + count), _keys(data, pos, end, found, shape.key_size, count)


def decode_fixed_spans(data: bytes, pos: int, end: int, count: int, shape: Shape, base_offset: int, timestamp: int,
                       log_append_time: bool, *, with_keys: bool = True
                       ) -> tuple[list[int], list[int], list[bytes | None] | None, list[int]] | None:
    """Offsets, timestamps, keys (None unless ``with_keys``) and record starts of the ``count`` records at
    data[pos:end] if they have ``shape`` in the fixed layout (as protocol.uniform_records.decode_uniform_spans has
    them), else None."""
    found = _find(data, pos, end, count, shape)
    if found is None:
        return None
    short, long, middle = found
    if log_append_time:
        timestamps = [timestamp] * count
    else:
        deltas = data[pos + short.timestamp_at:middle:short.size] + data[middle + long.timestamp_at:end:long.size]
        timestamps = list(map(add, repeat(timestamp, count), map(_ONE_BYTE_VALUES.__getitem__, deltas)))
    starts = [*range(pos, middle, short.size), *range(middle, end + 1, long.size)]
    keys = _keys(data, pos, end, found, shape.key_size, count) if with_keys else None
    return list(range(base_offset, base_offset + count)), timestamps, keys, starts
