"""Kafka's AclAuthorizer rules: which ACLs apply to a resource, deny over allow, implied operations, hosts,
wildcards, super users and allow.everyone.if.no.acl.found."""

from __future__ import annotations

import pytest

from broker.authorizer.rules import AclCache, AuthorizerConfig, authorize, authorize_any, parse_super_users
from protocol.acls import AccessControlEntry, AclOperation, AclPermissionType, PatternType, ResourcePattern
from protocol.acls import ResourceType as R

ALICE, BOB = "User:alice", "User:bob"
HOST = "127.0.0.1"
Op = AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
CONFIG = AuthorizerConfig()


def entry(principal: str = ALICE, operation: AclOperation = Op.READ, permission: AclPermissionType = ALLOW,
          host: str = "*") -> AccessControlEntry:
    return AccessControlEntry(principal, host, operation, permission)


def cache(*acls: tuple[ResourcePattern, AccessControlEntry]) -> AclCache:
    built = AclCache()
    for pattern, e in acls:
        built.set(pattern, built.get(pattern) | {e})
    return built


def allowed(acls: AclCache, operation: AclOperation, name: str = "orders", principal: str = ALICE,
            resource_type: R = R.TOPIC, config: AuthorizerConfig = CONFIG, host: str = HOST) -> bool:
    return authorize(acls, config, principal, host, operation, resource_type, name).allowed


TOPIC = ResourcePattern(R.TOPIC, "orders")


def test_no_acl_refuses_unless_allow_everyone_if_no_acl_found() -> None:
    assert not allowed(AclCache(), Op.READ)
    assert allowed(AclCache(), Op.READ, config=AuthorizerConfig(allow_everyone_if_no_acl_found=True))


def test_an_acl_on_the_resource_decides_even_with_allow_everyone() -> None:
    acls = cache((TOPIC, entry(BOB)))
    assert not allowed(acls, Op.READ, config=AuthorizerConfig(allow_everyone_if_no_acl_found=True))
    assert allowed(acls, Op.READ, principal=BOB)


def test_allow_matches_principal_and_operation_only() -> None:
    acls = cache((TOPIC, entry()))
    assert allowed(acls, Op.READ)
    assert not allowed(acls, Op.WRITE)
    assert not allowed(acls, Op.READ, principal=BOB)
    assert not allowed(acls, Op.READ, name="other")


def test_deny_wins_over_allow() -> None:
    acls = cache((TOPIC, entry(operation=Op.ALL)), (TOPIC, entry(operation=Op.WRITE, permission=DENY)))
    assert allowed(acls, Op.READ)
    assert not allowed(acls, Op.WRITE)


def test_deny_on_the_wildcard_resource_wins_over_a_literal_allow() -> None:
    acls = cache((TOPIC, entry()), (ResourcePattern(R.TOPIC, "*"), entry(permission=DENY)))
    assert not allowed(acls, Op.READ)


def test_all_operation_allows_everything() -> None:
    acls = cache((TOPIC, entry(operation=Op.ALL)))
    assert all(allowed(acls, op) for op in (Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE))


@pytest.mark.parametrize("granted", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE])
def test_describe_is_implied_by_read_write_delete_alter(granted: AclOperation) -> None:
    assert allowed(cache((TOPIC, entry(operation=granted))), Op.DESCRIBE)


def test_describe_configs_is_implied_by_alter_configs_and_not_the_reverse() -> None:
    assert allowed(cache((TOPIC, entry(operation=Op.ALTER_CONFIGS))), Op.DESCRIBE_CONFIGS)
    assert not allowed(cache((TOPIC, entry(operation=Op.DESCRIBE_CONFIGS))), Op.ALTER_CONFIGS)
    assert not allowed(cache((TOPIC, entry(operation=Op.DESCRIBE))), Op.READ)


def test_an_implied_describe_is_still_refused_by_a_deny_describe() -> None:
    acls = cache((TOPIC, entry(operation=Op.READ)), (TOPIC, entry(operation=Op.DESCRIBE, permission=DENY)))
    assert not allowed(acls, Op.DESCRIBE)
    assert allowed(acls, Op.READ)


def test_host_must_match_unless_wildcard() -> None:
    acls = cache((TOPIC, entry(host="10.0.0.1")))
    assert not allowed(acls, Op.READ)
    assert allowed(acls, Op.READ, host="10.0.0.1")
    denied_there = cache((TOPIC, entry()), (TOPIC, entry(permission=DENY, host="10.0.0.1")))
    assert allowed(denied_there, Op.READ)
    assert not allowed(denied_there, Op.READ, host="10.0.0.1")


def test_wildcard_principal_matches_every_user() -> None:
    acls = cache((TOPIC, entry("User:*")))
    assert allowed(acls, Op.READ) and allowed(acls, Op.READ, principal=BOB)


def test_wildcard_resource_applies_to_every_name_of_its_type_only() -> None:
    acls = cache((ResourcePattern(R.TOPIC, "*"), entry()))
    assert allowed(acls, Op.READ, name="anything")
    assert not allowed(acls, Op.READ, name="anything", resource_type=R.GROUP)


def test_prefixed_pattern_applies_to_names_starting_with_it() -> None:
    acls = cache((ResourcePattern(R.TOPIC, "app-", PatternType.PREFIXED), entry()))
    assert allowed(acls, Op.READ, name="app-orders")
    assert allowed(acls, Op.READ, name="app-")
    assert not allowed(acls, Op.READ, name="ap")
    assert not allowed(acls, Op.READ, name="other-app-orders")


def test_literal_pattern_does_not_act_as_prefix() -> None:
    assert not allowed(cache((ResourcePattern(R.TOPIC, "app-"), entry())), Op.READ, name="app-orders")


def test_super_users_may_do_anything_even_when_denied() -> None:
    config = AuthorizerConfig(super_users=parse_super_users(" User:admin ; User:broker;"))
    assert config.super_users == {"User:admin", "User:broker"}
    acls = cache((TOPIC, entry("User:admin", Op.ALL, DENY)))
    assert allowed(acls, Op.WRITE, principal="User:admin", config=config)
    assert allowed(AclCache(), Op.CLUSTER_ACTION, "kafka-cluster", "User:broker", R.CLUSTER, config)
    assert not allowed(AclCache(), Op.CLUSTER_ACTION, "kafka-cluster", ALICE, R.CLUSTER, config)


def test_forgetting_a_pattern_removes_its_acls() -> None:
    acls = cache((ResourcePattern(R.TOPIC, "app-", PatternType.PREFIXED), entry()))
    acls.set(ResourcePattern(R.TOPIC, "app-", PatternType.PREFIXED), ())
    assert not allowed(acls, Op.READ, name="app-orders")
    assert list(acls.bindings()) == []


def test_write_on_some_topic_allows_idempotent_producers() -> None:
    assert authorize_any(cache((TOPIC, entry(operation=Op.WRITE))), CONFIG, ALICE, HOST, Op.WRITE, R.TOPIC)
    assert not authorize_any(cache((TOPIC, entry(operation=Op.READ))), CONFIG, ALICE, HOST, Op.WRITE, R.TOPIC)
    denied = cache((TOPIC, entry(operation=Op.WRITE)), (ResourcePattern(R.TOPIC, "*"), entry(operation=Op.WRITE,
                                                                                               permission=DENY)))
    assert not authorize_any(denied, CONFIG, ALICE, HOST, Op.WRITE, R.TOPIC)
    assert not authorize_any(AclCache(), CONFIG, ALICE, HOST, Op.WRITE, R.TOPIC)
