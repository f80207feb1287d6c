"""franz-go, the stock Go client, on minikafka: a small program on it (tools/franz-go, built by `make setup` into
build/franz-go) joins a group, reads a topic minikafka's producer wrote, commits and leaves, and
`minikafka consumer-groups --describe --json` shows the offsets it committed; a second run of the same group reads
only what came after. It also produces batches compressed with each codec, which minikafka's consumer reads back
and which the broker keeps as franz-go compressed them. One 3-broker cluster serves every test."""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from pathlib import Path

import pytest

from client.cluster import ClusterState
from client.producer import Producer
from protocol.compression import CODECS
from tests.integration.clusterutil import PROJECT_ROOT, cli, cluster_fixture, consume_all, create_topic
from tests.integration.test_stock_kafka_clients import log_batches

cluster = cluster_fixture(brokers=3)
FRANZ_GO = PROJECT_ROOT / "build" / "franz-go" / "franz-go-client"
PARTITIONS = 3
RECORDS = 30
TIMEOUT_S = 90


@pytest.fixture(scope="module")
def franz_go() -> Path:
    if not FRANZ_GO.is_file():
        pytest.fail(f"{FRANZ_GO.relative_to(PROJECT_ROOT)} is missing: run make setup")
    return FRANZ_GO


def franz_go_run(program: Path, cluster: ClusterState, *args: str) -> list[str]:
    """Run the franz-go program; its output lines, after checking it exited 0."""
    result = subprocess.run([str(program), args[0], "-brokers", cluster.bootstrap_servers, *args[1:],
                             "-timeout", f"{TIMEOUT_S - 10}s"], capture_output=True, text=True, timeout=TIMEOUT_S)
    assert result.returncode == 0, f"franz-go-client {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout.splitlines()


async def produce_to_every_partition(cluster: ClusterState, topic: str, first: int, count: int
                                     ) -> dict[tuple[int, int], str]:
    """minikafka's producer writes records first..first+count-1 round-robin over the partitions, acks=all;
    {(partition, offset): value}."""
    async with Producer(cluster.bootstrap_servers, acks="all", linger_ms=2) as producer:
        values = [f"record {n}" for n in range(first, first + count)]
        futures = [(await producer.send(topic, v.encode(), partition=n % PARTITIONS), v) for n, v in enumerate(values)]
        await producer.flush()
    return {(f.result().partition, f.result().offset): v for f, v in futures}


def described(cluster: ClusterState, group: str) -> dict[int, dict]:
    out = cli("consumer-groups", "--bootstrap-server", cluster.bootstrap_servers, "--describe", "--group", group,
              "--json").stdout
    return {row["partition"]: row for row in json.loads(out)}


def test_a_franz_go_group_member_reads_every_record_commits_and_the_next_one_resumes(franz_go: Path,
                                                                                    cluster: ClusterState):
    topic, group = f"franz-{uuid.uuid4().hex[:8]}", f"franz-group-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_topic(cluster, topic, partitions=PARTITIONS, replication_factor=3))
    produced = asyncio.run(produce_to_every_partition(cluster, topic, 0, RECORDS))

    lines = franz_go_run(franz_go, cluster, "consume", "-topic", topic, "-group", group, "-count", str(RECORDS))
    assert lines[-1] == "committed", lines
    printed = {(int(p), int(o)): v for p, o, v in (line.split(" ", 2) for line in lines[:-1])}
    assert printed == produced
    ends = {p: RECORDS // PARTITIONS for p in range(PARTITIONS)}
    rows = described(cluster, group)
    assert {p: (r["current_offset"], r["log_end_offset"], r["lag"]) for p, r in rows.items()} == {
        p: (end, end, 0) for p, end in ends.items()}
    assert all(r["group"] == group and r["topic"] == topic and r["consumer_id"] is None for r in rows.values()), rows

    more = asyncio.run(produce_to_every_partition(cluster, topic, RECORDS, PARTITIONS))  # one more per partition
    lines = franz_go_run(franz_go, cluster, "consume", "-topic", topic, "-group", group, "-count", str(PARTITIONS))
    assert {(int(p), int(o)): v for p, o, v in (line.split(" ", 2) for line in lines[:-1])} == more
    assert {p: r["current_offset"] for p, r in described(cluster, group).items()} == {
        p: end + 1 for p, end in ends.items()}


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_franz_go_produces_batches_compressed_with_each_codec_that_minikafka_reads_back(franz_go: Path,
                                                                                       cluster: ClusterState,
                                                                                       codec: str):
    topic = f"franz-{codec}-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_topic(cluster, topic, partitions=1, replication_factor=3))
    acked = [tuple(map(int, line.split())) for line in
             franz_go_run(franz_go, cluster, "produce", "-topic", topic, "-codec", codec, "-count", "20")]
    assert acked == [(0, offset) for offset in range(20)]
    read = asyncio.run(consume_all(cluster, topic))
    assert sorted(read) == [(0, offset) for offset in range(20)]
    assert all(read[(0, n)].decode().startswith(f"{codec} record {n}: compressible text") for n in range(20))
    assert {header.compression for header in log_batches(cluster, topic, 0)} == {CODECS.get(codec, 0)}
