"""ACLs as Kafka stores them in ZooKeeper (paths, the resource znode's JSON, change notifications) and the filters of
DescribeAcls and DeleteAcls (ANY, MATCH, null fields)."""

from __future__ import annotations

import json

import pytest

from protocol.acls import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclFormatError,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    change_path,
    check_binding,
    decode_acls,
    decode_change,
    encode_acls,
    encode_change,
    resource_path,
)

READ_ALICE = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)


def test_resource_paths_are_kafkas() -> None:
    assert resource_path(ResourcePattern(ResourceType.TOPIC, "orders")) == "/kafka-acl/Topic/orders"
    assert resource_path(ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx")) == "/kafka-acl/TransactionalId/tx"
    assert (resource_path(ResourcePattern(ResourceType.GROUP, "app-", PatternType.PREFIXED))
            == "/kafka-acl-extended/prefixed/Group/app-")


def test_resource_znode_json_is_kafkas_and_reads_back() -> None:
    entries = {READ_ALICE, AccessControlEntry("User:*", "10.0.0.1", AclOperation.DESCRIBE_CONFIGS,
                                              AclPermissionType.DENY)}
    data = encode_acls(entries)
    assert json.loads(data) == {"version": 1, "acls": [
        {"principal": "User:*", "permissionType": "Deny", "operation": "DescribeConfigs", "host": "10.0.0.1"},
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}]}
    assert decode_acls(data) == entries
    assert decode_acls(b"") == frozenset()


def test_a_malformed_resource_znode_is_refused() -> None:
    for data in (b"{", b'{"version":1}', b'{"acls":[{"principal":"User:a","host":"*","operation":"Fly",'
                                         b'"permissionType":"Allow"}]}'):
        with pytest.raises(AclFormatError):
            decode_acls(data)


def test_change_notifications_are_kafkas() -> None:
    literal = ResourcePattern(ResourceType.TOPIC, "a:b")
    assert change_path(PatternType.LITERAL) == "/kafka-acl-changes/acl_changes_"
    assert encode_change(literal) == b"TOPIC:a:b"
    assert decode_change(b"Topic:a:b", literal=True) == literal
    prefixed = ResourcePattern(ResourceType.GROUP, "app-", PatternType.PREFIXED)
    assert change_path(PatternType.PREFIXED) == "/kafka-acl-extended-changes/acl_changes_"
    assert json.loads(encode_change(prefixed)) == {"version": 1, "resourceType": "GROUP", "name": "app-",
                                                   "patternType": "PREFIXED"}
    assert decode_change(encode_change(prefixed), literal=False) == prefixed
    with pytest.raises(AclFormatError):
        decode_change(b"no separator", literal=True)


def binding(name: str, pattern_type: PatternType = PatternType.LITERAL) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType.TOPIC, name, pattern_type), READ_ALICE)


def test_filter_any_matches_every_pattern_type_by_exact_name() -> None:
    f = AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "app-x", PatternType.ANY))
    assert f.matches(binding("app-x")) and f.matches(binding("app-x", PatternType.PREFIXED))
    assert not f.matches(binding("app-", PatternType.PREFIXED))


def test_filter_match_takes_every_pattern_that_applies_to_the_name() -> None:
    f = AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "app-x", PatternType.MATCH))
    assert f.matches(binding("app-x")) and f.matches(binding("*")) and f.matches(binding("app-", PatternType.PREFIXED))
    assert not f.matches(binding("app-")) and not f.matches(binding("app-y"))


def test_filter_by_entry_fields() -> None:
    assert AclBindingFilter(entry=AccessControlEntryFilter(principal="User:alice")).matches(binding("t"))
    assert not AclBindingFilter(entry=AccessControlEntryFilter(principal="User:bob")).matches(binding("t"))
    assert not AclBindingFilter(entry=AccessControlEntryFilter(operation=AclOperation.WRITE)).matches(binding("t"))
    assert not AclBindingFilter(ResourcePatternFilter(ResourceType.GROUP)).matches(binding("t"))


@pytest.mark.parametrize("bad", [
    AclBinding(ResourcePattern(ResourceType.CLUSTER, "other"), READ_ALICE),
    AclBinding(ResourcePattern(ResourceType.TOPIC, "t", PatternType.MATCH), READ_ALICE),
    AclBinding(ResourcePattern(ResourceType.ANY, "t"), READ_ALICE),
    AclBinding(ResourcePattern(ResourceType.GROUP, "a/b"), READ_ALICE),
    AclBinding(ResourcePattern(ResourceType.GROUP, ".."), READ_ALICE),
    AclBinding(ResourcePattern(ResourceType.TOPIC, "t"),
               AccessControlEntry("alice", "*", AclOperation.READ, AclPermissionType.ALLOW)),
    AclBinding(ResourcePattern(ResourceType.TOPIC, "t"),
               AccessControlEntry("User:alice", "*", AclOperation.ANY, AclPermissionType.ALLOW)),
])
def test_bindings_that_cannot_be_stored_are_refused(bad: AclBinding) -> None:
    with pytest.raises(AclFormatError):
        check_binding(bad)
