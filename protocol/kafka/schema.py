"""Kafka's JSON message specs (specs.json, trimmed from Apache Kafka's): messages, fields and their versions.

specs.json holds two kinds: the requests and responses of apis ("messages", SPECS), and data formats ("data",
DATA_SPECS), structs that are no api's message but are written behind an int16 version into records or into other
messages' bytes (the records of __consumer_offsets, the consumer protocol's subscription and assignment)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

#: The largest version number a spec's "N+" stands for.
MAX_VERSION = 2**15 - 1
PRIMITIVES = ("bool", "int8", "int16", "int32", "int64", "float64", "uuid", "string", "bytes", "records")


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; empty when low > high ("none")."""

    low: int
    high: int

    @classmethod
    def parse(cls, text: str) -> Versions:
        """Kafka's notation: "3+", "0-7", "5" or "none"."""
        if text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), MAX_VERSION)
        low, _, high = text.partition("-")
        return cls(int(low), int(high or low))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high

    def overlaps(self, other: Versions) -> bool:
        return max(self.low, other.low) <= min(self.high, other.high)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field: its snake_case name, type ("int32", "[]int32", a struct), versions and default; a tagged field
    (flexible versions only) has its tag and the versions it is tagged in."""

    name: str
    type: str
    versions: Versions
    nullable: Versions
    default: Any
    fields: tuple[FieldSpec, ...]  # of a struct or an array of structs
    tag: int | None = None
    tagged_versions: Versions = Versions(1, 0)

    def in_version(self, version: int) -> bool:
        """Whether the field is in `version`, tagged or not."""
        return version in self.versions and (self.tag is None or version in self.tagged_versions)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """A request or response message (with its api key), or a data format (api key None): the versions the codec
    speaks, those that are flexible (compact forms, tagged fields) and its fields."""

    name: str
    api_key: int | None
    versions: Versions
    flexible: Versions
    fields: tuple[FieldSpec, ...]


def snake_case(name: str) -> str:
    """Kafka's field names as Python names: "PartitionIndex" -> "partition_index", "timeoutMs" -> "timeout_ms"."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _default(field: dict[str, Any], nullable: Versions) -> Any:
    kind = field["type"]
    text = field.get("default")
    if text is not None and not isinstance(text, str):
        text = str(text).lower()  # a number or a bool written without quotes
    if kind.startswith("[]"):
        return None if text == "null" else []
    if kind in ("bool",):
        return text == "true"
    if kind.startswith("int"):
        return int(text, 0) if text is not None else 0
    if kind == "uuid":
        return bytes(16)  # Kafka's Uuid.ZERO_UUID
    if kind == "string":
        return None if text == "null" else (text or "")
    if kind in ("bytes", "records"):
        return None if nullable.low <= nullable.high else b""
    return None  # a struct


def _field(field: dict[str, Any]) -> FieldSpec:
    nullable = Versions.parse(field.get("nullableVersions", "none"))
    return FieldSpec(
        name=snake_case(field["name"]),
        type=field["type"],
        versions=Versions.parse(field["versions"]),
        nullable=nullable,
        default=_default(field, nullable),
        fields=tuple(_field(f) for f in field.get("fields", ())),
        tag=field.get("tag"),
        tagged_versions=Versions.parse(field.get("taggedVersions", "none")),
    )


def parse_message(name: str, message: dict[str, Any]) -> MessageSpec:
    """A message of specs.json (Kafka's JSON, trimmed by tests/unit/kafka_spec_source.py)."""
    return MessageSpec(name, message.get("apiKey"), Versions.parse(message["validVersions"]),
                       Versions.parse(message["flexibleVersions"]), tuple(_field(f) for f in message["fields"]))


def _load() -> dict[str, dict[str, MessageSpec]]:
    """Each section of specs.json: its messages by name ("ProduceRequest", "OffsetCommitValue", ...)."""
    data = json.loads(resources.files(__package__).joinpath("specs.json").read_text())
    return {section: {name: parse_message(name, message) for name, message in data[section].items()}
            for section in ("messages", "data")}


_SECTIONS = _load()
SPECS: dict[str, MessageSpec] = _SECTIONS["messages"]
DATA_SPECS: dict[str, MessageSpec] = _SECTIONS["data"]
