"""Kafka RecordBatch v2 (magic 2): the one record format of minikafka, byte for byte Kafka's.

Batch layout (big-endian; byte offset of each field in the 61-byte header)::

     0 baseOffset int64            8 batchLength int32 (bytes after this field)
    12 partitionLeaderEpoch int32 16 magic int8 (= 2)
    17 crc uint32 (CRC32C of bytes 21 .. end of batch)
    21 attributes int16 (bits 0-2 codec, 3 timestampType, 4 transactional, 5 control)
    23 lastOffsetDelta int32      27 baseTimestamp int64      35 maxTimestamp int64
    43 producerId int64           51 producerEpoch int16      53 baseSequence int32
    57 recordCount int32          61 records...

Record layout (varints are zigzag encoded, a varint is at most 5 bytes, a varlong 10)::

    length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
    keyLength varint (-1 = null), key, valueLength varint (-1 = null), value,
    headerCount varint, then per header: keyLength varint, key (utf-8),
    valueLength varint (-1 = null), value

baseOffset and partitionLeaderEpoch lie outside the CRC, so the broker rewrites them in place
(set_base_offset, set_partition_leader_epoch) without recomputing it.

A compressed batch (codec 1 gzip, 2 snappy, 3 lz4, 4 zstd: protocol.compression) holds the records compressed
together after the header; its header is never compressed. Decoding decompresses them first; building compresses
them when the batch is built.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import NamedTuple

from crc32c import crc32c

from protocol.compression import NONE, CompressionError, compress, decompress
from protocol.fixed_records import decode_fixed_keys, decode_fixed_spans
from protocol.uniform_records import Shape, decode_uniform, decode_uniform_keys, decode_uniform_spans
from protocol.varint import SHORT_VARINTS, SMALL_VARINTS, SMALL_VARINTS_LIMIT, encode_varint

HEADER_SIZE: int = 61
MAGIC: int = 2
LOG_OVERHEAD: int = 12  # baseOffset + batchLength
NO_PRODUCER_ID = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1

CREATE_TIME = 0
LOG_APPEND_TIME = 1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_PARTITION_LEADER_EPOCH_OFFSET = 12
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21
_MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD

_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08
_TRANSACTIONAL_MASK = 0x10
_CONTROL_MASK = 0x20
_DELETE_HORIZON_MASK = 0x40  # KIP-534: the base timestamp is the delete horizon of the batch's tombstones
_MAX_CODEC = 4  # zstd
_MAX_TIMESTAMP_OFFSET = 35

#: ``new_named_tuple(cls, (field, ...))`` builds a NamedTuple without its Python-level ``__new__`` wrapper: half
#: the cost, for the paths that build one per record.
new_named_tuple = tuple.__new__

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1

_Buffer = bytes | bytearray | memoryview


class RecordBatchError(ValueError):
    """Base: anything wrong with batch bytes (maps to Kafka's CORRUPT_MESSAGE)."""


class TruncatedBatchError(RecordBatchError):
    """Fewer bytes than a batch header, or than the batchLength field says (e.g. a torn log tail)."""


class InvalidMagicError(RecordBatchError):
    """The magic byte is not 2."""


class CorruptBatchError(RecordBatchError):
    """The stored CRC does not match the CRC32C of the bytes it covers."""


class InvalidBatchLengthError(RecordBatchError):
    """batchLength is an impossible value (smaller than the header); a value running beyond the
    buffer is a TruncatedBatchError instead."""


class InvalidRecordError(RecordBatchError):
    """A record inside a batch is malformed: bad varint, bad length, count mismatch, overrun,
    trailing bytes, invalid utf-8 header key."""


class UnsupportedCompressionError(RecordBatchError):
    """The batch's codec id is none Kafka knows (5 to 7)."""


class BatchHeader(NamedTuple):
    """The 61-byte header of one batch, fields in wire order (a tuple: cheap to build on the hot path)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def compression(self) -> int:
        """Compression codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)."""
        return self.attributes & _CODEC_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_MASK)

    @property
    def timestamp_type(self) -> int:
        """CREATE_TIME (0) or LOG_APPEND_TIME (1)."""
        return LOG_APPEND_TIME if self.attributes & _TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def delete_horizon_ms(self) -> int | None:
        """When the log cleaner may drop this batch's tombstones (the base timestamp, once the cleaner set attributes
        bit 6 on its first pass over them, KIP-534); None while it has not."""
        return self.base_timestamp if self.attributes & _DELETE_HORIZON_MASK else None


@dataclass(frozen=True, slots=True)
class Header:
    """One record header: a utf-8 string key and a nullable byte value."""

    key: str
    value: bytes | None


class Record(NamedTuple):
    """One decoded record with its absolute offset and timestamp (a tuple: one is built per record)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


# --------------------------------------------------------------------------- batch level


def _unpack_header(buf: _Buffer, pos: int, require_body: bool) -> tuple[int, ...]:
    """Unpack and sanity-check the header fields at ``pos`` (see read_header)."""
    if pos < 0:
        raise ValueError(f"negative position {pos}")
    remaining = len(buf) - pos
    if remaining < HEADER_SIZE:
        raise TruncatedBatchError(
            f"{max(remaining, 0)} bytes at position {pos}, a batch header needs {HEADER_SIZE}"
        )
    fields = _HEADER.unpack_from(buf, pos)
    batch_length = fields[1]
    if batch_length < _MIN_BATCH_LENGTH:
        raise InvalidBatchLengthError(
            f"batchLength {batch_length} at position {pos} is below the minimum {_MIN_BATCH_LENGTH}"
        )
    if fields[3] != MAGIC:
        raise InvalidMagicError(f"magic {fields[3]} at position {pos}, expected {MAGIC}")
    if require_body and batch_length + LOG_OVERHEAD > remaining:
        raise TruncatedBatchError(
            f"batch at position {pos} needs {batch_length + LOG_OVERHEAD} bytes, {remaining} available"
        )
    return fields


def read_header(buf: _Buffer, pos: int = 0, *, require_body: bool = True) -> BatchHeader:
    """Parse the batch header at ``pos`` without checking the CRC.

    Raises TruncatedBatchError if fewer than HEADER_SIZE bytes remain or (unless ``require_body`` is
    False, for a header read on its own) the batch runs beyond the buffer, InvalidBatchLengthError if
    batchLength is smaller than a header, InvalidMagicError if magic is not 2, ValueError if ``pos``
    is negative.
    """
    return BatchHeader(*_unpack_header(buf, pos, require_body))


def validate_batch(buf: _Buffer, pos: int = 0) -> BatchHeader:
    """read_header, then check the CRC32C and refuse a codec Kafka does not know. Records are not decoded (nor
    decompressed)."""
    fields = _unpack_header(buf, pos, True)
    stored = fields[4]
    computed = crc32c(memoryview(buf)[pos + _ATTRIBUTES_OFFSET : pos + LOG_OVERHEAD + fields[1]])
    if computed != stored:
        raise CorruptBatchError(
            f"batch at position {pos} is corrupt (stored crc {stored:#010x}, computed {computed:#010x})"
        )
    codec = fields[5] & _CODEC_MASK
    if codec > _MAX_CODEC:
        raise UnsupportedCompressionError(f"batch at position {pos} has compression codec {codec}, which is unknown")
    return BatchHeader(*fields)


def iter_batches(buf: _Buffer) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, validated header) for each batch of a buffer of whole batches back to back."""
    pos = 0
    end = len(buf)
    while pos < end:
        header = validate_batch(buf, pos)
        yield pos, header
        pos += header.batch_length + LOG_OVERHEAD


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Overwrite baseOffset of the batch at ``pos`` in place (outside the CRC)."""
    _INT64.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Overwrite partitionLeaderEpoch of the batch at ``pos`` in place (outside the CRC)."""
    _INT32.pack_into(buf, pos + _PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_max_timestamp(buf: bytearray | memoryview, pos: int, max_timestamp: int) -> None:
    """Make the batch at ``pos`` a CREATE_TIME batch whose maxTimestamp is ``max_timestamp``, in place, and
    recompute its CRC (as Kafka's DefaultRecordBatch.setMaxTimestamp); nothing changes if it is one already."""
    header = read_header(buf, pos)
    if header.max_timestamp == max_timestamp and header.timestamp_type == CREATE_TIME:
        return
    struct.pack_into(">h", buf, pos + _ATTRIBUTES_OFFSET, header.attributes & ~_TIMESTAMP_TYPE_MASK)
    _INT64.pack_into(buf, pos + _MAX_TIMESTAMP_OFFSET, _check_int64("max timestamp", max_timestamp))
    end = pos + LOG_OVERHEAD + header.batch_length
    struct.pack_into(">I", buf, pos + _CRC_OFFSET, crc32c(memoryview(buf)[pos + _ATTRIBUTES_OFFSET:end]))


# --------------------------------------------------------------------------- varints

_NULL = encode_varint(-1)  # the length of a null key, value or header value
_NO_HEADERS = encode_varint(0)  # headerCount 0: the last byte of nearly every record

# Record lengths, offset and timestamp deltas and key and value lengths are nearly always one or two bytes:
# decoding reads them with one lookup of the two bytes at their position in SHORT_VARINTS.
_U16_LE = struct.Struct("<H").unpack_from


def _read_zigzag(data: bytes, pos: int, end: int, max_bytes: int, bits: int) -> tuple[int, int]:
    """Decode a zigzag varint of at most ``max_bytes`` bytes from data[pos:end], fitting ``bits`` bits."""
    if pos < end:
        b = data[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
    too_long = pos + max_bytes <= end
    stop = pos + max_bytes if too_long else end
    z = 0
    shift = 0
    while pos < stop:
        b = data[pos]
        pos += 1
        z |= (b & 0x7F) << shift
        if b < 0x80:
            if z >> bits:
                raise InvalidRecordError(f"varint does not fit in {bits} bits")
            return (z >> 1) ^ -(z & 1), pos
        shift += 7
    if too_long:
        raise InvalidRecordError(f"varint longer than {max_bytes} bytes")
    raise InvalidRecordError("varint runs past the end of the record")


def _read_varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """(value, next position) of the varint (at most 5 bytes, 32 bits) at data[pos:end]."""
    if pos + 2 <= end and (short := SHORT_VARINTS[_U16_LE(data, pos)[0]]) is not None:
        return short[0], pos + short[1]
    return _read_zigzag(data, pos, end, 5, 32)


def _read_varlong(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """(value, next position) of the varlong (at most 10 bytes, 64 bits) at data[pos:end]."""
    if pos + 2 <= end and (short := SHORT_VARINTS[_U16_LE(data, pos)[0]]) is not None:
        return short[0], pos + short[1]
    return _read_zigzag(data, pos, end, 10, 64)


def _read_nullable_bytes(data: bytes, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    size, pos = _read_varint(data, pos, end)
    if size < 0:
        if size == -1:
            return None, pos
        raise InvalidRecordError(f"invalid {what} length {size}")
    if pos + size > end:
        raise InvalidRecordError(f"{what} of {size} bytes runs past the end of the record")
    return data[pos : pos + size], pos + size


def _read_headers(data: bytes, pos: int, end: int) -> tuple[tuple[Header, ...], int]:
    header_count, pos = _read_varint(data, pos, end)
    if header_count < 0 or header_count > end - pos:
        raise InvalidRecordError(f"invalid header count {header_count}")
    headers: list[Header] = []
    for _ in range(header_count):
        key_size, pos = _read_varint(data, pos, end)
        if key_size < 0 or pos + key_size > end:
            raise InvalidRecordError(f"invalid header key length {key_size}")
        try:
            header_key = data[pos : pos + key_size].decode()
        except UnicodeDecodeError as exc:
            raise InvalidRecordError(f"header key is not utf-8: {exc}") from None
        header_value, pos = _read_nullable_bytes(data, pos + key_size, end, "header value")
        headers.append(Header(header_key, header_value))
    return tuple(headers), pos


# --------------------------------------------------------------------------- decoding

# (timestamp delta, offset delta, key, value, headers, position after the record)
_RecordFields = tuple[int, int, bytes | None, bytes | None, tuple[Header, ...], int]


def _read_record(data: bytes, pos: int, end: int) -> _RecordFields:
    """Decode the record at data[pos:end], validating every field."""
    length, pos = _read_varint(data, pos, end)
    record_end = pos + length
    if length < 1 or record_end > end:
        raise InvalidRecordError(f"record length {length} is invalid, {end - pos} bytes left in batch")
    pos += 1  # record attributes: unused
    timestamp_delta, pos = _read_varlong(data, pos, record_end)
    offset_delta, pos = _read_varint(data, pos, record_end)
    key, pos = _read_nullable_bytes(data, pos, record_end, "key")
    value, pos = _read_nullable_bytes(data, pos, record_end, "value")
    headers, pos = _read_headers(data, pos, record_end)
    if pos != record_end:
        raise InvalidRecordError(f"record length {length}, its fields end {record_end - pos} bytes early")
    return timestamp_delta, offset_delta, key, value, headers, record_end


def _read_plain_record(data: bytes, pos: int, end: int) -> _RecordFields | None:
    """Decode the record at data[pos:end] if it has the usual shape: every varint one or two bytes long (read
    with one table lookup each) and no headers. None for any other record, well-formed or not: _read_record
    then decodes it or says what is wrong."""
    shorts, window = SHORT_VARINTS, _U16_LE
    try:  # a longer varint is a None entry (TypeError), a window past the buffer a struct.error
        length, size = shorts[window(data, pos)[0]]
        record_end = pos + size + length
        pos += size + 1  # and the record attributes
        timestamp_delta, size = shorts[window(data, pos)[0]]
        pos += size
        offset_delta, size = shorts[window(data, pos)[0]]
        pos += size
        key_size, size = shorts[window(data, pos)[0]]
        pos += size
        if key_size < 0:
            key = None
        else:
            key = data[pos : pos + key_size]
            pos += key_size
        value_size, size = shorts[window(data, pos)[0]]
        pos += size
        if value_size < 0:
            value = None
        else:
            value = data[pos : pos + value_size]
            pos += value_size
    except (TypeError, struct.error):
        return None
    if (length < 1 or record_end > end or key_size < -1 or value_size < -1 or pos + 1 != record_end
            or data[pos] != _NO_HEADERS[0]):
        return None
    return timestamp_delta, offset_delta, key, value, (), record_end


class RecordColumns(NamedTuple):
    """The records of one batch field by field, in batch order. Readers that build their own record objects (the
    consumer) decode into these lists, not into a Record per record first."""

    offsets: list[int]
    timestamps: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[tuple[Header, ...]]


#: Smallest batch worth trying to decode in one regex pass: for fewer records the attempt costs more than it saves.
_MIN_UNIFORM_RECORDS = 8


def _decode_columns(data: bytes, start: int, header: BatchHeader) -> RecordColumns:
    """Decode the records of the validated batch at data[start:] (decompressed first if it is compressed): all at
    once if they are all of one shape, else one by one."""
    data, pos, end = _records_region(data, start, header)
    columns = _decode_uniform_columns(data, pos, end, header)
    return columns if columns is not None else _decode_general_columns(data, pos, end, header)


def _records_region(data: bytes, start: int, header: BatchHeader) -> tuple[bytes, int, int]:
    """(data, pos, end): where the records of the batch at data[start:] lie, data[pos:end]; those of a compressed
    batch decompressed first, into new bytes."""
    pos, end = start + HEADER_SIZE, start + LOG_OVERHEAD + header.batch_length
    if not header.attributes & _CODEC_MASK:
        return data, pos, end
    try:
        records = decompress(header.attributes & _CODEC_MASK, memoryview(data)[pos:end])
    except CompressionError as e:
        raise InvalidRecordError(f"batch at offset {header.base_offset}: {e}") from None
    return records, 0, len(records)


def _timestamp_base(header: BatchHeader) -> tuple[int, bool]:
    """(base, log append time): under LOG_APPEND_TIME every record has the batch's maxTimestamp (the base), under
    CREATE_TIME the base timestamp + its delta."""
    log_append = bool(header.attributes & _TIMESTAMP_TYPE_MASK)
    return header.max_timestamp if log_append else header.base_timestamp, log_append


def _record_shape(record: _RecordFields) -> Shape:
    key, value = record[2], record[3]
    return Shape(None if key is None else len(key), None if value is None else len(value))


def _uniform_shape(data: bytes, pos: int, end: int, header: BatchHeader, *, first_only: bool = False) -> Shape | None:
    """The shape of the first two records of ``header``'s batch, data[pos:end], if they have one, and the batch
    enough records for a regex pass to pay (protocol.uniform_records). The second record is checked first, so that
    a batch of records of varying sizes costs no regex; ``first_only`` leaves it to a regex match that checks every
    record anyway (protocol.fixed_records)."""
    if header.record_count < _MIN_UNIFORM_RECORDS:
        return None
    first = _read_plain_record(data, pos, end)
    if first is None:
        return None
    if first_only:
        return _record_shape(first)
    second = _read_plain_record(data, first[-1], end)
    if second is None or (shape := _record_shape(first)) != _record_shape(second):
        return None
    return shape


def _decode_uniform_columns(data: bytes, pos: int, end: int, header: BatchHeader) -> RecordColumns | None:
    """The records of ``header``'s batch, data[pos:end], decoded in one regex pass (protocol.uniform_records) if
    they all have the shape of the first, else None."""
    shape = _uniform_shape(data, pos, end, header)
    if shape is None:
        return None
    timestamp, log_append = _timestamp_base(header)
    columns = decode_uniform(data, pos, end, header.record_count, shape, header.base_offset, timestamp, log_append)
    return None if columns is None else RecordColumns._make(columns)


def _decode_general_columns(data: bytes, pos: int, end: int, header: BatchHeader) -> RecordColumns:
    """Decode the records of ``header``'s batch, data[pos:end], one by one, validating every field."""
    count = header.record_count
    if count < 0:
        raise InvalidRecordError(f"negative record count {count}")
    base_offset = header.base_offset
    base_timestamp, log_append = _timestamp_base(header)
    columns = RecordColumns([], [], [], [], [])
    add_offset, add_timestamp, add_key, add_value, add_headers = (column.append for column in columns)
    for index in range(count):
        if pos >= end:
            raise InvalidRecordError(f"batch holds {index} records, its header says {count}")
        timestamp_delta, offset_delta, key, value, headers, pos = (
            _read_plain_record(data, pos, end) or _read_record(data, pos, end)
        )
        add_offset(base_offset + offset_delta)
        add_timestamp(base_timestamp if log_append else base_timestamp + timestamp_delta)
        add_key(key)
        add_value(value)
        add_headers(headers)
    if pos != end:
        raise InvalidRecordError(f"{end - pos} trailing bytes after the last of {count} records")
    return columns


def _as_records(columns: RecordColumns) -> Iterator[Record]:
    return map(new_named_tuple, repeat(Record), zip(*columns, strict=True))


def decode_batch_columns(buf: _Buffer, pos: int = 0) -> tuple[BatchHeader, RecordColumns]:
    """Validate the batch at ``pos`` and decode all its records, field by field."""
    header = validate_batch(buf, pos)
    return header, _decode_columns(_as_bytes(buf), pos, header)


def decode_batch(buf: _Buffer, pos: int = 0) -> tuple[BatchHeader, list[Record]]:
    """Validate the batch at ``pos`` and decode all its records."""
    header, columns = decode_batch_columns(buf, pos)
    return header, list(_as_records(columns))


def decode_records(buf: _Buffer) -> Iterator[Record]:
    """Yield every record of every batch in a buffer of whole batches back to back."""
    data = _as_bytes(buf)
    for pos, header in iter_batches(data):
        yield from _as_records(_decode_columns(data, pos, header))


def _as_bytes(buf: _Buffer) -> bytes:
    """The buffer as bytes (copied only if it is not bytes already), so that keys and values slice as bytes."""
    return buf if isinstance(buf, bytes) else bytes(buf)


# --------------------------------------------------------------------------- building


_RECORD_ATTRIBUTES = b"\x00"


def _check_bytes(what: str, data: _Buffer | None) -> bytes | None:
    """Return ``data`` as bytes (or None); TypeError for anything that is not bytes-like."""
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"{what} must be bytes or None, not {type(data).__name__}")


def _check_int64(what: str, number: int) -> int:
    if not _INT64_MIN <= number <= _INT64_MAX:
        raise ValueError(f"{what} {number} out of int64 range")
    return number


def _encode_headers(headers: Sequence[Header | tuple[str, bytes | None]]) -> bytes:
    """headerCount, then per header its key length, key, value length (-1 for null) and value."""
    parts = [encode_varint(len(headers))]
    for header in headers:
        header_key, header_value = (header.key, header.value) if isinstance(header, Header) else header
        if not isinstance(header_key, str):
            raise TypeError(f"header key must be str, not {type(header_key).__name__}")
        header_value = _check_bytes("header value", header_value)
        encoded_key = header_key.encode()
        parts += (encode_varint(len(encoded_key)), encoded_key)
        parts += (_NULL,) if header_value is None else (encode_varint(len(header_value)), header_value)
    return b"".join(parts)


class BatchBuilder:
    """Builds one v2 batch (the client side), its records compressed with ``compression`` (a codec id of
    protocol.compression; 0, none, by default).

    Records get consecutive offset deltas from 0. The batch's base timestamp is ``base_timestamp``
    if given, else the first record's timestamp; maxTimestamp is the largest record timestamp.
    """

    __slots__ = (
        "_base_offset",
        "_base_sequence",
        "_base_timestamp",
        "_body",
        "_compression",
        "_count",
        "_max_timestamp",
        "_partition_leader_epoch",
        "_producer_epoch",
        "_producer_id",
    )

    def __init__(
        self,
        base_offset: int = 0,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = -1,
        base_sequence: int = NO_SEQUENCE,
        base_timestamp: int | None = None,
        compression: int = NONE,
    ) -> None:
        if base_timestamp is not None:
            _check_int64("base_timestamp", base_timestamp)
        if not NONE <= compression <= _MAX_CODEC:
            raise ValueError(f"no compression codec {compression}")
        self._compression = compression
        self._base_offset = base_offset
        self._partition_leader_epoch = partition_leader_epoch
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._base_sequence = base_sequence
        self._base_timestamp = base_timestamp
        self._max_timestamp = -1
        self._count = 0
        self._body = bytearray()

    def append(
        self,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[Header | tuple[str, bytes | None]] = (),
        timestamp: int | None = None,
    ) -> int:
        """Add a record and return its offset delta. ``timestamp`` defaults to now (ms)."""
        if type(value) is not bytes:
            value = _check_bytes("value", value)
        if key is not None and type(key) is not bytes:
            key = _check_bytes("key", key)
        if timestamp is None:
            timestamp = time.time_ns() // 1_000_000
        base_timestamp = self._base_timestamp
        if base_timestamp is None:
            base_timestamp = _check_int64("timestamp", timestamp)
        timestamp_delta = timestamp - base_timestamp
        offset_delta = self._count
        # Nearly every length and delta is below `limit`: its encoding is a table lookup, inline (once per record).
        small, limit = SMALL_VARINTS, SMALL_VARINTS_LIMIT
        if 0 <= timestamp_delta < limit and timestamp <= _INT64_MAX:
            encoded_timestamp_delta = small[timestamp_delta]
        else:
            _check_int64("timestamp", timestamp)
            encoded_timestamp_delta = encode_varint(_check_int64("timestamp delta", timestamp_delta))
        if value is None:
            encoded_value = _NULL
        else:
            size = len(value)
            encoded_value = (small[size] if size < limit else encode_varint(size)) + value
        record = b"".join((
            _RECORD_ATTRIBUTES,
            encoded_timestamp_delta,
            small[offset_delta] if offset_delta < limit else encode_varint(offset_delta),
            _NULL if key is None else encode_varint(len(key)) + key,
            encoded_value,
            _encode_headers(headers) if headers else _NO_HEADERS,
        ))
        size = len(record)
        body = self._body
        body += small[size] if size < limit else encode_varint(size)
        body += record
        self._base_timestamp = base_timestamp
        if timestamp > self._max_timestamp or offset_delta == 0:
            self._max_timestamp = timestamp
        self._count = offset_delta + 1
        return offset_delta

    @property
    def record_count(self) -> int:
        """Records appended so far."""
        return self._count

    def set_producer(self, producer_id: int, producer_epoch: int, base_sequence: int) -> None:
        """Stamp the batch with an idempotent producer's id, epoch and first sequence number (before build)."""
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._base_sequence = base_sequence

    def size_in_bytes(self) -> int:
        """Exact size in bytes of the batch build() would return now, before compression."""
        return HEADER_SIZE + len(self._body)

    def __len__(self) -> int:
        return self._count

    def build(self) -> bytes:
        """Return the batch bytes, CRC included. Raises ValueError if no record was appended."""
        if not self._count:
            raise ValueError("cannot build an empty record batch")
        out = bytearray(HEADER_SIZE)
        out += compress(self._compression, self._body) if self._compression else self._body
        _write_header(
            out,
            self._base_offset,
            self._partition_leader_epoch,
            self._compression,  # attributes: the codec, create time, not transactional, not control
            self._count - 1,
            self._base_timestamp,
            self._max_timestamp,
            self._producer_id,
            self._producer_epoch,
            self._base_sequence,
            self._count,
        )
        return bytes(out)


def _write_header(out: bytearray, base_offset: int, partition_leader_epoch: int, attributes: int,
                  last_offset_delta: int, base_timestamp: int, max_timestamp: int, producer_id: int,
                  producer_epoch: int, base_sequence: int, record_count: int) -> None:
    """Fill in the header of the batch in ``out`` (HEADER_SIZE bytes, then its records), CRC included."""
    _HEADER.pack_into(out, 0, base_offset, len(out) - LOG_OVERHEAD, partition_leader_epoch, MAGIC, 0, attributes,
                      last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
                      record_count)
    struct.pack_into(">I", out, _CRC_OFFSET, crc32c(memoryview(out)[_ATTRIBUTES_OFFSET:]))


# --------------------------------------------------------------------------- rewriting (the log cleaner)


class StoredRecords(NamedTuple):
    """The records of one batch as the log cleaner reads them to rewrite the batch: each one's offset, timestamp and
    key, whether it is a tombstone (a null value), and its bytes, ``data[starts[i]:starts[i + 1]]`` (for a compressed
    batch, in its decompressed records)."""

    data: bytes
    offsets: list[int]
    timestamps: list[int]
    #: None when read_stored_records was asked not to read them and did not need to.
    keys: list[bytes | None] | None
    tombstones: list[bool]
    starts: list[int]


def read_record_keys(buf: _Buffer, pos: int = 0) -> tuple[BatchHeader, Sequence[int], list[bytes | None]]:
    """Validate the batch at ``pos`` and read its records' offsets and keys only (the log cleaner's offset map):
    records of one shape in one regex pass, any other batch record by record."""
    header = validate_batch(buf, pos)
    data, start, end = _records_region(_as_bytes(buf), pos, header)
    shape = _uniform_shape(data, start, end, header, first_only=True)
    if shape is not None:
        found = decode_fixed_keys(data, start, end, header.record_count, shape, header.base_offset)
        if found is None and _uniform_shape(data, start, end, header) == shape:
            found = decode_uniform_keys(data, start, end, header.record_count, shape, header.base_offset)
        if found is not None:
            return header, *found
    columns = _decode_general_columns(data, start, end, header)
    return header, columns.offsets, columns.keys


def read_stored_records(buf: _Buffer, pos: int = 0, *, with_keys: bool = True) -> tuple[BatchHeader, StoredRecords]:
    """Validate the batch at ``pos`` and read its records for rewriting (StoredRecords): records of one shape in one
    regex pass, without copying their values; any other batch record by record, every field validated. Without
    ``with_keys``, the keys of records in the fixed layout (protocol.fixed_records) are not read (None): their
    offsets are consecutive, so a reader that decides by offsets needs no keys."""
    header = validate_batch(buf, pos)
    data, start, end = _records_region(_as_bytes(buf), pos, header)
    shape = _uniform_shape(data, start, end, header, first_only=True)
    if shape is not None:
        timestamp, log_append = _timestamp_base(header)
        layout = (header.record_count, shape, header.base_offset, timestamp, log_append)
        spans = decode_fixed_spans(data, start, end, *layout, with_keys=with_keys)
        if spans is None and _uniform_shape(data, start, end, header) == shape:
            spans = decode_uniform_spans(data, start, end, *layout)
        if spans is not None:
            offsets, timestamps, keys, starts = spans
            return header, StoredRecords(data, offsets, timestamps, keys, [shape.value_size is None] * len(offsets),
                                         starts)
    columns = _decode_general_columns(data, start, end, header)
    starts = [start]
    for _ in range(header.record_count):
        length, at = _read_varint(data, starts[-1], end)
        starts.append(at + length)
    return header, StoredRecords(data, columns.offsets, columns.timestamps, columns.keys,
                                 [value is None for value in columns.values], starts)


def _encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                   headers: Sequence[Header]) -> bytes:
    """One record: its length, then attributes 0, its deltas, key, value and headers."""
    record = b"".join((
        _RECORD_ATTRIBUTES,
        encode_varint(timestamp_delta),
        encode_varint(offset_delta),
        _NULL if key is None else encode_varint(len(key)) + key,
        _NULL if value is None else encode_varint(len(value)) + value,
        _encode_headers(headers) if headers else _NO_HEADERS,
    ))
    return encode_varint(len(record)) + record


def build_retained_batch(header: BatchHeader, records: StoredRecords, retained: Sequence[int],
                         delete_horizon_ms: int | None) -> bytes:
    """The batch ``header`` heads, with only the records at the indexes ``retained`` (in order, at least one) of its
    records ``records``: what Kafka's log cleaner writes for a batch it keeps part of (MemoryRecords.filterTo).

    The batch keeps its base offset and last offset delta (so that the producer's last sequence number survives),
    its leader epoch, producer id, epoch and base sequence, and its attributes. With the delete horizon it had
    (``delete_horizon_ms`` is the header's), its base timestamp stays and the records are copied as they are; a new
    delete horizon becomes its base timestamp (attributes bit 6, KIP-534) and each record is written again with its
    timestamp delta from it. Record timestamps never change. Its maxTimestamp is the largest retained record's
    (the original under LOG_APPEND_TIME). A compressed batch's records (``records`` holds them decompressed) are
    compressed again with its codec, as Kafka's cleaner writes them."""
    data, offsets, timestamps, _keys, _tombstones, starts = records
    attributes, base_timestamp = header.attributes, header.base_timestamp
    if delete_horizon_ms == header.delete_horizon_ms:
        body = b"".join([data[starts[i]:starts[i + 1]] for i in retained])
    else:
        attributes, base_timestamp = attributes | _DELETE_HORIZON_MASK, delete_horizon_ms
        encoded = []
        for i in retained:
            _delta, _offset_delta, key, value, headers, _end = _read_record(data, starts[i], starts[i + 1])
            encoded.append(_encode_record(offsets[i] - header.base_offset, timestamps[i] - base_timestamp, key,
                                          value, headers))
        body = b"".join(encoded)
    out = bytearray(HEADER_SIZE)
    out += compress(header.compression, body) if header.compression else body
    log_append = bool(header.attributes & _TIMESTAMP_TYPE_MASK)
    max_timestamp = header.max_timestamp if log_append else max(timestamps[i] for i in retained)
    _write_header(out, header.base_offset, header.partition_leader_epoch, attributes, header.last_offset_delta,
                  base_timestamp, max_timestamp, header.producer_id, header.producer_epoch, header.base_sequence,
                  len(retained))
    return bytes(out)


def build_empty_batch(header: BatchHeader) -> bytes:
    """The batch ``header`` heads with no records left: kept by the log cleaner for its offsets and producer state
    (Kafka's DefaultRecordBatch.writeEmptyHeader: no base timestamp, uncompressed, no delete horizon)."""
    out = bytearray(HEADER_SIZE)
    attributes = header.attributes & (_TIMESTAMP_TYPE_MASK | _TRANSACTIONAL_MASK | _CONTROL_MASK)
    _write_header(out, header.base_offset, header.partition_leader_epoch, attributes, header.last_offset_delta,
                  NO_TIMESTAMP, header.max_timestamp, header.producer_id, header.producer_epoch,
                  header.base_sequence, 0)
    return bytes(out)
