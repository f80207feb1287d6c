"""The broker's authorizer (Kafka's AclAuthorizer in ZooKeeper mode): every ACL cached from ZooKeeper and kept
current through the change notifications, each decision logged to the authorizer log, and the ACL changes of
CreateAcls and DeleteAcls written to ZooKeeper.

The authorizer log is Kafka's `kafka.authorizer.logger`: denials at INFO, allowed requests at DEBUG, written to
`<first log dir>/kafka-authorizer.log` (beside state-change.log) and not to the broker's own log.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from pathlib import Path

from broker.authorizer.rules import AclCache, AuthorizerConfig, authorize, authorize_any
from broker.network import Request
from protocol.acls import (
    AclBinding,
    AclBindingFilter,
    AclFormatError,
    AclOperation,
    ResourcePattern,
    ResourceType,
    decode_change,
)
from protocol.apis import APIS
from zk import acls as store
from zk.client import Watch, ZkClient
from zk.topic_config import purge_expired_changes

log = logging.getLogger(__name__)
audit = logging.getLogger("kafka.authorizer.logger")

AUTHORIZER_LOG = "kafka-authorizer.log"


def install_authorizer_log(log_dir: Path) -> logging.Handler:
    """Send the authorizer's decisions to ``<log_dir>/kafka-authorizer.log`` only (Kafka's log4j keeps them out of
    server.log too)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log_dir / AUTHORIZER_LOG, encoding="utf-8")
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(levelname)s %(message)s (%(name)s)"))
    audit.addHandler(handler)
    audit.setLevel(logging.INFO)
    audit.propagate = False
    return handler


def host_of(request: Request) -> str:
    """The client's address as ACLs name hosts (no leading '/')."""
    return request.client_host.lstrip("/")


class AclAuthorizer:
    """Decides requests by the ACLs in ZooKeeper, cached and refreshed by notifications."""

    def __init__(self, zk: ZkClient, config: AuthorizerConfig) -> None:
        self._zk = zk
        self.config = config
        self.cache = AclCache()
        self._last_change: dict[str, int] = {}
        self._locks = {root: asyncio.Lock() for root in store.CHANGE_PATHS}
        self._watches: list[Watch] = []
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Load every ACL, then follow the notifications written after that."""
        await store.ensure_acl_paths(self._zk)
        for root in store.CHANGE_PATHS:
            sequences = [store.change_sequence(name) for name in await self._zk.get_children(root)]
            self._last_change[root] = max((s for s in sequences if s is not None), default=-1)
        for pattern, entries in (await store.read_all(self._zk)).items():
            self.cache.set(pattern, entries)
        for root in store.CHANGE_PATHS:
            self._watches.append(await self._zk.watch_children(root, lambda names, r=root: self._changed(r, names)))
        log.info("authorizer started with %d ACLs", sum(1 for _ in self.cache.bindings()))

    async def close(self) -> None:
        for watch in self._watches:
            watch.cancel()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _changed(self, root: str, names: list[str]) -> None:
        if any((s := store.change_sequence(n)) is not None and s > self._last_change[root] for n in names):
            task = asyncio.get_running_loop().create_task(self._process_changes(root))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _process_changes(self, root: str) -> None:
        """Re-read the patterns named by the notifications not yet processed; purge expired notifications."""
        async with self._locks[root]:
            try:
                names = await self._zk.get_children(root)
                fresh = sorted((seq, name) for name in names
                               if (seq := store.change_sequence(name)) is not None and seq > self._last_change[root])
                found = await self._zk.get_many([f"{root}/{name}" for _, name in fresh])
                patterns: dict[ResourcePattern, None] = {}
                for (seq, name), got in zip(fresh, found, strict=True):
                    self._last_change[root] = seq
                    if got is None:
                        continue
                    try:
                        patterns[decode_change(got[0], store.literal_changes(root))] = None
                    except AclFormatError as e:
                        log.error("ignoring the ACL change notification %s/%s: %s", root, name, e)
                for pattern in patterns:
                    self.cache.set(pattern, await store.read_resource(self._zk, pattern))
                    log.info("ACLs of %s refreshed after a change notification", pattern)
                await purge_expired_changes(self._zk, root, [name for _, name in fresh])
            except Exception:
                log.exception("processing the ACL change notifications under %s failed", root)

    # -- decisions -------------------------------------------------------------------------

    def authorize(self, request: Request, operation: AclOperation, resource_type: ResourceType, name: str,
                  *, log_if_denied: bool = True) -> bool:
        """Whether the request's principal, from its host, may do `operation` on the resource; logged."""
        decision = authorize(self.cache, self.config, request.principal, host_of(request), operation,
                             resource_type, name)
        level = logging.INFO if not decision.allowed and log_if_denied else logging.DEBUG
        if audit.isEnabledFor(level):
            api = APIS.get(request.header.api_key)
            audit.log(level, "Principal = %s is %s Operation = %s from host = %s on resource = %s:LITERAL:%s for "
                      "request = %s with resourceRefCount = 1 (%s)", request.principal,
                      "Allowed" if decision.allowed else "Denied", operation.pascal, host_of(request),
                      resource_type.pascal, name, api.name if api else request.header.api_key, decision.reason)
        return decision.allowed

    def authorize_any(self, request: Request, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Whether `operation` is allowed on some resource of the type (Kafka's authorizeByResourceType)."""
        return authorize_any(self.cache, self.config, request.principal, host_of(request), operation, resource_type)

    # -- ACL changes -----------------------------------------------------------------------

    def describe(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The bindings the filter matches."""
        return [binding for binding in self.cache.bindings() if acl_filter.matches(binding)]

    async def create(self, bindings: Iterable[AclBinding]) -> None:
        """Add the bindings (checked by the caller), one ZooKeeper update per pattern."""
        self._cache_written(await store.change_bindings(self._zk, bindings, store.add_entries))

    async def delete(self, bindings: Iterable[AclBinding]) -> None:
        """Remove the bindings, one ZooKeeper update per pattern."""
        self._cache_written(await store.change_bindings(self._zk, bindings, store.remove_entries))

    def _cache_written(self, written: dict[ResourcePattern, store.Entries]) -> None:
        for pattern, entries in written.items():
            self.cache.set(pattern, entries)
