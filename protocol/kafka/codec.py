"""Encoders and decoders of Kafka messages, compiled per (message, version) from the specs in schema.py.

A message is a dict keyed by snake_case field names; nested structs are dicts too, arrays are lists. Decoding
gives every field of the spec, those absent from the version at their default; encoding writes the fields the
version has, taking a missing key as its default. A non-flexible version uses the classic forms of
primitives.py; a flexible one their compact forms and ends every struct with tagged fields: those the spec tags are
read into their fields and written when they differ from their default, any other tag is skipped.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cache
from typing import Any

from protocol.kafka.primitives import (
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    UUID,
    Buffer,
    KafkaDecodeError,
    array_count,
    compact_array_count,
    read_bool,
    read_bytes,
    read_compact_bytes,
    read_compact_string,
    read_string,
    read_tagged_fields,
    write_bool,
    write_bytes,
    write_compact_bytes,
    write_compact_string,
    write_string,
    write_tagged_fields,
    write_uvarint,
)
from protocol.kafka.schema import DATA_SPECS, SPECS, FieldSpec, MessageSpec

Reader = Callable[[Buffer, int], tuple[Any, int]]
Writer = Callable[[bytearray, Any], None]

#: Fixed-size fields, each one struct: the ints, and uuids (16 bytes).
_FIXED = {"int8": INT8, "int16": INT16, "int32": INT32, "int64": INT64, "float64": FLOAT64, "uuid": UUID}
_STRINGS = {False: (read_string, write_string), True: (read_compact_string, write_compact_string)}
_BYTES = {False: (read_bytes, write_bytes), True: (read_compact_bytes, write_compact_bytes)}
_ARRAY_COUNTS = {False: array_count, True: compact_array_count}


def spec(message: str) -> MessageSpec:
    """The spec of an api's message or of a data format, by name."""
    return SPECS[message] if message in SPECS else DATA_SPECS[message]


# ------------------------------------------------------------------------------------------------ decoding


def _fixed_reader(packer: struct.Struct) -> Reader:
    unpack, size = packer.unpack_from, packer.size

    def read(buf: Buffer, pos: int) -> tuple[int, int]:
        return unpack(buf, pos)[0], pos + size

    return read


def _element_reader(field: FieldSpec, version: int, flexible: bool) -> Reader:
    kind = field.element_type
    if field.is_struct:
        return _struct_reader(field.fields, version, flexible)
    nullable = version in field.nullable and not field.is_array
    if kind in _FIXED:
        return _fixed_reader(_FIXED[kind])
    if kind == "bool":
        return read_bool
    if kind in ("string", "bytes", "records"):
        read = (_STRINGS if kind == "string" else _BYTES)[flexible][0]
        return lambda buf, pos: read(buf, pos, nullable)
    raise TypeError(f"unsupported field type {kind!r}")


def _field_reader(field: FieldSpec, version: int, flexible: bool) -> Reader:
    element = _element_reader(field, version, flexible)
    if not field.is_array:
        return element
    nullable = version in field.nullable
    count_of = _ARRAY_COUNTS[flexible]

    def read_array(buf: Buffer, pos: int) -> tuple[list[Any] | None, int]:
        count, pos = count_of(buf, pos, nullable)
        if count < 0:
            return None, pos
        items = []
        for _ in range(count):
            item, pos = element(buf, pos)
            items.append(item)
        return items, pos

    return read_array


def _struct_reader(fields: tuple[FieldSpec, ...], version: int, flexible: bool) -> Reader:
    present = [(f.name, _field_reader(f, version, flexible)) for f in fields
               if version in f.versions and f.tag is None]
    absent = [(f.name, f.default) for f in fields if not (version in f.versions and f.tag is None)]
    if not flexible:
        def read(buf: Buffer, pos: int) -> tuple[dict[str, Any], int]:
            out: dict[str, Any] = dict(absent)
            for name, reader in present:
                out[name], pos = reader(buf, pos)
            return out, pos

        return read
    tagged = {f.tag: (f.name, _field_reader(f, version, flexible)) for f in fields
              if f.tag is not None and f.in_version(version)}

    def read_flexible(buf: Buffer, pos: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = dict(absent)
        for name, reader in present:
            out[name], pos = reader(buf, pos)
        fields_read, pos = read_tagged_fields(buf, pos)
        for tag, data in fields_read.items():
            if tag in tagged:
                name, reader = tagged[tag]
                out[name] = reader(data, 0)[0]
        return out, pos

    return read_flexible


def _is_flexible(message: MessageSpec, version: int) -> bool:
    """Whether `version` of `message` is flexible; ValueError for a version the codec does not speak."""
    if version not in message.versions:
        raise ValueError(f"{message.name} version {version} is not served")
    return version in message.flexible


def message_decoder(message: MessageSpec, version: int) -> Callable[[Buffer, int], dict[str, Any]]:
    """Decode `message` at `version` from buf[pos:]; KafkaDecodeError for bytes that do not hold one (bytes after
    it are ignored, as Kafka does)."""
    read = _struct_reader(message.fields, version, _is_flexible(message, version))
    what = f"{message.name} v{version}"

    def decode(buf: Buffer, pos: int = 0) -> dict[str, Any]:
        try:
            return read(buf, pos)[0]
        except struct.error:
            raise KafkaDecodeError(f"{what}: the message ends early") from None

    return decode


@cache
def decoder(message: str, version: int) -> Callable[[Buffer, int], dict[str, Any]]:
    """The decoder of specs.json's `message` at `version` (see message_decoder)."""
    return message_decoder(spec(message), version)


# ------------------------------------------------------------------------------------------------ encoding


def _fixed_writer(packer: struct.Struct) -> Writer:
    pack = packer.pack

    def write(out: bytearray, value: int) -> None:
        out += pack(value)

    return write


def _null_checked(writer: Writer, nullable: bool, name: str) -> Writer:
    if nullable:
        return writer

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            raise ValueError(f"{name} is not nullable")
        writer(out, value)

    return write


def _element_writer(field: FieldSpec, version: int, flexible: bool) -> Writer:
    kind = field.element_type
    if field.is_struct:
        return _struct_writer(field.fields, version, flexible)
    if kind in _FIXED:
        return _fixed_writer(_FIXED[kind])
    if kind == "bool":
        return write_bool
    nullable = version in field.nullable and not field.is_array
    if kind in ("string", "bytes", "records"):
        return _null_checked((_STRINGS if kind == "string" else _BYTES)[flexible][1], nullable, field.name)
    raise TypeError(f"unsupported field type {kind!r}")


def _compact_count(count: int) -> bytearray:
    out = bytearray()
    write_uvarint(out, count + 1)
    return out


def _field_writer(field: FieldSpec, version: int, flexible: bool) -> Writer:
    element = _element_writer(field, version, flexible)
    if not field.is_array:
        return element
    nullable = version in field.nullable
    name = field.name
    null, pack_count = (b"\x00", _compact_count) if flexible else (b"\xff\xff\xff\xff", INT32.pack)

    def write_array(out: bytearray, items: list[Any] | None) -> None:
        if items is None:
            if not nullable:
                raise ValueError(f"{name} is not nullable")
            out += null
            return
        out += pack_count(len(items))
        for item in items:
            element(out, item)

    return write_array


def _struct_writer(fields: tuple[FieldSpec, ...], version: int, flexible: bool) -> Writer:
    present = [(f.name, f.default, _field_writer(f, version, flexible)) for f in fields
               if version in f.versions and f.tag is None]
    if not flexible:
        def write(out: bytearray, value: dict[str, Any]) -> None:
            for name, default, writer in present:
                writer(out, value.get(name, default))

        return write
    tagged = sorted((f.tag, f.name, f.default, _field_writer(f, version, flexible)) for f in fields
                    if f.tag is not None and f.in_version(version))

    def write_flexible(out: bytearray, value: dict[str, Any]) -> None:
        for name, default, writer in present:
            writer(out, value.get(name, default))
        written = []
        for tag, name, default, writer in tagged:
            field_value = value.get(name, default)
            if field_value != default:
                payload = bytearray()
                writer(payload, field_value)
                written.append((tag, payload))
        write_tagged_fields(out, written)

    return write_flexible


def message_encoder(message: MessageSpec, version: int) -> Callable[[dict[str, Any], bytearray], None]:
    """Append `message` at `version` to a bytearray; ValueError (or struct.error) for a value that does not fit."""
    write = _struct_writer(message.fields, version, _is_flexible(message, version))

    def encode(value: dict[str, Any], out: bytearray) -> None:
        write(out, value)

    return encode


@cache
def encoder(message: str, version: int) -> Callable[[dict[str, Any], bytearray], None]:
    """The encoder of specs.json's `message` at `version` (see message_encoder)."""
    return message_encoder(spec(message), version)


def encode(message: str, version: int, value: dict[str, Any]) -> bytes:
    """The bytes of `message` at `version`."""
    out = bytearray()
    encoder(message, version)(value, out)
    return bytes(out)


def decode(message: str, version: int, buf: Buffer) -> dict[str, Any]:
    """`message` at `version` decoded from the start of buf."""
    return decoder(message, version)(buf, 0)
