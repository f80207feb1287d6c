"""The command line without a cluster: --help on every command, argument errors, how the bootstrap servers are
found, and the pure formatting of describe and consume output."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from client.admin import ElectionResult
from client.cli import describe_json, describe_lines, main, record_json, split_key
from client.cli.delete_records import parse_offsets, result_lines
from client.cli.leader_election import election_lines
from client.cli.log_dirs import log_dirs_json
from client.cli.topic import select_partitions
from client.cluster import BrokerProcess, ClusterState, ZooKeeperProcess, save_cluster
from client.consumer import ConsumerRecord
from client.metadata import PartitionInfo
from protocol.apis.log_dirs import LogDirPartition, LogDirResult, LogDirTopic
from protocol.apis.replicas import DescribedReplica, FollowerState
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix]
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found += _commands(command, (*prefix, name))
        else:
            found.append((*prefix, name))
    return found


ALL_COMMANDS = _commands(main)


def invoke(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input)


def test_every_expected_command_exists():
    expected = {
        ("broker",), ("dump-log",), ("produce",), ("consume",), ("consumer-groups",),
        ("cluster", "up"), ("cluster", "status"), ("cluster", "down"), ("cluster", "kill"), ("cluster", "start"),
        ("topic", "create"), ("topic", "list"), ("topic", "describe"), ("topic", "delete"), ("topic", "alter"),
        ("leader-election",), ("reassign-partitions",), ("replica-verification",), ("state-change-log", "merge"),
        ("delete-records",), ("log-dirs",),
    }
    assert expected <= set(ALL_COMMANDS)


@pytest.mark.parametrize("command", ALL_COMMANDS, ids=lambda c: " ".join(c) or "minikafka")
def test_help_on_every_command(command):
    result = invoke(*command, "--help")
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


@pytest.mark.parametrize(
    "command",
    [("topic", "create", "t", "--partitions", "1", "--replication-factor", "1"), ("topic", "list"),
     ("topic", "describe"), ("topic", "delete"), ("topic", "alter"), ("produce", "t"), ("consume", "t"),
     ("leader-election",), ("replica-verification",), ("consumer-groups", "--list")],
    ids=lambda c: " ".join(c[:2]),
)
def test_client_commands_take_bootstrap_server_and_dir(command):
    result = invoke(*command[:2] if command[0] == "topic" else command[:1], "--help")
    assert "--bootstrap-server" in result.output
    assert "--dir" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("topic", "create", "t", "--replication-factor", "1"), "Missing option '--partitions'"),
        (("topic", "create", "t", "--partitions", "0", "--replication-factor", "1"), "0 is not in the range x>=1"),
        (("topic", "create", "t", "--partitions", "1", "--replication-factor", "1", "--config", "novalue"),
         "expected KEY=VALUE"),
        (("produce", "t", "--acks", "2"), "'2' is not one of"),
        (("produce", "t", "--key-separator", ""), "must not be empty"),
        (("consume", "t", "--from-beginning", "--offset", "3", "--partition", "0"), "exclude each other"),
        (("consume", "t", "--offset", "3"), "--offset needs --partition"),
        (("consume", "t", "--max-messages", "0"), "0 is not in the range x>=1"),
        (("cluster", "kill", "1", "--signal", "HUP"), "'HUP' is not one of"),
        (("cluster", "kill", "one"), "'one' is not a valid integer"),
        (("cluster", "up", "--brokers", "0"), "0 is not in the range x>=1"),
        (("cluster", "up", "--config", "broken"), "expected KEY=VALUE"),
        (("broker",), "Missing option '--config'"),
        (("broker", "--config", "/nonexistent/server.properties"), "does not exist"),
        (("topic", "list", "--bootstrap-server", "localhost"), "expected HOST:PORT"),
        (("topic", "list", "--bootstrap-server", "localhost:99999"), "expected HOST:PORT"),
        (("topic", "alter", "t"), "give --partitions, or at least one --config"),
        (("topic", "alter", "t", "--partitions", "0"), "0 is not in the range x>=1"),
        (("leader-election", "--all-topic-partitions"), "Missing option '--election-type'"),
        (("leader-election", "--election-type", "best", "--all-topic-partitions"), "'best' is not one of"),
        (("leader-election", "--election-type", "preferred"), "give exactly one of --topic with --partition"),
        (("leader-election", "--election-type", "preferred", "--topic", "t"), "--topic and --partition go together"),
        (("leader-election", "--election-type", "preferred", "--topic", "t", "--partition", "0",
          "--all-topic-partitions"), "give exactly one of"),
        (("reassign-partitions",), "give one of --generate, --execute, --verify"),
        (("reassign-partitions", "--generate", "--broker-list", "1,2"), "--generate needs --topics-to-move"),
        (("reassign-partitions", "--verify"), "--verify needs --reassignment-json-file"),
        (("reassign-partitions", "--verify", "--reassignment-json-file", "plan.json", "--bootstrap-server",
          "127.0.0.1:9092", "--zookeeper", "127.0.0.1:2181"), "give --bootstrap-server or --zookeeper, not both"),
        (("replica-verification", "--topic-white-list", "(", "--once"), "is an invalid regex"),
    ],
)
def test_argument_errors_exit_2_with_a_clear_message(args, message):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_a_client_command_without_a_cluster_says_how_to_get_one(tmp_path):
    result = invoke("topic", "list", "--dir", str(tmp_path / "nothing"))
    assert result.exit_code == 1
    assert "no --bootstrap-server given" in result.output
    assert "minikafka cluster up" in result.output


def test_cluster_commands_without_a_cluster_fail_cleanly(tmp_path):
    for args in (("cluster", "status"), ("cluster", "down"), ("cluster", "kill", "1"), ("cluster", "start", "1")):
        result = invoke(*args, "--dir", str(tmp_path))
        assert result.exit_code == 1, (args, result.output)
        assert "no cluster in" in result.output
        assert "Traceback" not in result.output


def test_cluster_kill_of_a_broker_that_is_not_running(tmp_path):
    state = ClusterState(
        tmp_path,
        ZooKeeperProcess(port=2181, pid=2**22 + 1, data_dir=str(tmp_path / "zookeeper")),
        (BrokerProcess(1, "127.0.0.1", 9092, 2**22 + 2, str(tmp_path / "broker-1/server.properties"), "d"),),
    )
    save_cluster(state)
    result = invoke("cluster", "kill", "1", "--dir", str(tmp_path), "--signal", "kill")
    assert result.exit_code == 1
    assert "broker 1 is not running" in result.output
    result = invoke("cluster", "kill", "7", "--dir", str(tmp_path))
    assert result.exit_code == 1
    assert "no broker 7" in result.output


def test_a_client_command_uses_the_cluster_in_dir(tmp_path, monkeypatch):
    state = ClusterState(
        tmp_path,
        ZooKeeperProcess(port=2181, pid=1, data_dir="zk"),
        tuple(BrokerProcess(i, "127.0.0.1", 9000 + i, 1, "c", "d") for i in (1, 2)),
    )
    save_cluster(state)
    bootstraps = []

    class FakeAdmin:
        def __init__(self, bootstrap: str, **options: object) -> None:
            bootstraps.append(bootstrap)

        async def __aenter__(self) -> FakeAdmin:
            return self

        async def __aexit__(self, *exc_info: object) -> None:
            pass

        async def list_topics(self) -> list[str]:
            return ["a", "b"]

    monkeypatch.setattr("client.cli.topic.Admin", FakeAdmin)
    result = invoke("topic", "list", "--dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert result.output == "a\nb\n"
    result = invoke("topic", "list", "--json", "--bootstrap-server", "h:1")
    assert json.loads(result.output) == ["a", "b"]
    assert bootstraps == ["127.0.0.1:9001,127.0.0.1:9002", "h:1"]


def test_split_key():
    assert split_key(b"k:v:w", b":", 1) == (b"k", b"v:w")
    assert split_key(b"plain", None, 1) == (None, b"plain")
    with pytest.raises(click.ClickException, match="line 4 has no key separator"):
        split_key(b"plain", b":", 4)


PARTITIONS = [
    PartitionInfo("t", 0, 1, 0, (1, 2), (1, 2), ()),
    PartitionInfo("t", 1, -1, 3, (2, 1), (2,), (1,)),
]


def _replica(topic: str, partition: int, role: str, leo: int, followers=()) -> DescribedReplica:
    return DescribedReplica(
        topic=topic, partition=partition, role=role, leader=1, leader_epoch=0, log_end_offset=leo,
        high_watermark=4, log_start_offset=0, isr=[1, 2], followers=list(followers),
    )


STATES = {
    1: [_replica("t", 0, "leader", 5, [FollowerState(broker_id=2, log_end_offset=4, last_caught_up_time_ms=7,
                                                     last_fetch_time_ms=8)])],
    2: [_replica("t", 0, "follower", 4)],
}


def test_describe_text_looks_like_kafka_topics():
    lines = describe_lines(PARTITIONS, None)
    assert lines == [
        "Topic: t\tPartitionCount: 2\tReplicationFactor: 2",
        "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\tLeaderEpoch: 0",
        "\tTopic: t\tPartition: 1\tLeader: none\tReplicas: 2,1\tIsr: 2\tLeaderEpoch: 3",
    ]


def test_describe_text_with_replicas():
    lines = describe_lines(PARTITIONS[:1], STATES)
    assert lines[2:] == [
        "\t\tReplica: 1\tRole: leader\tLEO: 5\tHW: 4\tLogStartOffset: 0\tRemoteLEO: 2=4",
        "\t\tReplica: 2\tRole: follower\tLEO: 4\tHW: 4\tLogStartOffset: 0",
    ]


def test_describe_json():
    assert describe_json(PARTITIONS[:1], None) == [
        {"topic": "t", "partition": 0, "leader": 1, "leader_epoch": 0, "replicas": [1, 2], "isr": [1, 2]}
    ]
    [entry] = describe_json(PARTITIONS[:1], STATES)
    leader, follower = entry["replica_states"]
    assert leader == {
        "broker": 1, "role": "leader", "leader_epoch": 0, "leo": 5, "hw": 4, "log_start_offset": 0,
        "followers": [{"broker": 2, "remote_leo": 4, "last_caught_up_time_ms": 7}],
    }
    assert follower == {"broker": 2, "role": "follower", "leader_epoch": 0, "leo": 4, "hw": 4, "log_start_offset": 0}
    json.dumps(entry)


def test_record_json_fields():
    record = ConsumerRecord("t", 2, 9, None, "é".encode() + b"\xff", 123, (), 4)
    assert json.loads(record_json(record)) == {
        "partition": 2, "offset": 9, "key": None, "value": "é\\xff", "timestamp": 123, "leader_epoch": 4
    }


def test_describe_filters_select_as_kafka_topics_does():
    partitions = [
        PartitionInfo("t", 0, 1, 0, (1, 2, 3), (1, 2, 3), ()),   # healthy
        PartitionInfo("t", 1, 2, 0, (2, 3, 1), (2, 3), ()),      # under-replicated, at min ISR 2
        PartitionInfo("t", 2, 3, 0, (3, 1, 2), (3,), ()),        # under-replicated and under min ISR
        PartitionInfo("t", 3, -1, 0, (1, 2, 3), (1,), (1,)),     # unavailable (and so under min ISR)
    ]
    states = {leader: [DescribedReplica(topic="t", partition=partition, role="leader", leader=leader, leader_epoch=0,
                                    log_end_offset=0, high_watermark=0, log_start_offset=0, isr=[], followers=[],
                                    min_insync_replicas=2)]
              for partition, leader in ((0, 1), (1, 2), (2, 3))}

    def chosen(**filters: bool) -> list[int]:
        flags = {"under_replicated": False, "unavailable": False, "under_min_isr": False, **filters}
        return [p.partition for p in select_partitions(partitions, states, **flags)]

    assert chosen(under_replicated=True) == [1, 2, 3]
    assert chosen(unavailable=True) == [3]
    assert chosen(under_min_isr=True) == [2, 3]
    assert chosen(unavailable=True, under_min_isr=True) == [2, 3]
    assert describe_lines(partitions[3:], None, headers=False) == [
        "\tTopic: t\tPartition: 3\tLeader: none\tReplicas: 1,2,3\tIsr: 1\tLeaderEpoch: 0"]


def test_election_outcomes_read_elected_already_leader_or_not_eligible_and_why():
    assert election_lines([
        ElectionResult("t", 1, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "preferred replica 2 is not live"),
        ElectionResult("t", 0, ErrorCode.NONE, "preferred replica 1 elected"),
        ElectionResult("t", 2, ErrorCode.ELECTION_NOT_NEEDED, "preferred replica 3 is the leader already"),
    ]) == [
        "t-0: elected: preferred replica 1 elected",
        "t-1: not eligible: preferred replica 2 is not live",
        "t-2: already leader: preferred replica 3 is the leader already",
    ]


def test_leader_election_json_file_is_checked(tmp_path):
    path = tmp_path / "election.json"
    for content, message in [("not json", "cannot read"), ('{"partitions": []}', "must hold"),
                             ('{"partitions": [{"topic": "t"}]}', "not a topic and partition"),
                             ('{"partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 0}]}',
                              "given twice")]:
        path.write_text(content)
        result = invoke("leader-election", "--election-type", "preferred", "--path-to-json-file", str(path),
                        "--bootstrap-server", "h:1")
        assert result.exit_code == 2 and message in result.output, result.output


def test_reassignment_files_are_checked_before_anything_is_asked(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}')
    result = invoke("reassign-partitions", "--execute", "--reassignment-json-file", str(path), "--zookeeper",
                    "127.0.0.1:1")
    assert result.exit_code == 1 and "duplicate entries" in result.output, result.output
    result = invoke("reassign-partitions", "--generate", "--topics-to-move-json-file", str(path), "--broker-list",
                    "1,x", "--zookeeper", "127.0.0.1:1")
    assert result.exit_code == 2 and "expected broker ids" in result.output, result.output


def test_delete_records_reads_kafkas_offset_json_file_and_refuses_what_kafka_does():
    assert parse_offsets('{"version": 1, "partitions": [{"topic": "t", "partition": 0, "offset": 4}, '
                         '{"topic": "t", "partition": 1, "offset": -1}]}') == {("t", 0): 4, ("t", 1): -1}
    for text, message in [
        ("{", "not JSON"),
        ('{"partitions": []}', "expected"),
        ('{"partitions": [{"topic": "t", "partition": "0", "offset": 4}]}', "not a topic, partition and offset"),
        ('{"partitions": [{"topic": "t", "partition": 0, "offset": 4}, {"topic": "t", "partition": 0, "offset": 5}]}',
         "Offset json file contains duplicate topic partitions: t-0"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_offsets(text)


def test_delete_records_reports_each_partition_as_kafka_delete_records_does():
    assert result_lines({TopicPartition("t", 1): (ErrorCode.OFFSET_OUT_OF_RANGE, -1),
                         TopicPartition("t", 0): (ErrorCode.NONE, 4)}) == [
        "Records delete operation completed:", "partition: t-0\tlow_watermark: 4",
        "partition: t-1\terror: OFFSET_OUT_OF_RANGE"]


def test_log_dirs_json_has_kafka_log_dirs_shape_with_the_topics_asked_for():
    dirs = {2: [LogDirResult(error_code=0, log_dir="/d/2", topics=[
        LogDirTopic(name="a", partitions=[LogDirPartition(partition_index=0, partition_size=70, offset_lag=0)]),
        LogDirTopic(name="b", partitions=[LogDirPartition(partition_index=1, partition_size=0, offset_lag=3)])])]}
    assert log_dirs_json(dirs, ["a"]) == {"version": 1, "brokers": [{"broker": 2, "logDirs": [{
        "logDir": "/d/2", "error": None,
        "partitions": [{"partition": "a-0", "size": 70, "offsetLag": 0, "isFuture": False}]}]}]}
    assert [p["partition"] for p in log_dirs_json(dirs, [])["brokers"][0]["logDirs"][0]["partitions"]] == ["a-0", "b-1"]
