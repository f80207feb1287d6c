"""Where protocol/kafka/specs.json comes from: Apache Kafka 3.9.1's JSON message specs, read from its jars in
build/kafka/libs (`make setup` fetches them), trimmed to the versions minikafka's Kafka codec speaks and to what the
codec reads.

    .venv/bin/python -m tests.unit.kafka_spec_source   # rewrite protocol/kafka/specs.json

Trimming keeps each message's name, api key, type, flexible versions and fields (name, type, versions,
nullableVersions, default, tag, taggedVersions, nested fields), clips validVersions to the versions spoken, drops
fields absent from them and documentation, and inlines common structs. Data formats keep all their versions.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SPECS_FILE = ROOT / "protocol" / "kafka" / "specs.json"
KAFKA_VERSION = "3.9.1"
#: The jars holding the specs: the clients' apis and data, and the group coordinator's records.
JARS = tuple(ROOT / "build" / "kafka" / "libs" / f"{name}-{KAFKA_VERSION}.jar"
             for name in ("kafka-clients", "kafka-group-coordinator"))

#: api name -> the versions minikafka's Kafka codec speaks.
SERVED: dict[str, tuple[int, int]] = {
    # v9 is flexible, v10 adds KIP-951's tagged current leader, v11 an error of transactions
    "Produce": (3, 11),
    # v12 is flexible with the last fetched epoch, v13 names topics by id, v15 the replica state, v16 adds node
    # endpoints and v17 a directory id (tagged)
    "Fetch": (4, 17),
    # v6 is flexible, v7 looks up the largest timestamp (KIP-734), v8 the local log start (KIP-405)
    "ListOffsets": (1, 8),
    # v10+ answer with topic ids, v12 takes topics asked for by id
    "Metadata": (0, 12),
    # v3 is flexible and names the client's software (KIP-511); v4 is v3's format (Kafka 3.9's clients send it)
    "ApiVersions": (0, 4),
    # v5 is flexible and answers each topic's configs, v7 its id; v6 of DeleteTopics takes topics by id
    "CreateTopics": (2, 7),
    "DeleteTopics": (1, 6),
    # v2 is flexible, v3 names the producer that asks again (its id and epoch), v4 and v5 add error codes of
    # transactions
    "InitProducerId": (0, 5),
    "OffsetForLeaderEpoch": (2, 4),
    "DescribeConfigs": (1, 4),
    # the admin apis
    "DescribeCluster": (0, 1),
    "CreatePartitions": (0, 3),
    "ElectLeaders": (0, 2),
    "DeleteRecords": (0, 2),
    "AlterConfigs": (0, 2),
    "IncrementalAlterConfigs": (0, 1),
    "DescribeLogDirs": (0, 4),
    "AlterPartitionReassignments": (0, 0),
    "ListPartitionReassignments": (0, 0),
    "DescribeProducers": (0, 0),
    "DescribeUserScramCredentials": (0, 0),
    "AlterUserScramCredentials": (0, 0),
    "DescribeClientQuotas": (0, 1),
    # authentication: after SaslHandshake v0 the tokens travel raw, outside Kafka's framing; v1 of SaslAuthenticate
    # has the session lifetime, v2 is flexible
    "SaslHandshake": (0, 1),
    "SaslAuthenticate": (0, 2),
    # the group apis: v5 of FindCoordinator allows an error of transactions, v6 share groups' key type (answered
    # COORDINATOR_NOT_AVAILABLE, as Kafka 3.9 does without share groups); v0 of OffsetCommit and OffsetFetch kept
    # offsets in ZooKeeper
    "FindCoordinator": (0, 6),
    "JoinGroup": (0, 9),
    "SyncGroup": (0, 5),
    "Heartbeat": (0, 4),
    "LeaveGroup": (0, 5),
    "ListGroups": (0, 5),
    "DescribeGroups": (0, 5),
    "DeleteGroups": (0, 2),
    "OffsetCommit": (1, 9),
    "OffsetFetch": (1, 9),
    "OffsetDelete": (0, 0),
    # ACLs (kafka-acls): a pattern type from v1, flexible from v2
    "DescribeAcls": (0, 3),
    "CreateAcls": (0, 3),
    "DeleteAcls": (0, 3),
}
#: The data formats: the records of __consumer_offsets and the consumer protocol's subscription and assignment.
DATA = ("OffsetCommitKey", "OffsetCommitValue", "GroupMetadataKey", "GroupMetadataValue",
        "ConsumerProtocolSubscription", "ConsumerProtocolAssignment")
_KEPT = ("name", "type", "versions", "nullableVersions", "default", "tag", "taggedVersions")


def _load(name: str) -> dict[str, Any]:
    entry = f"common/message/{name}.json"
    for jar in JARS:
        if not jar.exists():
            raise FileNotFoundError(f"{jar} is missing: run make setup")
        with zipfile.ZipFile(jar) as archive:
            if entry in archive.namelist():
                text = archive.read(entry).decode()
                return json.loads("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")))
    raise KeyError(f"no spec {name} in {', '.join(jar.name for jar in JARS)}")


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
        assert "flexibleVersions" not in field, (field["name"], "a field's own flexible versions are not read")
        if not _overlaps(field["versions"], served) or ("tag" in field and not _overlaps(field["taggedVersions"],
                                                                                         served)):
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


def _trimmed(spec: dict[str, Any], served: tuple[int, int]) -> dict[str, Any]:
    common = {struct["name"]: struct for struct in spec.get("commonStructs", [])}
    valid = _range(spec["validVersions"])
    assert valid is not None and valid[0] <= served[0] and served[1] <= valid[1], (spec["name"], valid)
    head = {"apiKey": spec["apiKey"]} if "apiKey" in spec else {}
    return {**head, "type": spec["type"], "validVersions": f"{served[0]}-{served[1]}",
            "flexibleVersions": spec["flexibleVersions"], "fields": _trim_fields(spec["fields"], served, common)}


def trimmed_specs() -> dict[str, Any]:
    """The content of specs.json, computed from the specs in Kafka's jars."""
    messages = {}
    for api, served in SERVED.items():
        for kind in ("Request", "Response"):
            spec = _load(api + kind)
            messages[spec["name"]] = _trimmed(spec, served)
    data = {}
    for name in DATA:
        spec = _load(name)
        data[name] = _trimmed(spec, _range(spec["validVersions"]))
    return {
        "_source": f"Apache Kafka {KAFKA_VERSION}'s JSON message specs (common/message in its kafka-clients and "
                   "kafka-group-coordinator jars, Apache-2.0), trimmed by tests/unit/kafka_spec_source.py",
        "messages": messages,
        "data": data,
    }


def kafka_newest_version(api: str) -> int:
    """The newest version of `api` Kafka serves (its request's validVersions)."""
    found = _range(_load(f"{api}Request")["validVersions"])
    assert found is not None
    return found[1]


def render() -> str:
    return json.dumps(trimmed_specs(), indent=1) + "\n"


if __name__ == "__main__":
    SPECS_FILE.write_text(render())
    print(f"wrote {SPECS_FILE}")
