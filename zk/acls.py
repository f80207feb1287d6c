"""ACLs in ZooKeeper as Kafka's AclAuthorizer keeps them (protocol/acls.py has the formats).

A resource pattern's entries live in one znode (/kafka-acl/Topic/orders, /kafka-acl-extended/prefixed/Group/app-);
whoever changes them rewrites that znode conditionally on the version read (deleting it when no entry is left) in
one transaction with a sequential change notification (/kafka-acl-changes/acl_changes_ for literal patterns,
/kafka-acl-extended-changes/acl_changes_ for the others), which every broker reads to refresh its cache.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from protocol.acls import (
    ACL_CHANGE_PREFIX,
    ACL_CHANGES_PATH,
    EXTENDED_ACL_CHANGES_PATH,
    AccessControlEntry,
    AclBinding,
    AclFormatError,
    ResourcePattern,
    ResourceType,
    change_path,
    decode_acls,
    encode_acls,
    encode_change,
    resource_path,
    resource_type_path,
    store_roots,
)
from zk.client import BadVersionError, CreateOp, DeleteOp, NodeExistsError, NoNodeError, Op, SetOp, ZkClient

log = logging.getLogger(__name__)

CHANGE_PATHS = (ACL_CHANGES_PATH, EXTENDED_ACL_CHANGES_PATH)
_UPDATE_ATTEMPTS = 20

Entries = frozenset[AccessControlEntry]


async def ensure_acl_paths(zk: ZkClient) -> None:
    """The stores' roots and the notification paths (Kafka creates them at the authorizer's start)."""
    for root, _pattern_type in store_roots():
        await zk.ensure_path(root)
    for path in CHANGE_PATHS:
        await zk.ensure_path(path)


async def read_resource(zk: ZkClient, pattern: ResourcePattern) -> Entries:
    """The entries of one pattern (none if its znode is missing or malformed)."""
    got = await zk.get_or_none(resource_path(pattern))
    return _decode(pattern, got[0] if got is not None else None)


async def read_all(zk: ZkClient) -> dict[ResourcePattern, Entries]:
    """Every pattern's entries."""
    acls: dict[ResourcePattern, Entries] = {}
    for root, pattern_type in store_roots():
        if await zk.exists(root) is None:
            continue
        for type_name in await zk.get_children(root):
            try:
                resource_type = ResourceType.parse(type_name)
            except AclFormatError:
                log.warning("ignoring ACLs of an unknown resource type under %s/%s", root, type_name)
                continue
            parent = resource_type_path(resource_type, pattern_type)
            names = await zk.get_children(parent)
            found = await zk.get_many([f"{parent}/{name}" for name in names])
            for name, got in zip(names, found, strict=True):
                pattern = ResourcePattern(resource_type, name, pattern_type)
                entries = _decode(pattern, got[0] if got is not None else None)
                if entries:
                    acls[pattern] = entries
    return acls


def _decode(pattern: ResourcePattern, data: bytes | None) -> Entries:
    try:
        return decode_acls(data)
    except AclFormatError as e:
        log.error("ignoring the ACLs of %s: %s", pattern, e)
        return frozenset()


async def update_resource(zk: ZkClient, pattern: ResourcePattern, change: Callable[[Entries], Entries]) -> Entries:
    """Replace a pattern's entries by `change(current)`, with a change notification, retried on the newer entries
    when someone else wrote them meanwhile; returns the entries written (nothing is written when they are the
    same)."""
    path = resource_path(pattern)
    await zk.ensure_path(resource_type_path(pattern.resource_type, pattern.pattern_type))
    await zk.ensure_path(change_path(pattern.pattern_type).rpartition("/")[0])
    for _ in range(_UPDATE_ATTEMPTS):
        got = await zk.get_or_none(path)
        current = _decode(pattern, got[0] if got is not None else None)
        wanted = change(current)
        if wanted == current and (got is not None or not wanted):
            return current
        op: Op
        if got is None:
            op = CreateOp(path, encode_acls(wanted))
        elif wanted:
            op = SetOp(path, encode_acls(wanted), got[1].version)
        else:
            op = DeleteOp(path, got[1].version)
        try:
            await zk.multi([op, CreateOp(change_path(pattern.pattern_type), encode_change(pattern), sequence=True)])
        except (BadVersionError, NodeExistsError, NoNodeError):
            continue
        log.info("ACLs of %s are now %s", pattern, ", ".join(map(str, sorted(wanted))) or "none")
        return wanted
    raise RuntimeError(f"the ACLs of {pattern} kept changing concurrently")


def change_sequence(name: str) -> int | None:
    """The sequence number of a notification's name, None for other names."""
    digits = name[len(ACL_CHANGE_PREFIX):] if name.startswith(ACL_CHANGE_PREFIX) else ""
    return int(digits) if digits.isdigit() else None




def literal_changes(root: str) -> bool:
    """Whether notifications under `root` name literal patterns (plain text) rather than others (JSON)."""
    return root == ACL_CHANGES_PATH


async def change_bindings(zk: ZkClient, bindings: Iterable[AclBinding], combine: Callable[[Entries, Entries], Entries]
                          ) -> dict[ResourcePattern, Entries]:
    """Each pattern's entries replaced by `combine(current, its entries among the bindings)` (one update a
    pattern); the entries written."""
    by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for binding in bindings:
        by_pattern.setdefault(binding.pattern, set()).add(binding.entry)
    written = {}
    for pattern, entries in by_pattern.items():
        changed = frozenset(entries)
        written[pattern] = await update_resource(zk, pattern, lambda current, e=changed: combine(current, e))
    return written


def add_entries(current: Entries, entries: Entries) -> Entries:
    return current | entries


def remove_entries(current: Entries, entries: Entries) -> Entries:
    return current - entries
