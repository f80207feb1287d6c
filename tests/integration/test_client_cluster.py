"""The client library and the command line against a real cluster: ZooKeeper and three broker processes started
with `minikafka cluster up` on 127.0.0.1.

Topic creation with Kafka's assignment, produce/consume round trips for replication factors 1..3 and acks
0/1/all, replicas converging, `produce --json` acknowledgements in input order, `consume --json` fields, admin
errors, restarting a broker with `cluster kill` / `cluster start`, and `cluster down`. Waits poll with deadlines.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from client.admin import Admin, AdminError
from client.cluster import ClusterState, load_cluster
from client.consumer import Consumer, ConsumerRecord, OffsetOutOfRangeError
from client.producer import Producer, ProducerError
from protocol.errors import ErrorCode
from tests.integration.clusterutil import cli, cluster_fixture, create_topic, status_json, topic_znode
from tests.polling import eventually, poll_records, wait_for

BROKERS = 3
#: The Admin client's own request timeout: these tests use the client library as it comes.
ADMIN_REQUEST_TIMEOUT_MS = 30_000

#: with topics never created on first use, so that producing to a missing topic fails
cluster = cluster_fixture(brokers=BROKERS, configs={"auto.create.topics.enable": "false"})


@pytest.fixture(scope="module")
def cluster_dir(cluster: ClusterState) -> Path:
    return cluster.directory


@pytest.fixture(scope="module")
def bootstrap(cluster: ClusterState) -> str:
    return cluster.bootstrap_servers


def client_cli(cluster_dir: Path, *args: str, **options: Any) -> subprocess.CompletedProcess[str]:
    """A client command against the test cluster, found through --dir."""
    return cli(*args, "--dir", str(cluster_dir), **options)


async def consume_from_beginning(bootstrap: str, topic: str, partitions: int, count: int) -> list[ConsumerRecord]:
    """Read `count` records from the beginning of every partition of `topic`."""
    async with Consumer(bootstrap) as consumer:
        consumer.assign([(topic, p) for p in range(partitions)])
        await consumer.seek_to_beginning()
        return await poll_records(consumer, count, f"{count} records of {topic}", poll_ms=500)


# ------------------------------------------------------------------------------------------------ cluster


def test_cluster_status_lists_every_broker_alive_and_a_controller(cluster_dir):
    status = status_json(cluster_dir)
    assert [b["id"] for b in status["brokers"]] == list(range(1, BROKERS + 1))
    assert all(b["alive"] for b in status["brokers"])
    assert all(Path(b["log_dir"]).is_dir() for b in status["brokers"])
    assert status["controller"] in range(1, BROKERS + 1)
    assert status["controller_epoch"] >= 1


def test_topic_create_uses_kafkas_assignment(cluster_dir):
    result = client_cli(cluster_dir, "topic", "create", "assigned", "--partitions", "5", "--replication-factor", "3")
    assert result.stdout.strip() == "Created topic assigned."
    partitions = json.loads(client_cli(cluster_dir, "topic", "describe", "assigned", "--json").stdout)
    assert [p["partition"] for p in partitions] == list(range(5))
    # seed 001's for the first round of brokers, then the followers shifted by one (Kafka's AdminUtils)
    assignment = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2], 3: [1, 3, 2], 4: [2, 1, 3]}
    for p in partitions:
        expected = assignment[p["partition"]]
        assert p["replicas"] == expected, p
        assert p["leader"] == expected[0]
        assert sorted(p["isr"]) == sorted(expected)
        assert p["leader_epoch"] == 0
    text = client_cli(cluster_dir, "topic", "describe", "assigned").stdout
    assert "\tTopic: assigned\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\t" in text
    assert "assigned" in client_cli(cluster_dir, "topic", "list").stdout.split()


async def test_admin_errors_carry_kafkas_names(cluster, bootstrap):
    await create_topic(cluster, "twice", partitions=1, replication_factor=1,
                       request_timeout_ms=ADMIN_REQUEST_TIMEOUT_MS)
    with pytest.raises(AdminError) as exists:
        await create_topic(cluster, "twice", partitions=1, replication_factor=1,
                           request_timeout_ms=ADMIN_REQUEST_TIMEOUT_MS)
    assert exists.value.code == ErrorCode.TOPIC_ALREADY_EXISTS
    with pytest.raises(AdminError) as too_many:
        await create_topic(cluster, "too-many-replicas", partitions=1, replication_factor=BROKERS + 1,
                           request_timeout_ms=ADMIN_REQUEST_TIMEOUT_MS)
    assert too_many.value.code == ErrorCode.INVALID_REPLICATION_FACTOR
    async with Admin(bootstrap) as admin:
        with pytest.raises(AdminError) as unknown:
            await admin.describe_topics(["no-such-topic"])
    assert unknown.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# ------------------------------------------------------------------------------------------------ library round trips


@pytest.mark.parametrize("acks", ["0", "1", "all"])
@pytest.mark.parametrize("replication_factor", [1, 2, 3])
async def test_produce_consume_round_trip(cluster, bootstrap, replication_factor, acks):
    topic = f"round-trip-rf{replication_factor}-acks{acks}"
    await create_topic(cluster, topic, partitions=2, replication_factor=replication_factor,
                       request_timeout_ms=ADMIN_REQUEST_TIMEOUT_MS)
    sent = [(f"key-{i % 7}".encode(), f"value-{i}".encode()) for i in range(60)]
    async with Producer(bootstrap, acks=acks, linger_ms=2, batch_size=512) as producer:
        futures = [await producer.send(topic, value, key=key) for key, value in sent]
        await producer.flush()
        acknowledged = [f.result() for f in futures]
    if acks == "0":
        assert {m.offset for m in acknowledged} == {-1}
    else:
        for partition in (0, 1):
            offsets = [m.offset for m in acknowledged if m.partition == partition]
            assert offsets == list(range(len(offsets))), "offsets of a partition follow the input order"
    received = await consume_from_beginning(bootstrap, topic, 2, len(sent))
    assert len(received) == len(sent)
    for partition in (0, 1):
        expected = [(m.offset, k, v) for m, (k, v) in zip(acknowledged, sent, strict=True) if m.partition == partition]
        got = [(r.offset, r.key, r.value) for r in received if r.partition == partition]
        if acks == "0":
            expected = [(offset, k, v) for offset, (_, k, v) in enumerate(expected)]
        assert got == expected
    assert {r.leader_epoch for r in received} == {0}


async def test_every_replica_converges_to_the_same_leo_and_hw(cluster, bootstrap):
    await create_topic(cluster, "converge", partitions=3, replication_factor=3,
                       request_timeout_ms=ADMIN_REQUEST_TIMEOUT_MS)
    async with Producer(bootstrap, acks="all") as producer:
        for i in range(90):
            await producer.send("converge", f"{i}".encode(), key=f"{i}".encode())
    async with Admin(bootstrap) as admin:

        async def converged() -> dict[int, list[Any]] | None:
            states = await admin.describe_replicas(["converge"])
            per_partition: dict[int, list[Any]] = {}
            for replicas in states.values():
                for state in replicas:
                    per_partition.setdefault(state.partition, []).append(state)
            if len(per_partition) != 3 or any(len(replicas) != 3 for replicas in per_partition.values()):
                return None
            for replicas in per_partition.values():
                if len({(s.log_end_offset, s.high_watermark) for s in replicas}) != 1:
                    return None
                if replicas[0].log_end_offset != replicas[0].high_watermark:
                    return None
            return per_partition

        per_partition = await eventually(converged, "replicas of 'converge' to agree on LEO and HW")
    assert sum(replicas[0].log_end_offset for replicas in per_partition.values()) == 90
    for replicas in per_partition.values():
        [leader] = [s for s in replicas if s.role == "leader"]
        assert {f.log_end_offset for f in leader.followers} == {leader.log_end_offset}


async def test_consumer_positions_seek_to_end_and_out_of_range(cluster, bootstrap):
    await create_topic(cluster, "positions", partitions=1, replication_factor=2,
                       request_timeout_ms=ADMIN_REQUEST_TIMEOUT_MS)
    async with Producer(bootstrap) as producer:
        for i in range(5):
            await producer.send("positions", f"{i}".encode())
    async with Consumer(bootstrap) as consumer:
        consumer.assign([("positions", 0)])
        await consumer.seek_to_end()
        assert await consumer.position(("positions", 0)) == 5
        await consumer.seek_to_beginning()
        assert await consumer.position(("positions", 0)) == 0
        consumer.seek(("positions", 0), 3)
        records = await poll_records(consumer, 1, "records from offset 3", poll_ms=500)
        assert [r.offset for r in records] == [3, 4]
        consumer.seek(("positions", 0), 100)
        with pytest.raises(OffsetOutOfRangeError, match="out of range"):
            await consumer.poll(timeout_ms=5000)


async def test_with_auto_creation_off_producing_to_a_missing_topic_fails_clearly(cluster, bootstrap):
    async with Producer(bootstrap, max_block_ms=1000) as producer:
        with pytest.raises(ProducerError) as raised:
            await producer.send("never-created", b"x")
    assert raised.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "never-created" in str(raised.value)
    assert await topic_znode(cluster, "never-created") is None


# ------------------------------------------------------------------------------------------------ CLI produce/consume


def test_cli_produce_json_acknowledges_in_input_order(cluster_dir):
    client_cli(cluster_dir, "topic", "create", "cli-ordered", "--partitions", "3", "--replication-factor", "3")
    lines = [f"k{i % 5}:v{i}" for i in range(40)]
    result = client_cli(
        cluster_dir, "produce", "cli-ordered", "--key-separator", ":", "--json", input="\n".join(lines) + "\n"
    )
    acks = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(acks) == len(lines)
    next_offset = {0: 0, 1: 0, 2: 0}
    for ack in acks:
        assert ack["offset"] == next_offset[ack["partition"]], acks
        next_offset[ack["partition"]] += 1
    by_key: dict[str, set[int]] = {}
    for line, ack in zip(lines, acks, strict=True):
        by_key.setdefault(line.split(":")[0], set()).add(ack["partition"])
    assert all(len(partitions) == 1 for partitions in by_key.values()), "a key always lands on one partition"


def test_cli_produce_to_one_partition(cluster_dir):
    client_cli(cluster_dir, "topic", "create", "cli-one", "--partitions", "2", "--replication-factor", "2")
    result = client_cli(
        cluster_dir, "produce", "cli-one", "--partition", "1", "--acks", "1", "--json", input="a\nb\nc\n"
    )
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {"partition": 1, "offset": offset} for offset in range(3)
    ]
    assert "note: idempotence is disabled because acks is set to 1" in result.stderr


def producer_ids(cluster_dir: Path, partition_dir: str) -> set[int]:
    """The producer ids of the batches in one partition's segments on every broker that holds it."""
    segments = [str(segment) for broker in status_json(cluster_dir)["brokers"]
                for segment in (Path(broker["log_dir"]) / partition_dir).glob("*.log")]
    dumped = cli("dump-log", "--json", *segments).stdout.splitlines()
    return {batch["producerId"] for batch in map(json.loads, dumped) if "producerId" in batch}


def test_cli_produce_is_idempotent_unless_turned_off(cluster_dir):
    client_cli(cluster_dir, "topic", "create", "cli-idempotent", "--partitions", "1", "--replication-factor", "2")
    client_cli(cluster_dir, "produce", "cli-idempotent", input="a\n")
    [default_id] = producer_ids(cluster_dir, "cli-idempotent-0")
    assert default_id >= 0
    client_cli(cluster_dir, "produce", "cli-idempotent", "--producer-property", "enable.idempotence=false",
               input="b\n")
    assert producer_ids(cluster_dir, "cli-idempotent-0") == {default_id, -1}
    refused = client_cli(cluster_dir, "produce", "cli-idempotent", "--acks", "1", "--producer-property",
                         "enable.idempotence=true", input="c\n", check=False)
    assert refused.returncode == 2
    assert "must set acks to all" in refused.stderr


def test_cli_consume_json_fields(cluster_dir):
    client_cli(cluster_dir, "topic", "create", "cli-consume", "--partitions", "1", "--replication-factor", "3")
    before_ms = time.time() * 1000
    client_cli(cluster_dir, "produce", "cli-consume", "--key-separator", "=", input="a=1\nb=2\nc=3\n")
    result = client_cli(
        cluster_dir, "consume", "cli-consume", "--from-beginning", "--max-messages", "3", "--timeout-ms", "20000",
        "--json",
    )
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["partition"], r["offset"], r["key"], r["value"], r["leader_epoch"]) for r in records] == [
        (0, 0, "a", "1", 0), (0, 1, "b", "2", 0), (0, 2, "c", "3", 0)
    ]
    assert all(set(r) == {"partition", "offset", "key", "value", "timestamp", "leader_epoch"} for r in records)
    assert all(before_ms - 60_000 <= r["timestamp"] <= time.time() * 1000 for r in records)
    assert "Processed a total of 3 messages" in result.stderr
    plain = client_cli(
        cluster_dir, "consume", "cli-consume", "--partition", "0", "--offset", "1", "--max-messages", "2"
    )
    assert plain.stdout.splitlines() == ["2", "3"]


def test_cli_consume_stops_after_timeout_without_records(cluster_dir):
    client_cli(cluster_dir, "topic", "create", "cli-idle", "--partitions", "2", "--replication-factor", "1")
    started = time.monotonic()
    result = client_cli(cluster_dir, "consume", "cli-idle", "--timeout-ms", "1000", "--json")
    assert result.stdout == ""
    assert time.monotonic() - started < 30


def test_cli_describe_replicas_json(cluster_dir):
    client_cli(cluster_dir, "topic", "create", "cli-replicas", "--partitions", "1", "--replication-factor", "3")
    client_cli(cluster_dir, "produce", "cli-replicas", input="x\ny\n")
    seen: list[dict[str, Any]] = []

    def replicated() -> dict[str, Any] | None:
        described = client_cli(cluster_dir, "topic", "describe", "cli-replicas", "--replicas", "--json")
        [entry] = json.loads(described.stdout)
        seen.append(entry)
        states = entry["replica_states"]
        return entry if len(states) == 3 and all((s["leo"], s["hw"]) == (2, 2) for s in states) else None

    entry = wait_for(replicated, lambda: f"every replica of cli-replicas at LEO = HW = 2: {seen[-1:]}",
                     interval_s=0.1)
    states = entry["replica_states"]
    [leader] = [s for s in states if s["broker"] == entry["leader"]]
    assert leader["role"] == "leader"
    followers = sorted(b for b in entry["replicas"] if b != entry["leader"])
    assert sorted(f["broker"] for f in leader["followers"]) == followers
    assert all(f["remote_leo"] == 2 for f in leader["followers"])


def test_cli_produce_failure_exits_non_zero(cluster_dir):
    result = client_cli(cluster_dir, "produce", "cli-missing-topic", input="x\n", check=False)
    assert result.returncode == 1
    assert "cli-missing-topic" in result.stderr


# ------------------------------------------------------------------------------------------------ kill and restart


def broker_alive(cluster_dir: Path, broker_id: int) -> bool:
    return next(b for b in status_json(cluster_dir)["brokers"] if b["id"] == broker_id)["alive"]


def wait_for_alive(cluster_dir: Path, broker_id: int, alive: bool) -> None:
    wait_for(lambda: broker_alive(cluster_dir, broker_id) == alive, f"broker {broker_id} to be alive: {alive}",
             interval_s=0.1)


def test_cluster_kill_stop_and_cont(cluster_dir):
    client_cli(cluster_dir, "cluster", "kill", "2", "--signal", "STOP")
    wait_for_alive(cluster_dir, 2, False)
    client_cli(cluster_dir, "cluster", "kill", "2", "--signal", "CONT")
    wait_for_alive(cluster_dir, 2, True)


def test_cluster_kill_and_start_a_broker(cluster_dir):
    victim = BROKERS
    client_cli(cluster_dir, "cluster", "kill", str(victim), "--signal", "TERM")
    wait_for_alive(cluster_dir, victim, False)
    failed = client_cli(cluster_dir, "cluster", "start", "1", check=False)
    assert failed.returncode == 1 and "already running" in failed.stderr
    client_cli(cluster_dir, "cluster", "start", str(victim))
    status = status_json(cluster_dir)
    assert all(b["alive"] for b in status["brokers"])


def test_cluster_down_stops_every_broker_cleanly_without_asking_the_controller_to_move_leaderships(tmp_path):
    """The whole cluster stops: each broker shuts down cleanly (exit 0, clean-shutdown marker) and none asks for a
    controlled shutdown, which would wait out its retries with no broker left to take the leaderships."""
    directory = tmp_path / "cluster"
    cli("cluster", "up", "--brokers", str(BROKERS), "--dir", str(directory))
    try:
        cli("topic", "create", "replicated", "--partitions", "3", "--replication-factor", "3", "--dir", str(directory))
    finally:
        cli("cluster", "down", "--dir", str(directory))
    for broker in load_cluster(directory).brokers:
        home = Path(broker.config).parent
        server_log = (home / "server.log").read_text()
        assert (home / "exit-status").read_text().strip() == "0", server_log[-2000:]
        assert (Path(broker.log_dir) / ".kafka_cleanshutdown").exists()
        assert f"broker {broker.id} shutting down (not controlled)" in server_log
        assert "controlled shutdown" not in server_log.replace("shutting down (not controlled)", "")
