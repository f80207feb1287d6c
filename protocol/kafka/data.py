"""Kafka's data formats as bytes: a struct of specs.json's "data" section behind the int16 of its version, as Kafka's
MessageUtil.toVersionPrefixedBytes writes it (the records of __consumer_offsets, the consumer protocol's
subscription and assignment). Its fields are the codec's, flexible versions included."""

from __future__ import annotations

from typing import Any

from protocol.kafka import codec
from protocol.kafka.primitives import INT16, Buffer, KafkaDecodeError
from protocol.kafka.schema import DATA_SPECS, Versions


class DataFormatError(KafkaDecodeError):
    """Bytes that do not hold the struct expected (too short, a bad length or version, text that is not UTF-8)."""


def versions(name: str) -> Versions:
    """The versions data format `name` has."""
    return DATA_SPECS[name].versions


def encode(name: str, version: int, value: dict[str, Any]) -> bytes:
    """`value` as data format `name` at `version`, behind its version; ValueError for a version it does not have."""
    if version not in versions(name):
        raise ValueError(f"{name} has no version {version}")
    out = bytearray(INT16.pack(version))
    codec.encoder(name, version)(value, out)
    return bytes(out)


def read_version(data: Buffer) -> int:
    """The version a data format's bytes start with."""
    if len(data) < INT16.size:
        raise DataFormatError(f"{len(data)} bytes hold no version")
    return INT16.unpack_from(data, 0)[0]


def decode(name: str, version: int, data: Buffer) -> dict[str, Any]:
    """The fields of data format `name` read at `version` from the bytes after the version (bytes after the struct
    are ignored, as Kafka does); DataFormatError for a version it does not have, or bytes that do not hold it."""
    if version not in versions(name):
        raise DataFormatError(f"unknown {name} version {version}")
    try:
        return codec.decoder(name, version)(data, INT16.size)
    except KafkaDecodeError as e:
        raise DataFormatError(str(e)) from None
