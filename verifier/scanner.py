"""The batch scanner: the record batches in a range of a segment file, each checked on its own. No Spark here.

Each batch becomes one BatchRow with a status:

- ``ok``: magic 2, a batch length that fits, a valid CRC32C;
- ``crc``: a whole batch whose stored CRC does not match its bytes (the scan goes on after it);
- ``unreadable``: bytes where a batch should start that cannot be one (a length below a header's, a magic that is
  not 2, a batch running past the end of its range where that end is not the end of the log): the rest of the
  range is not read;
- ``torn``: an incomplete last batch at the end of a replica's active segment (a copy taken while the broker ran,
  a kill -9 during a write): past the last complete batch, so beyond the log end offset, not corruption.

Offsets, epochs and checkpoints are checked across batches by the Spark job, not here.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import NamedTuple

from crc32c import crc32c

from protocol.records import HEADER_SIZE, LOG_OVERHEAD, MAGIC, RecordBatchError, decode_batch_columns

OK, CRC, UNREADABLE, TORN = "ok", "crc", "unreadable", "torn"
_HEADER = struct.Struct(">qiibIhiqqqhii")
_MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
_MAGIC_END = 17  # the magic byte is byte 16 of a batch
_CRC_START = 21  # the CRC covers attributes .. end
#: Ranges are read in pieces of about this size (a batch larger than it is read whole).
CHUNK_BYTES = 4 * 1024 * 1024


class BatchRow(NamedTuple):
    """One batch (or the bytes that should have been one) at ``position`` of a segment file."""

    position: int
    size: int
    base_offset: int | None
    last_offset: int | None
    leader_epoch: int | None
    crc: int | None
    records: int | None
    max_timestamp: int | None
    status: str
    detail: str | None


def scan_file(path: str, start: int, end: int, *, tail_may_tear: bool,
              chunk_bytes: int = CHUNK_BYTES) -> Iterator[BatchRow]:
    """The batches of ``path`` from ``start`` (a batch boundary) to ``end``. ``tail_may_tear``: ``end`` is the end
    of the replica's active segment, where an incomplete batch is a torn tail rather than corruption."""
    fd = os.open(path, os.O_RDONLY)
    buffer = _take_buffer()
    try:
        position = start
        while position < end:
            size = min(max(chunk_bytes, _batch_size_at(fd, position, end)), end - position)
            if size > len(buffer):
                buffer = bytearray(size)
            view = memoryview(buffer)
            chunk = view[:os.preadv(fd, [view[:size]], position)]
            if not chunk:
                return  # the file shrank under us: nothing more to read
            last_chunk = position + len(chunk) >= end
            consumed = 0
            for row in scan_buffer(chunk, position, tail_may_tear=tail_may_tear and last_chunk,
                                   partial_ok=not last_chunk):
                if row.status == _MORE:
                    break
                yield row
                consumed = row.position + row.size - position
                if row.status in (UNREADABLE, TORN):
                    return
            if consumed == 0 and not last_chunk:  # the file shrank under us (a broker truncating it): stop
                return
            position += consumed
    finally:
        os.close(fd)
        _give_back(buffer)


#: Read buffers of CHUNK_BYTES kept for the next scan: a new one costs a page fault per page when first filled,
#: which at the scanner's speed (the CRC32C runs at several GB/s) took longer than checking the batches in it.
_spare_buffers: list[bytearray] = []
_SPARE_BUFFERS_KEPT = 2


def _take_buffer() -> bytearray:
    """A buffer of CHUNK_BYTES: a spare one if there is one (a scan that needs more makes a larger one of its own)."""
    return _spare_buffers.pop() if _spare_buffers else bytearray(CHUNK_BYTES)


def _give_back(buffer: bytearray) -> None:
    if len(buffer) == CHUNK_BYTES and len(_spare_buffers) < _SPARE_BUFFERS_KEPT:
        _spare_buffers.append(buffer)


def _batch_size_at(fd: int, position: int, end: int) -> int:
    """The size the batch at ``position`` claims (0 if its length field cannot be read)."""
    head = os.pread(fd, LOG_OVERHEAD, position)
    if len(head) < LOG_OVERHEAD or position + LOG_OVERHEAD > end:
        return 0
    return max(0, struct.unpack_from(">i", head, 8)[0] + LOG_OVERHEAD)


_MORE = "more"  # internal: the rest of the buffer is a partial batch, read more


def scan_buffer(buf: bytes | memoryview, base_position: int = 0, *, tail_may_tear: bool = True,
                partial_ok: bool = False) -> Iterator[BatchRow]:
    """The batches of ``buf`` (whose first byte is at file position ``base_position``). With ``partial_ok`` a
    partial batch at the end yields a row of internal status "more" (the caller reads on) instead of torn or
    unreadable."""
    view = memoryview(buf)
    end = len(buf)
    at = 0
    while at < end:
        position = base_position + at
        left = end - at
        if left < LOG_OVERHEAD:
            yield _partial(position, left, None, tail_may_tear, partial_ok,
                           f"{left} bytes, less than a batch's offset and length")
            return
        batch_length = struct.unpack_from(">i", buf, at + 8)[0]
        base_offset = struct.unpack_from(">q", buf, at)[0]
        if batch_length < _MIN_BATCH_LENGTH:
            yield _unreadable(position, left, base_offset, f"batch length {batch_length} is below the minimum "
                                                           f"{_MIN_BATCH_LENGTH}")
            return
        if left >= _MAGIC_END and buf[at + 16] != MAGIC:
            yield _unreadable(position, left, base_offset, f"magic {buf[at + 16]}, expected {MAGIC}")
            return
        size = batch_length + LOG_OVERHEAD
        if size > left:
            yield _partial(position, left, base_offset, tail_may_tear, partial_ok,
                           f"a batch of {size} bytes with {left} bytes left")
            return
        fields = _HEADER.unpack_from(buf, at)
        stored = fields[4]
        computed = crc32c(view[at + _CRC_START:at + size])
        last_offset = base_offset + fields[6]
        if computed == stored:
            status, detail = OK, None
        else:
            status, detail = CRC, f"stored crc {stored:#010x}, computed {computed:#010x}"
        yield BatchRow(position, size, base_offset, last_offset, fields[2], stored, fields[12], fields[8], status,
                       detail)
        at += size


def _partial(position: int, left: int, base_offset: int | None, tail_may_tear: bool, partial_ok: bool,
             what: str) -> BatchRow:
    if partial_ok:
        return BatchRow(position, 0, None, None, None, None, None, None, _MORE, None)
    if tail_may_tear:
        return BatchRow(position, left, base_offset, None, None, None, None, None, TORN,
                        f"torn tail: {what}, after the last complete batch")
    return _unreadable(position, left, base_offset, f"{what}, before the end of the range")


def _unreadable(position: int, left: int, base_offset: int | None, what: str) -> BatchRow:
    return BatchRow(position, left, base_offset, None, None, None, None, None, UNREADABLE, what)


class RecordRow(NamedTuple):
    """One record of a valid batch."""

    offset: int
    key: bytes | None
    value: bytes | None


def scan_records(path: str, start: int, end: int) -> Iterator[RecordRow]:
    """The records of the valid, non-control batches of ``path`` in [start, end), those of compressed batches
    decompressed (the batch scan reports the others)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        for row in scan_file(path, start, end, tail_may_tear=True):
            if row.status != OK:
                continue
            data = os.pread(fd, row.size, row.position)
            try:
                header, columns = decode_batch_columns(data)
            except RecordBatchError:
                continue
            if not header.is_control:
                for offset, key, value in zip(columns.offsets, columns.keys, columns.values, strict=True):
                    yield RecordRow(offset, key, value)
    finally:
        os.close(fd)
