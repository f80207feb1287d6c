"""Kafka's AclAuthorizer rules, pure: which ACLs apply to a resource, and whether they let a principal on a host do
an operation.

- A super user (`super.users`, semicolon separated) may do anything.
- The ACLs of a resource are those of its literal name, of the literal wildcard "*" and of every prefixed pattern
  its name starts with. With none, `allow.everyone.if.no.acl.found` decides.
- A DENY entry matching the principal (or User:*), the host (or *) and the operation (or ALL) refuses: deny wins.
- Otherwise an ALLOW entry matching so allows; DESCRIBE is implied by READ, WRITE, DELETE and ALTER, and
  DESCRIBE_CONFIGS by ALTER_CONFIGS.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from protocol.acls import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

#: The values of authorizer.class.name that enable ACLs (Kafka's ZooKeeper-mode authorizers).
ACL_AUTHORIZER_CLASS_NAMES = frozenset({"kafka.security.authorizer.AclAuthorizer",
                                        "kafka.security.auth.SimpleAclAuthorizer"})

#: The operations whose ALLOW also allows the key (Kafka's AclAuthorizer.authorizeAction).
IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                                      AclOperation.DELETE, AclOperation.ALTER}),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}),
}


def parse_super_users(text: str) -> frozenset[str]:
    """`super.users`: principals separated by semicolons (``User:alice;User:bob``)."""
    return frozenset(filter(None, (part.strip() for part in text.split(";"))))


@dataclass(frozen=True, slots=True)
class AuthorizerConfig:
    """The authorizer's settings."""

    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False


@dataclass(frozen=True, slots=True)
class Decision:
    """An authorization's outcome and why (for the audit log)."""

    allowed: bool
    reason: str


class AclCache:
    """The ACLs of every resource pattern, as read from ZooKeeper."""

    def __init__(self) -> None:
        self._acls: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        self._prefixed: dict[ResourceType, set[ResourcePattern]] = {}

    def set(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        """Replace the entries of a pattern (none: forget it)."""
        entries = frozenset(entries)
        prefixed = self._prefixed.setdefault(pattern.resource_type, set())
        if entries:
            self._acls[pattern] = entries
            if pattern.pattern_type == PatternType.PREFIXED:
                prefixed.add(pattern)
        else:
            self._acls.pop(pattern, None)
            prefixed.discard(pattern)

    def get(self, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
        return self._acls.get(pattern, frozenset())

    def clear(self) -> None:
        self._acls.clear()
        self._prefixed.clear()

    def bindings(self) -> Iterator[AclBinding]:
        """Every binding, in pattern order."""
        for pattern in sorted(self._acls):
            for entry in sorted(self._acls[pattern]):
                yield AclBinding(pattern, entry)

    def matching(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        """The entries applying to the resource: its literal name's, the wildcard's, its prefixes'."""
        entries = [*self.get(ResourcePattern(resource_type, name)),
                   *self.get(ResourcePattern(resource_type, WILDCARD_RESOURCE))]
        for pattern in self._prefixed.get(resource_type, ()):
            if name.startswith(pattern.name):
                entries.extend(self._acls[pattern])
        return entries

    def of_type(self, resource_type: ResourceType) -> list[AccessControlEntry]:
        """Every entry on any resource of a type."""
        return [e for p, entries in self._acls.items() if p.resource_type == resource_type for e in entries]


def _applies(entry: AccessControlEntry, principal: str, host: str, operations: frozenset[AclOperation],
             permission: AclPermissionType) -> bool:
    return (entry.permission_type == permission
            and entry.principal in (principal, WILDCARD_PRINCIPAL)
            and (entry.operation in operations or entry.operation == AclOperation.ALL)
            and entry.host in (host, WILDCARD_HOST))


def decide(entries: list[AccessControlEntry], config: AuthorizerConfig, principal: str, host: str,
           operation: AclOperation) -> Decision:
    """Whether `principal` from `host` may do `operation` on a resource whose applying entries are `entries`."""
    if principal in config.super_users:
        return Decision(True, "super user")
    if not entries:
        return Decision(config.allow_everyone_if_no_acl_found, "no ACL found")
    if any(_applies(e, principal, host, frozenset({operation}), AclPermissionType.DENY) for e in entries):
        return Decision(False, "a DENY ACL matched")
    allowing = IMPLIED_BY.get(operation, frozenset({operation}))
    if any(_applies(e, principal, host, allowing, AclPermissionType.ALLOW) for e in entries):
        return Decision(True, "an ALLOW ACL matched")
    return Decision(False, "no ALLOW ACL matched")


def authorize(cache: AclCache, config: AuthorizerConfig, principal: str, host: str, operation: AclOperation,
              resource_type: ResourceType, name: str) -> Decision:
    """Kafka's AclAuthorizer.authorize for one literal resource."""
    return decide(cache.matching(resource_type, name), config, principal, host, operation)


def authorize_any(cache: AclCache, config: AuthorizerConfig, principal: str, host: str, operation: AclOperation,
                  resource_type: ResourceType) -> bool:
    """Whether `operation` is allowed on some resource of a type (Kafka's authorizeByResourceType, which lets a
    producer allowed to WRITE some topic be idempotent): a super user, no ACL of the type at all with
    allow.everyone.if.no.acl.found, or an ALLOW entry on some pattern not refused by a DENY on the wildcard."""
    if principal in config.super_users:
        return True
    entries = cache.of_type(resource_type)
    if not entries:
        return config.allow_everyone_if_no_acl_found
    wildcard = cache.get(ResourcePattern(resource_type, WILDCARD_RESOURCE))
    if any(_applies(e, principal, host, frozenset({operation}), AclPermissionType.DENY) for e in wildcard):
        return False
    return any(_applies(e, principal, host, frozenset({operation}), AclPermissionType.ALLOW) for e in entries)
