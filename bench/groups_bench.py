"""Consumer groups: how fast a group forms, how many commits a second the coordinator takes, and what consuming
through a group costs against reading assigned partitions.

A 3-broker cluster (started here unless --cluster-dir is given), set as `cluster up` sets one: with
group.initial.rebalance.delay.ms 0, as Kafka's own development config, so that the join figure is the group
protocol's work and not the delay a broker's default (3 s) adds to a new group's first rebalance. Per run:
1. join: 10 of minikafka's consumers subscribe to a topic of 30 partitions (RF 3) at once, in a group of their
   own; the time from the first JoinGroup until every member holds its share (all 30 partitions assigned, none
   twice) and the coordinator describes the group as Stable with its 10 members.
2. commits: the 10 members commit their partitions' offsets synchronously, over and over, for --seconds; commits
   per second across the group (each an OffsetCommit written to __consumer_offsets with acks=all).
3. consume: librdkafka (confluent-kafka) produces --seconds of 100-byte values to a topic of 3 partitions, then
   reads them all back twice: assigned partitions (assign), then subscribed in a group (subscribe, committing
   automatically as librdkafka does by default); MB/s of values from the first record to the last, and their
   ratio (group / assign).
The last lines are the medians over --runs runs.

    python -m bench.groups_bench --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
import uuid
from collections.abc import Iterator
from typing import Any

import uvloop
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from bench.kafka_client_bench import (
    bench_arguments,
    librdkafka_produce,
    librdkafka_read_all,
    on_cluster,
    repeated_runs,
)
from bench.produce_bench import PARTITIONS, REPLICATION_FACTOR, VALUE_SIZE
from client.admin import Admin, NewTopic
from client.cluster import ClusterState
from client.consumer import Consumer as MinikafkaConsumer
from client.group.offsets import OffsetAndMetadata

MEMBERS = 10
GROUP_PARTITIONS = 30
_JOIN_TIMEOUT_S = 120.0


# ------------------------------------------------------------------------------------------------ join and commits


async def join_and_commit(bootstrap: str, seconds: float) -> dict[str, float]:
    """Phases 1 and 2: the seconds until 10 members form a stable group; then commits per second."""
    topic, group = f"groups-bench-{uuid.uuid4().hex[:8]}", f"groups-bench-{uuid.uuid4().hex[:8]}"
    async with Admin(bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, GROUP_PARTITIONS, REPLICATION_FACTOR)])
        members = [MinikafkaConsumer(bootstrap, group_id=group, client_id=f"member-{n}", enable_auto_commit=False,
                                     fetch_max_wait_ms=100) for n in range(MEMBERS)]
        try:
            start = time.perf_counter()
            for member in members:
                member.subscribe([topic])
            await asyncio.wait_for(_until_every_partition_is_held(members), _JOIN_TIMEOUT_S)
            while (await admin.describe_groups([group]))[group].state != "Stable":
                await asyncio.sleep(0.01)  # polling the coordinator's view, with the members' already complete
            joined = time.perf_counter() - start
            described = (await admin.describe_groups([group]))[group]
            if len(described.members) != MEMBERS:
                raise RuntimeError(f"the group is Stable with {len(described.members)} members, not {MEMBERS}")
            commits = await asyncio.gather(*(_commit_for(m, seconds) for m in members))
        finally:
            await asyncio.gather(*(m.close() for m in members), return_exceptions=True)
    return {"join_s": joined, "commits_per_s": sum(commits) / seconds}


async def _until_every_partition_is_held(members: list[MinikafkaConsumer]) -> None:
    """Poll every member until each holds partitions and together they hold every partition exactly once."""
    while True:
        await asyncio.gather(*(m.poll(timeout_ms=50) for m in members))
        held = [tp for m in members for tp in m.assignment()]
        if all(m.assignment() for m in members) and len(held) == len(set(held)) == GROUP_PARTITIONS:
            return


async def _commit_for(member: MinikafkaConsumer, seconds: float) -> int:
    """Synchronous commits of the member's partitions, each one offset further, for `seconds`; how many."""
    partitions = member.assignment()
    deadline = time.perf_counter() + seconds
    count = 0
    while not count or time.perf_counter() < deadline:
        count += 1
        await member.commit({tp: OffsetAndMetadata(count) for tp in partitions})
    return count


# ------------------------------------------------------------------------------------------------ consuming


def librdkafka_read(bootstrap: str, topic: str, expected: int, *, group: bool) -> float:
    """Read the `expected` records of `topic` (PARTITIONS partitions) from the beginning, subscribed in a new
    group or assigned; value MB/s from the first record to the last."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"groups-bench-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": group})
    if group:
        consumer.subscribe([topic])
    else:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    read = librdkafka_read_all(consumer, expected)
    return read.value_bytes / 1e6 / (read.last - read.first)


async def consume_both_ways(bootstrap: str, seconds: float) -> dict[str, float]:
    """Phase 3: produce with librdkafka, then read it all assigned and subscribed."""
    topic = f"groups-bench-data-{uuid.uuid4().hex[:8]}"
    async with Admin(bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, PARTITIONS, REPLICATION_FACTOR)])
    value = random.Random(0).randbytes(VALUE_SIZE)
    produced, _, _ = await asyncio.to_thread(librdkafka_produce, bootstrap, topic, "1", [value], seconds)
    expected = produced + 1  # the record sent before librdkafka_produce's clock started
    assign = await asyncio.to_thread(librdkafka_read, bootstrap, topic, expected, group=False)
    group = await asyncio.to_thread(librdkafka_read, bootstrap, topic, expected, group=True)
    return {"assign_mb_per_s": assign, "group_mb_per_s": group, "ratio": group / assign}


# ------------------------------------------------------------------------------------------------ runs


async def one_run(bootstrap: str, seconds: float) -> dict[str, float]:
    return await join_and_commit(bootstrap, seconds) | await consume_both_ways(bootstrap, seconds)


def describe(figures: dict[str, Any]) -> Iterator[str]:
    yield f"  join      {figures['join_s'] * 1000:8,.0f} ms from the first JoinGroup to a Stable group of {MEMBERS}"
    yield f"  commits   {figures['commits_per_s']:8,.0f} commits/s (acks=all, {MEMBERS} members committing at once)"
    yield (f"  consume   group {figures['group_mb_per_s']:6.1f} MB/s  assign {figures['assign_mb_per_s']:6.1f} MB/s  "
           f"ratio {figures['ratio']:.2f}")


async def run(args: argparse.Namespace) -> None:
    async def runs(state: ClusterState) -> None:
        await repeated_runs(args, lambda seconds: one_run(state.bootstrap_servers, seconds), describe, 1.0,
                            f"({MEMBERS} members on {GROUP_PARTITIONS} partitions; librdkafka consuming "
                            f"{PARTITIONS} partitions of {VALUE_SIZE}-byte values)")

    await on_cluster(args, runs)


def main() -> None:
    uvloop.run(run(bench_arguments(__doc__, 5.0)))


if __name__ == "__main__":
    main()
