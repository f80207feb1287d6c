"""`minikafka acls`: the entries its flags make (kafka-acls' defaults) and its output (kafka-acls')."""

from __future__ import annotations

from click.testing import CliRunner

from client.cli import main
from client.cli.acls import bindings_lines, entries, resources
from protocol.acls import AccessControlEntry, AclOperation, AclPermissionType, ResourcePattern, ResourceType

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def test_entries_default_to_every_host_and_all_operations() -> None:
    assert entries(["User:a"], [], [], [], []) == [AccessControlEntry("User:a", "*", AclOperation.ALL, ALLOW)]
    assert entries(["User:a"], ["User:b"], ["10.0.0.1"], [], [AclOperation.READ, AclOperation.WRITE]) == [
        AccessControlEntry("User:a", "10.0.0.1", AclOperation.READ, ALLOW),
        AccessControlEntry("User:a", "10.0.0.1", AclOperation.WRITE, ALLOW),
        AccessControlEntry("User:b", "*", AclOperation.READ, DENY),
        AccessControlEntry("User:b", "*", AclOperation.WRITE, DENY)]


def test_resources_name_the_cluster_kafka_cluster() -> None:
    assert resources(["t"], ["g"], ["tx"], True) == [(ResourceType.TOPIC, "t"), (ResourceType.GROUP, "g"),
                                                     (ResourceType.TRANSACTIONAL_ID, "tx"),
                                                     (ResourceType.CLUSTER, "kafka-cluster")]


def test_output_is_kafka_acls() -> None:
    entry = AccessControlEntry("User:a", "*", AclOperation.DESCRIBE_CONFIGS, ALLOW)
    assert bindings_lines("Current ACLs for resource", ResourcePattern(ResourceType.TOPIC, "t"), [entry, entry]) == [
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`: ",
        " \t(principal=User:a, host=*, operation=DESCRIBE_CONFIGS, permissionType=ALLOW) ",
        "\t(principal=User:a, host=*, operation=DESCRIBE_CONFIGS, permissionType=ALLOW) ",
        ""]


def test_bad_flags_are_refused_before_any_connection() -> None:
    runner = CliRunner()
    assert "one of --add, --remove or --list" in runner.invoke(main, ["acls", "--topic", "t"]).output
    assert "Fly" in runner.invoke(main, ["acls", "--add", "--operation", "Fly"]).output
    refused = runner.invoke(main, ["acls", "--add", "--topic", "t", "--allow-principal", "User:a",
                                   "--resource-pattern-type", "match"])
    assert refused.exit_code != 0 and "--add takes literal or prefixed" in refused.output
