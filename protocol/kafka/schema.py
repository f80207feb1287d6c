"""Kafka's JSON message specs (specs.json, trimmed from Apache Kafka's): messages, fields and their versions."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

#: The largest version number a spec's "N+" stands for.
MAX_VERSION = 2**15 - 1
PRIMITIVES = ("bool", "int8", "int16", "int32", "int64", "string", "bytes", "records")


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


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field: its snake_case name, type ("int32", "[]int32", a struct), versions and default."""

    name: str
    type: str
    versions: Versions
    nullable: Versions
    default: Any
    fields: tuple[FieldSpec, ...]  # of a struct or an array of structs

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
    """A request or response message: its api key, the versions served and its fields."""

    name: str
    api_key: int
    versions: Versions
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
    )


def load_specs() -> dict[str, MessageSpec]:
    """Every message in specs.json, by name ("ProduceRequest", ...)."""
    data = json.loads(resources.files(__package__).joinpath("specs.json").read_text())
    return {
        name: MessageSpec(name, message["apiKey"], Versions.parse(message["validVersions"]),
                          tuple(_field(f) for f in message["fields"]))
        for name, message in data["messages"].items()
    }


SPECS: dict[str, MessageSpec] = load_specs()
