"""ZooKeeper paths and znode contents, in Apache Kafka's layout and JSON formats (ZooKeeper mode).

Paths are relative to the client's chroot. JSON is written compactly, as Kafka's Jackson does. Pure: json and the
listener model only.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from protocol.endpoint import EndPoint, ListenerConfigError, parse_endpoint

CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
CONFIG_TOPICS_PATH = "/config/topics"
CONFIG_CHANGES_PATH = "/config/changes"
CONFIG_USERS_PATH = "/config/users"
DELETE_TOPICS_PATH = "/admin/delete_topics"
REASSIGN_PARTITIONS_PATH = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION_PATH = "/admin/preferred_replica_election"
# minikafka's own: replicas of deleted topics or removed by a reassignment, left on brokers that were down then;
# one znode per broker, deleted once that broker has deleted them.
PENDING_REPLICA_DELETIONS_PATH = "/admin/pending_replica_deletions"
ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"
CLUSTER_ID_PATH = "/cluster/id"

# Persistent paths every broker makes sure of at start-up (Kafka's createTopLevelPaths).
TOP_LEVEL_PATHS = (
    BROKER_IDS_PATH,
    TOPICS_PATH,
    CONFIG_TOPICS_PATH,
    CONFIG_CHANGES_PATH,
    DELETE_TOPICS_PATH,
    PENDING_REPLICA_DELETIONS_PATH,
    ISR_CHANGE_NOTIFICATION_PATH,
    PRODUCER_ID_BLOCK_PATH,
)

INITIAL_CONTROLLER_EPOCH = 0  # /controller_epoch is created with 0; the first controller's epoch is 1


class ZkDataError(ValueError):
    """A znode whose contents do not follow the expected format."""


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}"


def topic_partitions_path(topic: str) -> str:
    return f"{topic_path(topic)}/partitions"


def topic_partition_path(topic: str, partition: int) -> str:
    return f"{topic_partitions_path(topic)}/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{topic_partition_path(topic, partition)}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS_PATH}/{topic}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS_PATH}/{topic}"


def pending_replica_deletions_path(broker_id: int) -> str:
    return f"{PENDING_REPLICA_DELETIONS_PATH}/{broker_id}"


def isr_change_sequence_path() -> str:
    """The prefix to create a sequential ISR change notification under."""
    return f"{ISR_CHANGE_NOTIFICATION_PATH}/{ISR_CHANGE_PREFIX}"


def _dump(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _load(data: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise ZkDataError(f"{what} is not JSON: {e}") from None
    if not isinstance(value, dict):
        raise ZkDataError(f"{what} is not a JSON object: {data!r}")
    return value


def _field(obj: Mapping[str, Any], key: str, kind: type, what: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ZkDataError(f"{what}: {key!r} is missing or not {kind.__name__}: {obj!r}")
    return value


def _int_list(value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        raise ZkDataError(f"{what}: expected a list of ints, got {value!r}")
    return value


# ---------------------------------------------------------------------------------------------
# /brokers/ids/<id> (ephemeral)


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A registered broker: where to reach it on the listener it was read for (the inter-broker one), every
    endpoint it registered, and its epoch (the czxid of its registration znode, KIP-380)."""

    id: int
    host: str
    port: int
    epoch: int = -1
    rack: str | None = None
    endpoints: tuple[EndPoint, ...] = ()


def encode_broker(endpoints: Sequence[EndPoint], timestamp_ms: int, rack: str | None = None) -> bytes:
    """Kafka's version 5 broker registration: every advertised endpoint and its security protocol; the top-level
    host and port are the first PLAINTEXT endpoint's (rack only when set, as Kafka)."""
    plaintext = next((e for e in endpoints if e.security_protocol == "PLAINTEXT"), None)
    value: dict[str, Any] = {
        "version": 5,
        "host": plaintext.host if plaintext else None,
        "port": plaintext.port if plaintext else -1,
        "endpoints": [str(e) for e in endpoints],
        "listener_security_protocol_map": {e.listener_name: e.security_protocol for e in endpoints},
        "jmx_port": -1,
        "timestamp": str(timestamp_ms),
        "features": {},
    }
    if rack is not None:
        value["rack"] = rack
    return _dump(value)


def decode_broker(broker_id: int, data: bytes, epoch: int = -1, listener_name: str = "PLAINTEXT") -> BrokerInfo:
    """A broker registration, with its address on `listener_name`; a registration without endpoints (version 1)
    has only the top-level PLAINTEXT host and port."""
    what = f"broker {broker_id} registration"
    value = _load(data, what)
    protocol_map = value.get("listener_security_protocol_map") or {}
    if not isinstance(protocol_map, dict):
        raise ZkDataError(f"{what}: listener_security_protocol_map is not a map: {value!r}")
    try:
        endpoints = tuple(parse_endpoint(str(e), {str(k).upper(): str(v).upper() for k, v in protocol_map.items()})
                          for e in value.get("endpoints") or ())
    except ListenerConfigError as e:
        raise ZkDataError(f"{what}: {e}") from None
    if not endpoints and listener_name == "PLAINTEXT":
        host, port = value.get("host"), value.get("port")
    else:
        found = next((e for e in endpoints if e.listener_name == listener_name), None)
        host, port = (found.host, found.port) if found else (None, None)
    if not isinstance(host, str) or not host or not isinstance(port, int) or isinstance(port, bool):
        raise ZkDataError(f"{what} has no {listener_name} endpoint: {value!r}")
    rack = value.get("rack")
    return BrokerInfo(id=broker_id, host=host, port=port, epoch=epoch, rack=rack if isinstance(rack, str) else None,
                      endpoints=endpoints)


# ---------------------------------------------------------------------------------------------
# /brokers/topics/<topic>


def _random_uuid() -> str:
    """A random UUID as Kafka writes one (Uuid.randomUuid().toString()): URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def new_topic_id() -> str:
    """A random topic id (KIP-516)."""
    return _random_uuid()


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """The whole /brokers/topics/<topic> znode: each partition's replicas (RS), the replicas a reassignment in
    progress adds (AR) and removes (RR) per partition (KIP-455), and the topic id (KIP-516; None for a topic
    written without one)."""

    partitions: dict[int, list[int]]
    adding: dict[int, list[int]] = field(default_factory=dict)
    removing: dict[int, list[int]] = field(default_factory=dict)
    topic_id: str | None = None


def encode_topic_assignment(assignment: Mapping[int, Iterable[int]]) -> bytes:
    """A topic's replica assignment (version 2; no reassignment in progress, no topic id)."""
    return encode_topic_znode(TopicAssignment({p: list(r) for p, r in assignment.items()}))


def _int_lists(value: Mapping[int, Iterable[int]]) -> dict[str, list[int]]:
    return {str(p): list(replicas) for p, replicas in sorted(value.items())}


def encode_topic_znode(topic: TopicAssignment) -> bytes:
    """The topic znode: version 3 with its topic id, else version 2 (Kafka's TopicZNode)."""
    value: dict[str, Any] = {"version": 3 if topic.topic_id else 2}
    if topic.topic_id:
        value["topic_id"] = topic.topic_id
    value["partitions"] = _int_lists(topic.partitions)
    value["adding_replicas"] = _int_lists(topic.adding)
    value["removing_replicas"] = _int_lists(topic.removing)
    return _dump(value)


def decode_topic_znode(data: bytes) -> TopicAssignment:
    """The whole topic znode; versions 1 to 3 are read alike (missing parts are empty)."""
    value = _load(data, "topic assignment")
    partitions = _partition_lists(_field(value, "partitions", dict, "topic assignment"))
    adding = _partition_lists(value.get("adding_replicas") or {})
    removing = _partition_lists(value.get("removing_replicas") or {})
    topic_id = value.get("topic_id")
    if topic_id is not None and not isinstance(topic_id, str):
        raise ZkDataError(f"topic assignment: topic_id is not a string: {topic_id!r}")
    return TopicAssignment(partitions, adding, removing, topic_id or None)


def _partition_lists(value: Any) -> dict[int, list[int]]:
    if not isinstance(value, dict):
        raise ZkDataError(f"topic assignment: expected a map of partitions, got {value!r}")
    try:
        return {
            int(p): _int_list(replicas, f"partition {p}")
            for p, replicas in sorted(value.items(), key=lambda item: int(item[0]))
        }
    except ValueError as e:
        raise ZkDataError(f"topic assignment: {e}") from None


def decode_topic_assignment(data: bytes) -> dict[int, list[int]]:
    """partition -> replicas, in partition order. Versions 1 to 3 are read alike."""
    return decode_topic_znode(data).partitions


# ---------------------------------------------------------------------------------------------
# /brokers/topics/<topic>/partitions/<partition>/state


@dataclass(frozen=True, slots=True)
class LeaderIsrAndControllerEpoch:
    """A partition's leader, leader epoch and ISR, the epoch of the controller that wrote them, and the
    version of the state znode they were read from or written to."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int = 0


def encode_partition_state(state: LeaderIsrAndControllerEpoch) -> bytes:
    return _dump(
        {
            "controller_epoch": state.controller_epoch,
            "leader": state.leader,
            "version": 1,
            "leader_epoch": state.leader_epoch,
            "isr": list(state.isr),
        }
    )


def decode_partition_state(data: bytes, zk_version: int) -> LeaderIsrAndControllerEpoch:
    what = "partition state"
    value = _load(data, what)
    return LeaderIsrAndControllerEpoch(
        leader=_field(value, "leader", int, what),
        leader_epoch=_field(value, "leader_epoch", int, what),
        isr=tuple(_int_list(value.get("isr"), what)),
        controller_epoch=_field(value, "controller_epoch", int, what),
        zk_version=zk_version,
    )


# ---------------------------------------------------------------------------------------------
# /config/topics/<topic>


def encode_topic_config(config: Mapping[str, str]) -> bytes:
    return _dump({"version": 1, "config": dict(config)})


def decode_topic_config(data: bytes) -> dict[str, str]:
    config = _field(_load(data, "topic config"), "config", dict, "topic config")
    return {str(k): str(v) for k, v in config.items()}


# ---------------------------------------------------------------------------------------------
# /controller (ephemeral) and /controller_epoch


def encode_controller(broker_id: int, timestamp_ms: int) -> bytes:
    """Kafka's version 2 controller registration (kraftControllerEpoch -1: a ZooKeeper-mode controller)."""
    return _dump({"version": 2, "brokerid": broker_id, "timestamp": str(timestamp_ms), "kraftControllerEpoch": -1})


def decode_controller(data: bytes) -> int:
    """The controller's broker id."""
    return _field(_load(data, "controller"), "brokerid", int, "controller")


def encode_controller_epoch(epoch: int) -> bytes:
    """The epoch as plain decimal text (not JSON), as Kafka writes it."""
    return str(epoch).encode()


def decode_controller_epoch(data: bytes) -> int:
    try:
        return int(data.decode().strip())
    except (ValueError, UnicodeDecodeError):
        raise ZkDataError(f"controller epoch is not an integer: {data!r}") from None


# ---------------------------------------------------------------------------------------------
# /isr_change_notification/isr_change_<sequence>


def encode_isr_change(partitions: Iterable[tuple[str, int]]) -> bytes:
    return encode_partition_list(partitions)


def decode_isr_change(data: bytes) -> list[tuple[str, int]]:
    return _decode_partition_list(data, "ISR change notification")


# ---------------------------------------------------------------------------------------------
# /admin/reassign_partitions and /admin/preferred_replica_election (seed 001's schemas)


def encode_reassignment(partitions: Mapping[tuple[str, int], Iterable[int]]) -> bytes:
    """{"version":1,"partitions":[{"topic","partition","replicas"}]}: the target replicas of each partition."""
    return _dump({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": list(replicas)} for (t, p), replicas in sorted(partitions.items())
    ]})


def decode_reassignment(data: bytes) -> dict[tuple[str, int], list[int]]:
    """(topic, partition) -> target replicas; ZkDataError for anything else, including a partition given twice."""
    what = "partition reassignment"
    entries = _field(_load(data, what), "partitions", list, what)
    result: dict[tuple[str, int], list[int]] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ZkDataError(f"{what}: partitions must be objects: {entry!r}")
        tp = (_field(entry, "topic", str, what), _field(entry, "partition", int, what))
        if tp in result:
            raise ZkDataError(f"{what}: partition {tp[0]}-{tp[1]} is given more than once")
        result[tp] = _int_list(entry.get("replicas"), f"{what} of {tp[0]}-{tp[1]}")
    return result


def encode_partition_list(partitions: Iterable[tuple[str, int]]) -> bytes:
    """{"version":1,"partitions":[{"topic","partition"}]}: /admin/preferred_replica_election and the ISR change
    notifications."""
    return _dump({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]})


def decode_partition_list(data: bytes) -> list[tuple[str, int]]:
    return _decode_partition_list(data, "partition list")


def _decode_partition_list(data: bytes, what: str) -> list[tuple[str, int]]:
    entries = _field(_load(data, what), "partitions", list, what)
    if not all(isinstance(e, dict) for e in entries):
        raise ZkDataError(f"{what}: partitions must be objects: {entries!r}")
    return [(_field(e, "topic", str, what), _field(e, "partition", int, what)) for e in entries]


# ---------------------------------------------------------------------------------------------
# /admin/pending_replica_deletions/<broker id>


@dataclass(frozen=True, slots=True, order=True)
class PendingDeletion:
    """A replica a broker must delete when it comes back: the partition, and the topic id of the incarnation it
    belonged to (None for a topic without one)."""

    topic: str
    partition: int
    topic_id: str | None = None


def encode_pending_deletions(replicas: Iterable[PendingDeletion]) -> bytes:
    """Version 2: the partitions grouped by topic incarnation, a few bytes each (a broker down while topics of
    thousands of partitions are deleted gets one record per replica, in one znode under jute.maxbuffer)."""
    incarnations: dict[tuple[str, str | None], list[int]] = {}
    for r in sorted(set(replicas), key=lambda r: (r.topic, r.topic_id or "", r.partition)):
        incarnations.setdefault((r.topic, r.topic_id), []).append(r.partition)
    return _dump({"version": 2, "topics": [
        {"topic": topic, "topic_id": topic_id, "partitions": partitions}
        for (topic, topic_id), partitions in incarnations.items()
    ]})


def decode_pending_deletions(data: bytes) -> list[PendingDeletion]:
    """Versions 1 (one object per partition) and 2 (partitions grouped by topic incarnation), sorted."""
    what = "pending replica deletions"
    value = _load(data, what)
    version = value.get("version", 1)
    entries = _field(value, "topics" if version == 2 else "partitions", list, what)
    result = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise ZkDataError(f"{what}: entries must be objects: {entry!r}")
        topic_id = entry.get("topic_id")
        if topic_id is not None and not isinstance(topic_id, str):
            raise ZkDataError(f"{what}: topic_id is not a string: {entry!r}")
        topic = _field(entry, "topic", str, what)
        partitions = (_int_list(entry.get("partitions"), what) if version == 2
                      else [_field(entry, "partition", int, what)])
        result.extend(PendingDeletion(topic, partition, topic_id) for partition in partitions)
    return sorted(result, key=lambda r: (r.topic, r.partition, r.topic_id or ""))


# ---------------------------------------------------------------------------------------------
# /cluster/id


def new_cluster_id() -> str:
    """A random cluster id, as the first broker of a cluster creates it."""
    return _random_uuid()


def encode_cluster_id(cluster_id: str) -> bytes:
    """Kafka's ClusterIdZNode: {"version":"1","id":"..."} (the version a string, as Kafka writes it)."""
    return _dump({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    return _field(_load(data, "cluster id"), "id", str, "cluster id")


# ---------------------------------------------------------------------------------------------
# /latest_producer_id_block

PRODUCER_ID_BLOCK_SIZE = 1000  # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
_MAX_PRODUCER_ID = 2**63 - 1


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """A range of producer ids [first, last] handed to one broker."""

    broker_id: int
    first: int
    last: int


def encode_producer_id_block(block: ProducerIdBlock) -> bytes:
    """Kafka's ProducerIdBlockZNode JSON (block bounds as strings, as Kafka writes them)."""
    return _dump({"version": 1, "broker": block.broker_id, "block_start": str(block.first),
                  "block_end": str(block.last)})


def decode_producer_id_block(data: bytes) -> ProducerIdBlock | None:
    """The last block handed out; None for the empty znode of a cluster that never handed one out."""
    if not data:
        return None
    what = "producer id block"
    value = _load(data, what)
    try:
        return ProducerIdBlock(_field(value, "broker", int, what), int(value["block_start"]), int(value["block_end"]))
    except (KeyError, ValueError, TypeError):
        raise ZkDataError(f"{what}: block_start and block_end must be integers: {value!r}") from None


def next_producer_id_block(current: ProducerIdBlock | None, broker_id: int) -> ProducerIdBlock:
    """The block after `current` (the first block starts at 0), for `broker_id`."""
    first = 0 if current is None else current.last + 1
    if first > _MAX_PRODUCER_ID - PRODUCER_ID_BLOCK_SIZE:
        raise ZkDataError(f"producer ids are exhausted (the last block ends at {current.last if current else -1})")
    return ProducerIdBlock(broker_id, first, first + PRODUCER_ID_BLOCK_SIZE - 1)
