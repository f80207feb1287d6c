"""Where protocol/kafka/specs.json comes from: Apache Kafka's JSON message specs as bundled in the kafka-python
wheel (kafka/protocol/schemas/resources/), trimmed to the versions minikafka serves and to what its codec reads.

    .venv/bin/python -m tests.unit.kafka_spec_source   # rewrite protocol/kafka/specs.json

Trimming keeps each message's name, api key, type and fields (name, type, versions, nullableVersions, default,
nested fields), clips validVersions to the served range, drops fields absent from that range, tagged fields and
documentation, and inlines common structs.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

SPECS_FILE = Path(__file__).resolve().parents[2] / "protocol" / "kafka" / "specs.json"

#: api name -> the versions minikafka serves (non-flexible ones only).
SERVED: dict[str, tuple[int, int]] = {
    "Produce": (3, 8),
    "Fetch": (4, 11),
    "ListOffsets": (1, 5),
    "Metadata": (0, 8),
    "ApiVersions": (0, 2),
    "CreateTopics": (2, 4),
    "DeleteTopics": (1, 3),
    "InitProducerId": (0, 1),
    "OffsetForLeaderEpoch": (2, 3),
    "DescribeConfigs": (1, 3),
}
_KEPT = ("name", "type", "versions", "nullableVersions", "default")


def _load(name: str) -> dict[str, Any]:
    text = resources.files("kafka.protocol.schemas.resources").joinpath(f"{name}.json").read_text()
    return json.loads("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")))


def _range(spec: str) -> tuple[int, int] | None:
    if spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), 1 << 15
    low, _, high = spec.partition("-")
    return int(low), int(high or low)


def _overlaps(spec: str, served: tuple[int, int]) -> bool:
    found = _range(spec)
    return found is not None and found[0] <= served[1] and served[0] <= found[1]


def _trim_fields(fields: list[dict[str, Any]], served: tuple[int, int], common: dict[str, Any]) -> list[dict[str, Any]]:
    kept = []
    for field in fields:
        if "tag" in field or not _overlaps(field["versions"], served):
            continue
        out = {key: field[key] for key in _KEPT if key in field}
        nested = field.get("fields")
        struct = re.sub(r"^\[\]", "", field["type"])
        if nested is None and struct in common:
            nested = common[struct]["fields"]
        if nested is not None:
            out["fields"] = _trim_fields(nested, served, common)
        kept.append(out)
    return kept


def trimmed_specs() -> dict[str, Any]:
    """The content of specs.json, computed from kafka-python's bundled specs."""
    messages: dict[str, Any] = {}
    for api, served in SERVED.items():
        for kind in ("Request", "Response"):
            spec = _load(api + kind)
            common = {struct["name"]: struct for struct in spec.get("commonStructs", [])}
            valid = _range(spec["validVersions"])
            assert valid is not None and valid[0] <= served[0] and served[1] <= valid[1], (api, valid)
            flexible = _range(spec["flexibleVersions"])
            assert flexible is not None and flexible[0] > served[1], (api, "serves a flexible version")
            messages[spec["name"]] = {
                "apiKey": spec["apiKey"],
                "type": spec["type"],
                "validVersions": f"{served[0]}-{served[1]}",
                "fields": _trim_fields(spec["fields"], served, common),
            }
    return {
        "_source": "Apache Kafka's JSON message specs (clients/src/main/resources/common/message, Apache-2.0) as "
                   "bundled in kafka-python 3.0.12, trimmed by tests/unit/kafka_spec_source.py",
        "messages": messages,
    }


def render() -> str:
    return json.dumps(trimmed_specs(), indent=1) + "\n"


if __name__ == "__main__":
    SPECS_FILE.write_text(render())
    print(f"wrote {SPECS_FILE}")
