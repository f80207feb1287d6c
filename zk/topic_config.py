"""Topic and broker configs in ZooKeeper and their change notifications, as Kafka's admin tooling writes them.

A topic's overrides live in /config/topics/<topic> (``{"version":1,"config":{...}}``), a broker's dynamic configs
in /config/brokers/<id> and the cluster-wide defaults of every broker in /config/brokers/<default> (same format).
Whoever changes them also creates a sequential /config/changes/config_change_<seq> znode
(``{"version":2,"entity_path":"topics/<t>"}`` or ``"brokers/<id>"``, Kafka's AdminZkClient.changeTopicConfig and
changeBrokerConfig); brokers and the controller watch /config/changes and re-read the named entity's config. The
active controller reacts to unclean.leader.election.enable turning on by electing the topic's offline partitions
(Kafka's TopicUncleanLeaderElectionEnable event). Notifications are never deleted by their readers at once (every
broker needs to see them); they are purged once older than CHANGE_EXPIRATION_MS, as Kafka's
ZkNodeChangeNotificationListener does.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping

from protocol.errors import ErrorCode, KafkaError
from zk import znodes
from zk.client import BadVersionError, CreateOp, NodeExistsError, NoNodeError, Op, SetOp, ZkClient

log = logging.getLogger(__name__)

CONFIG_CHANGE_PREFIX = "config_change_"
CHANGE_EXPIRATION_MS = 15 * 60 * 1000  # Kafka's ZkNodeChangeNotificationListener changeExpirationMs
TOPIC_ENTITY = "topics"
BROKER_ENTITY = "brokers"
#: The entity name of the configs every broker has unless its own config says otherwise (Kafka's ZooKeeper mode).
DEFAULT_BROKER = "<default>"

_ALTER_ATTEMPTS = 10


def config_change_sequence_path() -> str:
    """The prefix to create a sequential config change notification under."""
    return f"{znodes.CONFIG_CHANGES_PATH}/{CONFIG_CHANGE_PREFIX}"


def config_change_sequence(name: str) -> int | None:
    """The sequence number of a notification znode's name, None for other names."""
    if not name.startswith(CONFIG_CHANGE_PREFIX):
        return None
    digits = name[len(CONFIG_CHANGE_PREFIX):]
    return int(digits) if digits.isdigit() else None


def encode_config_change(entity_type: str, entity_name: str) -> bytes:
    """Kafka's version 2 notification: the changed entity's path under /config."""
    return json.dumps({"version": 2, "entity_path": f"{entity_type}/{entity_name}"}, separators=(",", ":")).encode()


def decode_config_change(data: bytes) -> tuple[str, str]:
    """(entity type, entity name) of a notification; reads version 1 ({"entity_type","entity_name"}) too."""
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise znodes.ZkDataError(f"config change notification is not JSON: {e}") from None
    if not isinstance(value, dict):
        raise znodes.ZkDataError(f"config change notification is not a JSON object: {data!r}")
    if value.get("version") == 1:
        entity_type, entity_name = value.get("entity_type"), value.get("entity_name")
    else:
        path = value.get("entity_path")
        entity_type, _, entity_name = path.partition("/") if isinstance(path, str) else (None, "", None)
    if not isinstance(entity_type, str) or not isinstance(entity_name, str) or not entity_type or not entity_name:
        raise znodes.ZkDataError(f"config change notification names no entity: {value!r}")
    return entity_type, entity_name


def entity_config_path(entity_type: str, entity_name: str) -> str:
    """Where an entity's configs live: /config/topics/<topic>, /config/brokers/<id> or /config/brokers/<default>."""
    return f"/config/{entity_type}/{entity_name}"


async def new_config_changes(zk: ZkClient, after: int) -> tuple[int, list[tuple[str, str]]]:
    """The (entity type, entity name) of each /config/changes notification after sequence number `after`, in
    order, and the last sequence number read; a notification that names no entity is logged and skipped."""
    numbered = [(config_change_sequence(name), name) for name in await zk.get_children(znodes.CONFIG_CHANGES_PATH)]
    fresh = sorted((seq, name) for seq, name in numbered if seq is not None and seq > after)
    found = await zk.get_many([f"{znodes.CONFIG_CHANGES_PATH}/{name}" for _, name in fresh])
    entities = []
    for (_seq, name), got in zip(fresh, found, strict=True):
        if got is None:
            continue
        try:
            entities.append(decode_config_change(got[0]))
        except znodes.ZkDataError as e:
            log.error("the config change notification %s is ignored: %s", name, e)
    return (fresh[-1][0] if fresh else after), entities


async def read_entity_config(zk: ZkClient, entity_type: str, entity_name: str) -> dict[str, str]:
    """The entity's configs ({} if it has none)."""
    got = await zk.get_or_none(entity_config_path(entity_type, entity_name))
    return znodes.decode_topic_config(got[0]) if got is not None else {}


async def read_topic_config(zk: ZkClient, topic: str) -> dict[str, str]:
    """The topic's overrides in /config/topics/<topic> ({} if it has none)."""
    return await read_entity_config(zk, TOPIC_ENTITY, topic)


async def alter_topic_config(
    zk: ZkClient,
    topic: str,
    set_configs: Mapping[str, str] | None = None,
    delete_configs: Iterable[str] = (),
    *,
    validate: Callable[[dict[str, str]], object] | None = None,
) -> dict[str, str]:
    """Set and remove overrides of an existing topic and notify brokers and the controller; returns the new
    overrides.

    The config znode is rewritten conditionally on the version read (a concurrent change makes this retry on
    the new contents) in one transaction with the /config/changes/config_change_ notification. `validate`, if
    given, gets the merged overrides and raises ValueError to refuse them. Raises KafkaError
    UNKNOWN_TOPIC_OR_PARTITION for a missing topic, INVALID_CONFIG for refused overrides."""
    if await zk.exists(znodes.topic_path(topic)) is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{topic}' does not exist.")

    def check(merged: dict[str, str]) -> None:
        if validate is not None:
            try:
                validate(merged)
            except ValueError as e:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid config for topic '{topic}': {e}") from None

    return await alter_entity_config(zk, TOPIC_ENTITY, topic, set_configs, delete_configs, check=check)


async def alter_entity_config(zk: ZkClient, entity_type: str, entity_name: str,
                              set_configs: Mapping[str, str] | None = None, delete_configs: Iterable[str] = (), *,
                              check: Callable[[dict[str, str]], None] | None = None) -> dict[str, str]:
    """Set and remove configs of an entity and notify brokers and the controller; returns its new configs.
    `check`, if given, gets the merged configs and raises KafkaError to refuse them; a concurrent change makes
    this retry on the new contents (the write is conditional on the version read)."""
    await zk.ensure_path(znodes.CONFIG_CHANGES_PATH)
    path = entity_config_path(entity_type, entity_name)
    removed = set(delete_configs)
    for _ in range(_ALTER_ATTEMPTS):
        got = await zk.get_or_none(path)
        current = znodes.decode_topic_config(got[0]) if got is not None else {}
        merged = {k: v for k, v in current.items() if k not in removed}
        merged.update({str(k): str(v) for k, v in (set_configs or {}).items()})
        if check is not None:
            check(dict(merged))
        data = znodes.encode_topic_config(merged)
        if got is None:
            await zk.ensure_path(path.rpartition("/")[0])
        config_op: Op = SetOp(path, data, got[1].version) if got is not None else CreateOp(path, data)
        notification = CreateOp(config_change_sequence_path(), encode_config_change(entity_type, entity_name),
                                sequence=True)
        try:
            await zk.multi([config_op, notification])
        except (BadVersionError, NodeExistsError):
            continue  # changed meanwhile: merge into the newer contents
        shown = merged if entity_type == TOPIC_ENTITY else sorted(merged)  # users' and brokers' may be secrets
        log.info("Config of %s/%s is now %s", entity_type, entity_name, shown)
        return merged
    raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR,
                     f"the config of {entity_type}/{entity_name} kept changing concurrently")


async def purge_expired_changes(zk: ZkClient, root: str, names: list[str]) -> None:
    """Delete the notifications `names` under `root` older than CHANGE_EXPIRATION_MS (every reader has seen them
    by then)."""
    now_ms = time.time() * 1000
    paths = [f"{root}/{name}" for name in names]
    for path, got in zip(paths, await zk.get_many(paths), strict=True):
        if got is not None and now_ms - got[1].ctime_ms > CHANGE_EXPIRATION_MS:
            with contextlib.suppress(NoNodeError):
                await zk.delete(path)
