"""Kafka's primitive types on the wire, read and written one at a time: ints, classic and compact strings, bytes and
array counts, unsigned varints, uuids, and the tagged fields that end every struct of a flexible version.

Classic (non-flexible) forms: int16-length strings, int32-length bytes and array counts, -1 for null. Compact
(flexible) forms: an unsigned varint holding the length + 1, 0 for null. Tagged fields are an unsigned varint
count of (tag, size, bytes) entries. A reader takes (buffer, position) and returns (value, next position); a
writer appends to a bytearray.
"""

from __future__ import annotations

import base64
import struct

from protocol.errors import ProtocolError

Buffer = bytes | bytearray | memoryview

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
FLOAT64 = struct.Struct(">d")
#: Kafka's uuid (topic ids, KIP-516): 16 bytes on the wire; all zeros is Uuid.ZERO_UUID, "no id".
UUID = struct.Struct(">16s")
ZERO_UUID = bytes(16)

#: The longest unsigned varint Kafka reads (a 32-bit value).
MAX_UVARINT_BYTES = 5


class KafkaDecodeError(ProtocolError):
    """Bytes that are not a valid Kafka message of the expected type and version."""


def uuid_text(value: bytes) -> str:
    """A uuid as Kafka prints one (Uuid.toString): URL-safe base64 without padding; "" for ZERO_UUID."""
    return "" if value == ZERO_UUID else base64.urlsafe_b64encode(value).rstrip(b"=").decode()


def uuid_bytes(text: str) -> bytes:
    """The 16 bytes of a uuid written as Kafka prints one; ZERO_UUID for "" or text that is no uuid."""
    try:
        value = base64.urlsafe_b64decode(text + "==")
    except ValueError:
        return ZERO_UUID
    return value if len(value) == UUID.size else ZERO_UUID


# ------------------------------------------------------------------------------------------------ reading


def read_bool(buf: Buffer, pos: int) -> tuple[bool, int]:
    return INT8.unpack_from(buf, pos)[0] != 0, pos + 1


def read_uvarint(buf: Buffer, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most five bytes."""
    if pos < len(buf) and buf[pos] < 0x80:
        return buf[pos], pos + 1
    value = shift = 0
    for at in range(pos, min(pos + MAX_UVARINT_BYTES, len(buf))):
        byte = buf[at]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at + 1
        shift += 7
    if len(buf) - pos < MAX_UVARINT_BYTES:
        raise KafkaDecodeError("an unsigned varint runs past the end of the message")
    raise KafkaDecodeError(f"an unsigned varint is longer than {MAX_UVARINT_BYTES} bytes")


def _checked_length(buf: Buffer, pos: int, length: int, nullable: bool, what: str) -> int:
    """A length read at `pos` (the first byte after it): -1 only where null is allowed, no more than the bytes left."""
    if length < 0 and not (length == -1 and nullable):
        raise KafkaDecodeError(f"invalid {what} length {length}")
    if length > len(buf) - pos:
        raise KafkaDecodeError(f"{what} of {length} bytes runs past the end of the message")
    return length


def _classic_length(buf: Buffer, pos: int, packer: struct.Struct, nullable: bool, what: str) -> tuple[int, int]:
    length = packer.unpack_from(buf, pos)[0]
    pos += packer.size
    return _checked_length(buf, pos, length, nullable, what), pos


def _compact_length(buf: Buffer, pos: int, nullable: bool, what: str) -> tuple[int, int]:
    length, pos = read_uvarint(buf, pos)
    return _checked_length(buf, pos, length - 1, nullable, what), pos


def _text(buf: Buffer, pos: int, length: int) -> tuple[str | None, int]:
    if length < 0:
        return None, pos
    try:
        return str(buf[pos:pos + length], "utf-8"), pos + length
    except UnicodeDecodeError as e:
        raise KafkaDecodeError(f"string is not UTF-8: {e}") from None


def _binary(buf: Buffer, pos: int, length: int) -> tuple[bytes | None, int]:
    if length < 0:
        return None, pos
    return bytes(buf[pos:pos + length]), pos + length


def read_string(buf: Buffer, pos: int, nullable: bool = False) -> tuple[str | None, int]:
    """An int16-length UTF-8 string (-1: null, where allowed)."""
    length, pos = _classic_length(buf, pos, INT16, nullable, "string")
    return _text(buf, pos, length)


def read_compact_string(buf: Buffer, pos: int, nullable: bool = False) -> tuple[str | None, int]:
    """A compact UTF-8 string (0: null, where allowed)."""
    length, pos = _compact_length(buf, pos, nullable, "string")
    return _text(buf, pos, length)


def read_bytes(buf: Buffer, pos: int, nullable: bool = False) -> tuple[bytes | None, int]:
    """int32-length bytes (-1: null, where allowed)."""
    length, pos = _classic_length(buf, pos, INT32, nullable, "bytes")
    return _binary(buf, pos, length)


def read_compact_bytes(buf: Buffer, pos: int, nullable: bool = False) -> tuple[bytes | None, int]:
    """Compact bytes (0: null, where allowed)."""
    length, pos = _compact_length(buf, pos, nullable, "bytes")
    return _binary(buf, pos, length)


def _checked_count(buf: Buffer, pos: int, count: int, nullable: bool) -> int:
    if count < 0 and not (count == -1 and nullable):
        raise KafkaDecodeError(f"invalid array length {count}")
    if count > len(buf) - pos:
        raise KafkaDecodeError(f"array of {count} elements runs past the end of the message")
    return count


def array_count(buf: Buffer, pos: int, nullable: bool = False) -> tuple[int, int]:
    """An int32 array count (-1: null, where allowed), at most the bytes left (every element takes one)."""
    count = INT32.unpack_from(buf, pos)[0]
    pos += 4
    return _checked_count(buf, pos, count, nullable), pos


def compact_array_count(buf: Buffer, pos: int, nullable: bool = False) -> tuple[int, int]:
    """A compact array count (0: null, where allowed), at most the bytes left."""
    count, pos = read_uvarint(buf, pos)
    return _checked_count(buf, pos, count - 1, nullable), pos


def read_tagged_fields(buf: Buffer, pos: int) -> tuple[dict[int, memoryview], int]:
    """The tagged fields ending a struct: each one's bytes by tag."""
    count, pos = read_uvarint(buf, pos)
    if count == 0:
        return {}, pos
    if count > len(buf) - pos:
        raise KafkaDecodeError(f"{count} tagged fields run past the end of the message")
    view = memoryview(buf)
    fields = {}
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        if size > len(buf) - pos:
            raise KafkaDecodeError(f"tagged field {tag} of {size} bytes runs past the end of the message")
        fields[tag] = view[pos:pos + size]
        pos += size
    return fields, pos


def skip_tagged_fields(buf: Buffer, pos: int) -> int:
    """The position after the tagged fields at `pos`, none of them read."""
    return read_tagged_fields(buf, pos)[1]


# ------------------------------------------------------------------------------------------------ writing


def write_bool(out: bytearray, value: bool) -> None:
    out.append(1 if value else 0)


def write_uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    encoded = value.encode()
    out += INT16.pack(len(encoded))
    out += encoded


def write_compact_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
        return
    encoded = value.encode()
    write_uvarint(out, len(encoded) + 1)
    out += encoded


def write_bytes(out: bytearray, value: Buffer | None) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
        return
    out += INT32.pack(len(value))
    out += value


def write_compact_bytes(out: bytearray, value: Buffer | None) -> None:
    if value is None:
        out.append(0)
        return
    write_uvarint(out, len(value) + 1)
    out += value


def write_tagged_fields(out: bytearray, fields: list[tuple[int, bytes | bytearray]]) -> None:
    """Tagged fields as (tag, bytes), in increasing tag order; none is a single 0."""
    write_uvarint(out, len(fields))
    for tag, payload in fields:
        write_uvarint(out, tag)
        write_uvarint(out, len(payload))
        out += payload
