"""Encoders and decoders of Kafka messages, compiled per (message, version) from the specs in schema.py.

A message is a dict keyed by snake_case field names; nested structs are dicts too, arrays are lists. Decoding
gives every field of the spec, those absent from the version at their default; encoding writes the fields the
version has, taking a missing key as its default. Non-flexible versions only: int16-length strings, int32-length
bytes and arrays, -1 for null.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cache
from typing import Any

from protocol.errors import ProtocolError
from protocol.kafka.schema import SPECS, FieldSpec

Buffer = bytes | bytearray | memoryview
Reader = Callable[[Buffer, int], tuple[Any, int]]
Writer = Callable[[bytearray, Any], None]

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
_INTS = {"int8": INT8, "int16": INT16, "int32": INT32, "int64": INT64}


class KafkaDecodeError(ProtocolError):
    """Bytes that are not a valid Kafka message of the expected type and version."""


# ------------------------------------------------------------------------------------------------ decoding


def _int_reader(packer: struct.Struct) -> Reader:
    unpack, size = packer.unpack_from, packer.size

    def read(buf: Buffer, pos: int) -> tuple[int, int]:
        return unpack(buf, pos)[0], pos + size

    return read


def read_bool(buf: Buffer, pos: int) -> tuple[bool, int]:
    return INT8.unpack_from(buf, pos)[0] != 0, pos + 1


def _length(buf: Buffer, pos: int, packer: struct.Struct, nullable: bool, what: str) -> tuple[int, int]:
    """A length prefix; -1 only where null is allowed; checked against the bytes left."""
    length = packer.unpack_from(buf, pos)[0]
    pos += packer.size
    if length < 0 and not (length == -1 and nullable):
        raise KafkaDecodeError(f"invalid {what} length {length}")
    if length > len(buf) - pos:
        raise KafkaDecodeError(f"{what} of {length} bytes runs past the end of the message")
    return length, pos


def read_string(buf: Buffer, pos: int, nullable: bool = False) -> tuple[str | None, int]:
    """An int16-length UTF-8 string (-1: null, where allowed)."""
    length, pos = _length(buf, pos, INT16, nullable, "string")
    if length < 0:
        return None, pos
    try:
        return str(buf[pos:pos + length], "utf-8"), pos + length
    except UnicodeDecodeError as e:
        raise KafkaDecodeError(f"string is not UTF-8: {e}") from None


def read_bytes(buf: Buffer, pos: int, nullable: bool = False) -> tuple[bytes | None, int]:
    """int32-length bytes (-1: null, where allowed)."""
    length, pos = _length(buf, pos, INT32, nullable, "bytes")
    if length < 0:
        return None, pos
    return bytes(buf[pos:pos + length]), pos + length


def array_count(buf: Buffer, pos: int, nullable: bool = False) -> tuple[int, int]:
    """An int32 array count (-1: null, where allowed), at most the bytes left (every element takes one)."""
    count = INT32.unpack_from(buf, pos)[0]
    pos += 4
    if count < 0 and not (count == -1 and nullable):
        raise KafkaDecodeError(f"invalid array length {count}")
    if count > len(buf) - pos:
        raise KafkaDecodeError(f"array of {count} elements runs past the end of the message")
    return count, pos


def _element_reader(field: FieldSpec, version: int) -> Reader:
    kind = field.element_type
    if field.is_struct:
        return _struct_reader(field.fields, version)
    nullable = version in field.nullable and not field.is_array
    if kind in _INTS:
        return _int_reader(_INTS[kind])
    if kind == "bool":
        return read_bool
    if kind == "string":
        return lambda buf, pos: read_string(buf, pos, nullable)
    if kind in ("bytes", "records"):
        return lambda buf, pos: read_bytes(buf, pos, nullable)
    raise TypeError(f"unsupported field type {kind!r}")


def _field_reader(field: FieldSpec, version: int) -> Reader:
    element = _element_reader(field, version)
    if not field.is_array:
        return element
    nullable = version in field.nullable

    def read_array(buf: Buffer, pos: int) -> tuple[list[Any] | None, int]:
        count, pos = array_count(buf, pos, nullable)
        if count < 0:
            return None, pos
        items = []
        for _ in range(count):
            item, pos = element(buf, pos)
            items.append(item)
        return items, pos

    return read_array


def _struct_reader(fields: tuple[FieldSpec, ...], version: int) -> Reader:
    present = [(f.name, _field_reader(f, version)) for f in fields if version in f.versions]
    absent = [(f.name, f.default) for f in fields if version not in f.versions]

    def read(buf: Buffer, pos: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = dict(absent)
        for name, reader in present:
            out[name], pos = reader(buf, pos)
        return out, pos

    return read


@cache
def decoder(message: str, version: int) -> Callable[[Buffer, int], dict[str, Any]]:
    """Decode `message` at `version` from buf[pos:]; KafkaDecodeError for bytes that do not hold one (bytes after
    it are ignored, as Kafka does)."""
    spec = SPECS[message]
    if version not in spec.versions:
        raise ValueError(f"{message} version {version} is not served")
    read = _struct_reader(spec.fields, version)

    def decode(buf: Buffer, pos: int = 0) -> dict[str, Any]:
        try:
            return read(buf, pos)[0]
        except struct.error:
            raise KafkaDecodeError(f"{message} v{version}: the message ends early") from None

    return decode


# ------------------------------------------------------------------------------------------------ encoding


def _int_writer(packer: struct.Struct) -> Writer:
    pack = packer.pack

    def write(out: bytearray, value: int) -> None:
        out += pack(value)

    return write


def write_bool(out: bytearray, value: bool) -> None:
    out.append(1 if value else 0)


def write_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    encoded = value.encode()
    out += INT16.pack(len(encoded))
    out += encoded


def write_bytes(out: bytearray, value: Buffer | None) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
        return
    out += INT32.pack(len(value))
    out += value


def _null_checked(writer: Writer, nullable: bool, name: str) -> Writer:
    if nullable:
        return writer

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            raise ValueError(f"{name} is not nullable")
        writer(out, value)

    return write


def _element_writer(field: FieldSpec, version: int) -> Writer:
    kind = field.element_type
    if field.is_struct:
        return _struct_writer(field.fields, version)
    if kind in _INTS:
        return _int_writer(_INTS[kind])
    if kind == "bool":
        return write_bool
    nullable = version in field.nullable and not field.is_array
    if kind == "string":
        return _null_checked(write_string, nullable, field.name)
    if kind in ("bytes", "records"):
        return _null_checked(write_bytes, nullable, field.name)
    raise TypeError(f"unsupported field type {kind!r}")


def _field_writer(field: FieldSpec, version: int) -> Writer:
    element = _element_writer(field, version)
    if not field.is_array:
        return element
    nullable = version in field.nullable
    name = field.name

    def write_array(out: bytearray, items: list[Any] | None) -> None:
        if items is None:
            if not nullable:
                raise ValueError(f"{name} is not nullable")
            out += b"\xff\xff\xff\xff"
            return
        out += INT32.pack(len(items))
        for item in items:
            element(out, item)

    return write_array


def _struct_writer(fields: tuple[FieldSpec, ...], version: int) -> Writer:
    present = [(f.name, f.default, _field_writer(f, version)) for f in fields if version in f.versions]

    def write(out: bytearray, value: dict[str, Any]) -> None:
        for name, default, writer in present:
            writer(out, value.get(name, default))

    return write


@cache
def encoder(message: str, version: int) -> Callable[[dict[str, Any], bytearray], None]:
    """Append `message` at `version` to a bytearray; ValueError (or struct.error) for a value that does not fit."""
    spec = SPECS[message]
    if version not in spec.versions:
        raise ValueError(f"{message} version {version} is not served")
    write = _struct_writer(spec.fields, version)

    def encode(value: dict[str, Any], out: bytearray) -> None:
        write(out, value)

    return encode


def encode(message: str, version: int, value: dict[str, Any]) -> bytes:
    """The bytes of `message` at `version`."""
    out = bytearray()
    encoder(message, version)(value, out)
    return bytes(out)


def decode(message: str, version: int, buf: Buffer) -> dict[str, Any]:
    """`message` at `version` decoded from the start of buf."""
    return decoder(message, version)(buf, 0)
