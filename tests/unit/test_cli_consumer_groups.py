"""`minikafka consumer-groups` and `consume --group` without a cluster: kafka-consumer-groups' rules for combining
options, its tables (columns, widths, blank lines) and notices, the --json forms, the reset-offsets scenarios and
their clamping, and whole runs against a stand-in admin client."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from client.cli import main
from client.cli.group_output import list_lines, members_lines, offset_rows, offsets_lines, reset_lines, state_lines
from client.group.descriptions import GroupDescription, GroupListing, MemberDescription
from client.group.offset_reset import ResetTo, parse_datetime, parse_topic_partitions, plan_reset
from client.group.offsets import OffsetAndMetadata
from protocol.apis.groups import Coordinator
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition as TP

COORDINATOR = Coordinator(key="g", node_id=2, host="127.0.0.2", port=9092)
MEMBER_A = MemberDescription("consumer-a-1", None, "client-a", "/127.0.0.1", (TP("orders", 0), TP("orders", 1)))
MEMBER_B = MemberDescription("consumer-b-2", None, "client-b", "/127.0.0.1", (TP("orders", 2),))
STABLE = GroupDescription("g", "Stable", "consumer", "range", (MEMBER_B, MEMBER_A), COORDINATOR)


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, ["consumer-groups", *args, "--bootstrap-server", "h:1"])


@pytest.mark.parametrize(("args", "message"), [
    ((), "exactly one action"),
    (("--list", "--describe", "--group", "g"), "exactly one action"),
    (("--describe",), "Option --describe takes one of these options: --all-groups, --group"),
    (("--describe", "--group", "g", "--members", "--state"), "at most one of these options"),
    (("--describe", "--group", "g", "--state", "stable"), "does not take a value for --state"),
    (("--list", "--group", "g"), "--group is not allowed with --list"),
    (("--list", "--state", "lively"), "Invalid state list 'lively'. Valid states are: PreparingRebalance"),
    (("--delete", "--group", "g", "--topic", "t"), "--topic is allowed only with"),
    (("--delete-offsets", "--group", "g"), "--delete-offsets takes the following options"),
    (("--reset-offsets", "--group", "g", "--topic", "t"), "exactly one of these options: --to-earliest"),
    (("--reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--to-latest"), "exactly one of"),
    (("--reset-offsets", "--group", "g", "--to-earliest"), "One of the reset scopes should be defined"),
    (("--reset-offsets", "--group", "g", "--all-topics", "--to-latest", "--dry-run", "--execute"),
     "only accepts one of --execute and --dry-run"),
    (("--reset-offsets", "--group", "g", "--all-topics", "--to-datetime", "yesterday"), "is not a datetime"),
    (("--describe", "--group", "g", "--all-groups"), "exclude each other"),
])
def test_option_errors_exit_2_with_kafkas_message(args, message):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr


@pytest.mark.parametrize(("args", "message"), [
    (("consume", "t", "--group", "g", "--partition", "0"), "--partition and --group exclude each other"),
    (("consume", "t", "--consumer-property", "group.id=g", "--partition", "0"), "exclude each other"),
])
def test_consume_with_a_group_refuses_a_partition(args, message):
    result = CliRunner().invoke(main, [*args, "--bootstrap-server", "h:1"])
    assert result.exit_code == 2 and message in result.stderr


def test_describe_offsets_is_kafkas_table():
    rows = offset_rows(STABLE, {TP("orders", 0): 5, TP("orders", 2): 7, TP("audit", 0): 1},
                       {TP("orders", 0): 9, TP("orders", 1): 3, TP("orders", 2): 7, TP("audit", 0): 4})
    assert offsets_lines(rows) == [
        "",
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     "
        "HOST            CLIENT-ID",
        "g               orders          0          5               9               4               consumer-a-1    "
        "/127.0.0.1      client-a",
        "g               orders          1          -               3               -               consumer-a-1    "
        "/127.0.0.1      client-a",
        "g               orders          2          7               7               0               consumer-b-2    "
        "/127.0.0.1      client-b",
        "g               audit           0          1               4               3               -               "
        "-               -",
    ]


def test_describe_members_and_state_are_kafkas_tables():
    assert members_lines(STABLE, verbose=True) == [
        "",
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     ASSIGNMENT",
        "g               consumer-b-2    /127.0.0.1      client-b        1               (2)",
        "g               consumer-a-1    /127.0.0.1      client-a        2               (0,1)",
    ]
    static = GroupDescription("g", "Stable", "consumer", "range", (
        MemberDescription("m", "instance-1", "c", "/h", ()),), COORDINATOR)
    assert members_lines(static, verbose=False)[1:] == [
        "GROUP           CONSUMER-ID     GROUP-INSTANCE-ID HOST            CLIENT-ID       #PARTITIONS     ",
        "g               m               instance-1        /h              c               0               ",
    ]
    assert state_lines(STABLE) == [
        "",
        "GROUP                     COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE           #MEMBERS",
        "g                         127.0.0.2:9092  (2)       range                Stable          2",
    ]


def test_list_and_reset_are_kafkas_tables():
    listings = [GroupListing("g", "consumer", "Stable", 1), GroupListing("other", "consumer", "Empty", 2)]
    assert list_lines(listings, with_state=False) == ["g", "other"]
    assert list_lines(listings, with_state=True) == [
        "GROUP                     STATE               ",
        "g                         Stable              ",
        "other                     Empty               ",
    ]
    assert reset_lines({"g": {TP("t", 1): 4, TP("t", 0): 3}}) == [
        "",
        "GROUP                          TOPIC                          PARTITION  NEW-OFFSET     ",
        "g                              t                              0          3              ",
        "g                              t                              1          4              ",
    ]
    assert reset_lines({}) == [""]


def test_reset_plans_clamp_into_the_log_and_fall_back_to_the_end():
    tps = [TP("t", 0), TP("t", 1)]
    logs = {"log_starts": {TP("t", 0): 2, TP("t", 1): 0}, "log_ends": {TP("t", 0): 10, TP("t", 1): 5}}
    committed = {TP("t", 0): 8, TP("t", 1): 1}
    earliest = plan_reset(tps, ResetTo.EARLIEST, None, committed=committed, **logs)
    assert earliest.offsets == {TP("t", 0): 2, TP("t", 1): 0}
    latest = plan_reset(tps, ResetTo.LATEST, None, committed=committed, **logs)
    assert latest.offsets == {TP("t", 0): 10, TP("t", 1): 5}
    plan = plan_reset(tps, ResetTo.OFFSET, 7, committed=committed, **logs)
    assert plan.offsets == {TP("t", 0): 7, TP("t", 1): 5}
    assert plan.warnings == ["New offset (7) is higher than latest offset for topic partition t-1. Value will be "
                             "set to 5"]
    plan = plan_reset(tps, ResetTo.SHIFT_BY, -7, committed=committed, **logs)
    assert plan.offsets == {TP("t", 0): 2, TP("t", 1): 0}
    with pytest.raises(ValueError, match="no current committed offset"):
        plan_reset(tps, ResetTo.SHIFT_BY, 1, committed={}, **logs)
    plan = plan_reset(tps, ResetTo.DATETIME, 0, committed={}, by_time={TP("t", 0): 4, TP("t", 1): -1}, **logs)
    assert plan.offsets == {TP("t", 0): 4, TP("t", 1): 5}
    assert plan.warnings == ["Partition 1 from topic t is empty. Falling back to latest known offset."]


def test_datetimes_and_topic_arguments_read_as_kafkas():
    assert parse_datetime("1970-01-01T00:00:01.000") == 1000
    assert parse_datetime("1970-01-01T01:00:01.000+01:00") == 1000
    assert parse_datetime("1970-01-01T00:00:01.500Z") == 1500
    with pytest.raises(ValueError):
        parse_datetime("1970-01-01T00:00:01")
    assert parse_topic_partitions("t", {"t": 2}) == [TP("t", 0), TP("t", 1)]
    assert parse_topic_partitions("t:3,1", {}) == [TP("t", 3), TP("t", 1)]
    with pytest.raises(ValueError, match="invalid partition"):
        parse_topic_partitions("t:x", {})


class FakeAdmin:
    """The admin client the command uses, answering from a script."""

    altered: dict[str, dict[TP, Any]] = {}

    def __init__(self, bootstrap: str, **options: object) -> None:
        FakeAdmin.altered = {}

    async def __aenter__(self) -> FakeAdmin:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None

    async def list_groups(self, states: Any = (), **options: object) -> list[GroupListing]:
        return [GroupListing("g", "consumer", "Stable", 1), GroupListing("connect", "connect", "Stable", 1),
                GroupListing("idle", "consumer", "Empty", 1)]

    async def describe_groups(self, group_ids: list[str], **options: object) -> dict[str, GroupDescription]:
        known = {"g": STABLE, "idle": GroupDescription("idle", "Empty", "consumer", "", (), COORDINATOR)}
        return {g: known.get(g, GroupDescription(g, "Dead", "", "", (), COORDINATOR)) for g in group_ids}

    async def list_group_offsets(self, group_id: str, **options: object) -> dict[TP, OffsetAndMetadata]:
        return {TP("orders", 0): OffsetAndMetadata(5)} if group_id == "g" else {TP("orders", 1): OffsetAndMetadata(2)}

    async def list_offsets(self, partitions: Any, timestamp: int, **options: object) -> dict[TP, int]:
        return {tp: 0 if timestamp == -2 else 10 for tp in partitions}

    async def describe_topics(self, names: list[str]) -> list[Any]:
        raise AssertionError("not used")

    async def alter_group_offsets(self, group_id: str, offsets: dict[TP, Any], **options: object) -> None:
        FakeAdmin.altered[group_id] = dict(offsets)

    async def delete_groups(self, group_ids: list[str], **options: object) -> dict[str, ErrorCode]:
        return {g: ErrorCode.NONE if g == "idle" else ErrorCode.NON_EMPTY_GROUP for g in group_ids}


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> type[FakeAdmin]:
    monkeypatch.setattr("client.cli.consumer_groups.Admin", FakeAdmin)
    return FakeAdmin


def test_list_shows_consumer_groups_only(admin):
    result = invoke("--list")
    assert (result.exit_code, result.stdout) == (0, "g\nidle\n")
    assert json.loads(invoke("--list", "--json").stdout) == [{"group": "g", "state": "Stable"},
                                                             {"group": "idle", "state": "Empty"}]


def test_describe_prints_each_groups_table_and_a_missing_group_is_an_error(admin):
    result = invoke("--describe", "--group", "g", "--group", "idle", "--group", "nope")
    assert result.exit_code == 1
    assert "Error: Consumer group 'nope' does not exist." in result.stderr
    assert "Consumer group 'idle' has no active members." in result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[:4] for line in lines if line.startswith(("g ", "idle "))] == [
        ["g", "orders", "0", "5"], ["g", "orders", "1", "-"], ["g", "orders", "2", "-"], ["idle", "orders", "1", "2"]]
    described = json.loads(invoke("--describe", "--group", "g", "--json").stdout)
    assert described[0] == {"group": "g", "topic": "orders", "partition": 0, "current_offset": 5,
                            "log_end_offset": 10, "lag": 5, "consumer_id": "consumer-a-1", "host": "/127.0.0.1",
                            "client_id": "client-a"}
    assert described[1]["current_offset"] is None and described[1]["lag"] is None


def test_reset_offsets_plans_executes_only_with_execute_and_refuses_an_active_group(admin):
    result = invoke("--reset-offsets", "--group", "idle", "--all-topics", "--to-earliest", "--dry-run")
    assert result.exit_code == 0 and admin.altered == {}
    assert result.stdout.splitlines()[-1].split() == ["idle", "orders", "1", "0"]
    result = invoke("--reset-offsets", "--group", "idle", "--topic", "orders:1,3", "--to-offset", "12", "--execute",
                    "--json")
    assert json.loads(result.stdout) == [
        {"group": "idle", "topic": "orders", "partition": 1, "new_offset": 10},
        {"group": "idle", "topic": "orders", "partition": 3, "new_offset": 10}]
    assert admin.altered == {"idle": {TP("orders", 1): 10, TP("orders", 3): 10}}
    assert "higher than latest offset" in result.stderr
    result = invoke("--reset-offsets", "--group", "g", "--all-topics", "--to-latest", "--execute")
    assert result.exit_code == 1 and admin.altered == {}
    assert ("Assignments can only be reset if the group 'g' is inactive, but the current state is Stable."
            in result.stderr)


def test_delete_reports_each_group(admin):
    result = invoke("--delete", "--group", "idle")
    assert (result.exit_code, result.stdout) == (0, "Deletion of requested consumer groups ('idle') was successful.\n")
    result = invoke("--delete", "--group", "idle", "--group", "g")
    assert result.exit_code == 1
    assert "* Group 'g' could not be deleted due to: NON_EMPTY_GROUP" in result.stderr
    assert json.loads(invoke("--delete", "--all-groups", "--json").stdout) == [
        {"group": "g", "error": "NON_EMPTY_GROUP"}, {"group": "idle", "error": None}]
