"""ACLs as Kafka writes them: resource patterns, access control entries, the filters DescribeAcls and DeleteAcls
take, and their formats in ZooKeeper (Kafka's ZkAclStore, AclEntry and ZkAclChangeStore).

Codes are Kafka's (org.apache.kafka.common.acl and .resource); names in ZooKeeper are Kafka's SecurityUtils names
("Topic", "TransactionalId", "DescribeConfigs", "Allow"); names in kafka-acls' output are the enums' (TOPIC, ...).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Self

WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"
ACL_PATH = "/kafka-acl"
EXTENDED_ACL_PATH = "/kafka-acl-extended"
ACL_CHANGES_PATH = "/kafka-acl-changes"
EXTENDED_ACL_CHANGES_PATH = "/kafka-acl-extended-changes"
ACL_CHANGE_PREFIX = "acl_changes_"


class AclFormatError(ValueError):
    """An ACL or filter that is malformed or names an unknown type."""


class _Named(enum.IntEnum):
    """An enum with Kafka's code, its enum name (TOPIC) and its Pascal-case name (Topic)."""

    @property
    def pascal(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def parse(cls, text: str) -> Self:
        """By enum name or Pascal-case name, any case, '-' or '_' between words (Kafka's fromString)."""
        key = text.strip().replace("-", "").replace("_", "").upper()
        for member in cls:
            if member.name.replace("_", "") == key:
                return member
        raise AclFormatError(f"unknown {cls.__name__} {text!r}")


class ResourceType(_Named):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_Named):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_Named):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_Named):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


CONCRETE_RESOURCE_TYPES = frozenset(ResourceType) - {ResourceType.UNKNOWN, ResourceType.ANY}
CONCRETE_PATTERN_TYPES = frozenset({PatternType.LITERAL, PatternType.PREFIXED})


@dataclass(frozen=True, slots=True, order=True)
class ResourcePattern:
    """A resource, or a prefix of resources' names."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __str__(self) -> str:
        return (f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
                f"patternType={self.pattern_type.name})")


@dataclass(frozen=True, slots=True, order=True)
class AccessControlEntry:
    """Who (principal, host) may or may not (permission) do what (operation)."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return (f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
                f"permissionType={self.permission_type.name})")


@dataclass(frozen=True, slots=True)
class AclBinding:
    """An entry bound to a resource pattern."""

    pattern: ResourcePattern
    entry: AccessControlEntry


def check_binding(binding: AclBinding) -> None:
    """AclFormatError for a binding that cannot be stored (Kafka's CreateAcls checks)."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type not in CONCRETE_RESOURCE_TYPES:
        raise AclFormatError(f"Invalid resource type {pattern.resource_type.name}")
    if pattern.pattern_type not in CONCRETE_PATTERN_TYPES:
        raise AclFormatError(f"Invalid pattern type {pattern.pattern_type.name}")
    if not pattern.name:
        raise AclFormatError("Invalid empty resource name")
    if "/" in pattern.name or pattern.name in (".", "..") or "\x00" in pattern.name:
        raise AclFormatError(f"Invalid resource name {pattern.name!r}: it names a znode in ZooKeeper")
    if pattern.resource_type == ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        raise AclFormatError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if entry.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
        raise AclFormatError(f"Invalid operation {entry.operation.name}")
    if entry.permission_type in (AclPermissionType.ANY, AclPermissionType.UNKNOWN):
        raise AclFormatError(f"Invalid permission type {entry.permission_type.name}")
    principal_type, colon, name = entry.principal.partition(":")
    if not colon or not principal_type or not name:
        raise AclFormatError(f"Invalid principal {entry.principal!r}: expected <type>:<name>, e.g. User:alice")
    if not entry.host:
        raise AclFormatError("Invalid empty host")


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    """Which resource patterns a filter takes (Kafka's ResourcePatternFilter): ANY takes every pattern type, MATCH
    the patterns that match the name (the literal name, the wildcard and the prefixes of the name)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, pattern.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        return self.name.startswith(pattern.name)


@dataclass(frozen=True, slots=True)
class AccessControlEntryFilter:
    """Which entries a filter takes; None and ANY take every value."""

    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, entry: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == entry.principal)
                and (self.host is None or self.host == entry.host)
                and self.operation in (AclOperation.ANY, entry.operation)
                and self.permission_type in (AclPermissionType.ANY, entry.permission_type))


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """A filter of bindings: DescribeAcls' and DeleteAcls'."""

    pattern: ResourcePatternFilter = ResourcePatternFilter()
    entry: AccessControlEntryFilter = AccessControlEntryFilter()

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern.matches(binding.pattern) and self.entry.matches(binding.entry)


def check_filter(acl_filter: AclBindingFilter) -> None:
    """AclFormatError for a filter naming an unknown type (Kafka answers INVALID_REQUEST)."""
    for value in (acl_filter.pattern.resource_type, acl_filter.pattern.pattern_type, acl_filter.entry.operation,
                  acl_filter.entry.permission_type):
        if value == 0:
            raise AclFormatError(f"Invalid filter: unknown {type(value).__name__}")


# ------------------------------------------------------------------------------------------------ ZooKeeper


def resource_path(pattern: ResourcePattern) -> str:
    """/kafka-acl/<Type>/<name> for a literal pattern, /kafka-acl-extended/<pattern type>/<Type>/<name> otherwise."""
    return f"{resource_type_path(pattern.resource_type, pattern.pattern_type)}/{pattern.name}"


def resource_type_path(resource_type: ResourceType, pattern_type: PatternType) -> str:
    """The parent of a resource type's znodes in the store of a pattern type."""
    if pattern_type == PatternType.LITERAL:
        return f"{ACL_PATH}/{resource_type.pascal}"
    return f"{EXTENDED_ACL_PATH}/{pattern_type.name.lower()}/{resource_type.pascal}"


def store_roots() -> list[tuple[str, PatternType]]:
    """Each store's root and the pattern type it holds."""
    return [(ACL_PATH, PatternType.LITERAL), (f"{EXTENDED_ACL_PATH}/prefixed", PatternType.PREFIXED)]


def encode_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    """A resource znode's data (Kafka's AclEntry.toJsonCompatibleMap)."""
    return json.dumps({"version": 1, "acls": [
        {"principal": e.principal, "permissionType": e.permission_type.pascal, "operation": e.operation.pascal,
         "host": e.host} for e in sorted(entries)]}, separators=(",", ":")).encode()


def decode_acls(data: bytes | None) -> frozenset[AccessControlEntry]:
    """The entries of a resource znode (an empty znode holds none); AclFormatError if malformed."""
    if not data:
        return frozenset()
    try:
        value = json.loads(data)
        return frozenset(AccessControlEntry(
            principal=str(acl["principal"]), host=str(acl["host"]),
            operation=AclOperation.parse(str(acl["operation"])),
            permission_type=AclPermissionType.parse(str(acl["permissionType"])))
            for acl in value["acls"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise AclFormatError(f"malformed ACL znode: {e}") from None


def change_path(pattern_type: PatternType) -> str:
    """The prefix a change notification of a pattern type is created under (sequential)."""
    root = ACL_CHANGES_PATH if pattern_type == PatternType.LITERAL else EXTENDED_ACL_CHANGES_PATH
    return f"{root}/{ACL_CHANGE_PREFIX}"


def encode_change(pattern: ResourcePattern) -> bytes:
    """A change notification: "TOPIC:name" for a literal pattern (Kafka's LiteralAclChangeStore), JSON otherwise
    (ExtendedAclChangeStore)."""
    if pattern.pattern_type == PatternType.LITERAL:
        return f"{pattern.resource_type.name}:{pattern.name}".encode()
    return json.dumps({"version": 1, "resourceType": pattern.resource_type.name, "name": pattern.name,
                       "patternType": pattern.pattern_type.name}, separators=(",", ":")).encode()


def decode_change(data: bytes, literal: bool) -> ResourcePattern:
    """The resource pattern a notification names; AclFormatError if malformed."""
    try:
        if literal:
            resource_type, colon, name = data.decode().partition(":")
            if not colon:
                raise AclFormatError(f"expected ResourceType:ResourceName, got {data!r}")
            return ResourcePattern(ResourceType.parse(resource_type), name, PatternType.LITERAL)
        value = json.loads(data)
        return ResourcePattern(ResourceType.parse(str(value["resourceType"])), str(value["name"]),
                               PatternType.parse(str(value["patternType"])))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise AclFormatError(f"malformed ACL change notification: {e}") from None
