"""`minikafka consumer-groups` on a real cluster (3 brokers), checked against Apache Kafka's own kafka-consumer-groups
(org.apache.kafka.tools.consumer.group.ConsumerGroupCommand from build/kafka/libs) on the same groups: --list,
--describe with its offsets, --members --verbose and --state print the same tables; --reset-offsets plans the same
offsets for each scenario, and what one tool executes the other reads; --delete removes the group for both. The
members are `minikafka consume --group` processes, which leave their group on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from datetime import UTC, datetime

from client.admin import Admin
from client.cluster import ClusterState
from client.producer import Producer
from protocol.apis.offsets import LATEST_TIMESTAMP
from tests.integration.clusterutil import cli, cluster_fixture, consume_in_group, create_topic, produce_values
from tests.kafka_broker import GROUP_TOOL, kafka_tool
from tests.polling import wait_for

cluster = cluster_fixture(brokers=3)
SESSION_MS = 60000  # far longer than leaving takes: a group emptied sooner was left, not expired
RESET_HEADER = ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def ours(cluster: ClusterState, *args: str, check: bool = True) -> tuple[int, str, str]:
    result = cli("consumer-groups", *args, "--bootstrap-server", cluster.bootstrap_servers, check=check)
    return result.returncode, result.stdout, result.stderr


def theirs(cluster: ClusterState, *args: str) -> str:
    return kafka_tool(GROUP_TOOL, "--bootstrap-server", cluster.bootstrap_servers, *args)


def lines(text: str) -> list[str]:
    """A table's lines without trailing blanks, in order; the row order of Kafka's tool follows its hash maps."""
    return sorted(line.rstrip() for line in text.splitlines() if line.strip())


def cells(text: str, header: list[str]) -> list[tuple[str, ...]]:
    """The rows after `header`, read as whitespace-separated cells (Kafka 3.9.1 prints --reset-offsets' rows on the
    header's line, one after the other)."""
    words = text.split()
    at = next(i for i in range(len(words)) if words[i:i + len(header)] == header) + len(header)
    rest = words[at:]
    return sorted(tuple(rest[i:i + len(header)]) for i in range(0, len(rest), len(header)))


def test_list_and_describe_print_kafkas_tables_for_a_group_with_members(cluster):
    topic, group = unique("described"), unique("described")
    asyncio.run(create_topic(cluster, topic, partitions=3, replication_factor=3))
    asyncio.run(produce_values(cluster, topic, [b"d%02d" % i for i in range(30)]))
    members = [consume_in_group(cluster, topic, group, {
        "client.id": f"app-{i}", "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500,
        "auto.commit.interval.ms": 500}) for i in (1, 2)]
    try:
        def settled() -> bool:
            code, text, _ = ours(cluster, "--describe", "--group", group, "--json", check=False)
            rows = json.loads(text) if code == 0 else []
            return len(rows) == 3 and {r["client_id"] for r in rows} == {"app-1", "app-2"} and all(
                r["lag"] == 0 for r in rows)

        wait_for(settled, "both members in a stable group, every record committed", timeout_s=60)
        assert group in ours(cluster, "--list")[1].split() and group in theirs(cluster, "--list").split()
        for view in ([], ["--members", "--verbose"], ["--state"]):
            code, text, _ = ours(cluster, "--describe", "--group", group, *view)
            assert code == 0
            assert lines(text) == lines(theirs(cluster, "--describe", "--group", group, *view)), view
        rows = json.loads(ours(cluster, "--describe", "--group", group, "--json")[1])
        assert sorted((r["partition"], r["current_offset"], r["log_end_offset"]) for r in rows) == sorted(
            (p, n, n) for p, n in enumerate(partition_sizes(cluster, topic)))
        assert all(r["host"] == "/127.0.0.1" and r["consumer_id"].startswith(r["client_id"]) for r in rows)
        code, _, err = ours(cluster, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest",
                            "--execute", check=False)
        assert code == 1
        assert f"can only be reset if the group '{group}' is inactive, but the current state is Stable." in err
        for member in members:  # SIGTERM: each commits and leaves the group, as Kafka's console consumer does
            member.terminate()
            member.communicate(timeout=30)
        # Empty well before the members' sessions could expire: they left the group, they were not dropped.
        wait_for(lambda: "Empty" in ours(cluster, "--describe", "--group", group, "--state")[1], "an empty group",
                 timeout_s=SESSION_MS / 1000 / 2)
    finally:
        for member in members:
            if member.poll() is None:
                member.kill()
                member.communicate()


def partition_sizes(cluster: ClusterState, topic: str) -> list[int]:
    """Each partition's log end offset (the high watermark), by partition."""

    async def ends() -> dict:
        async with Admin(cluster.bootstrap_servers) as admin:
            return await admin.list_offsets([(topic, p) for p in range(3)], LATEST_TIMESTAMP)

    return [offset for _, offset in sorted(asyncio.run(ends()).items())]


def iso(ms: float) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


async def produce_spread(cluster: ClusterState, topic: str, values: list[bytes]) -> None:
    """Each value to partition i % 2 with acks=all, so that both partitions have records whatever the partitioner."""
    async with Producer(cluster.bootstrap_servers, acks="all") as producer:
        futures = [await producer.send(topic, value, partition=i % 2) for i, value in enumerate(values)]
        await producer.flush()
    for future in futures:
        future.result()


async def test_reset_offsets_plans_and_delete_agree_with_kafkas_tool(cluster):
    topic, group = unique("reset"), unique("reset")
    await create_topic(cluster, topic, partitions=2, replication_factor=3)
    await produce_spread(cluster, topic, [b"early-%d" % i for i in range(10)])
    await asyncio.sleep(1.1)
    middle = time.time() * 1000
    await asyncio.sleep(0.1)
    await produce_spread(cluster, topic, [b"late-%d" % i for i in range(10)])
    cli("consume", topic, "--group", group, "--from-beginning", "--max-messages", "12",
        "--bootstrap-server", cluster.bootstrap_servers)
    scenarios = [["--to-earliest"], ["--to-latest"], ["--to-offset", "5"], ["--shift-by", "-3"],
                 ["--to-datetime", iso(middle)]]
    for scenario in scenarios:
        plan = ["--reset-offsets", "--group", group, "--topic", topic, *scenario, "--dry-run"]
        assert cells(ours(cluster, *plan)[1], RESET_HEADER) == cells(theirs(cluster, *plan), RESET_HEADER), scenario

    ours(cluster, "--reset-offsets", "--group", group, "--topic", f"{topic}:0", "--to-offset", "1", "--execute")
    assert f"{group} {topic} 0 1 " in " ".join(theirs(cluster, "--describe", "--group", group).split()) + " "
    theirs(cluster, "--reset-offsets", "--group", group, "--topic", f"{topic}:0", "--shift-by", "2", "--execute")
    described = json.loads(ours(cluster, "--describe", "--group", group, "--json")[1])
    assert [r["current_offset"] for r in described if r["partition"] == 0] == [3]

    assert ours(cluster, "--delete", "--group", group)[1].strip() == (
        f"Deletion of requested consumer groups ('{group}') was successful.")
    assert group not in theirs(cluster, "--list").split()
    code, _, err = ours(cluster, "--describe", "--group", group, check=False)
    assert code == 1 and f"Error: Consumer group '{group}' does not exist." in err
