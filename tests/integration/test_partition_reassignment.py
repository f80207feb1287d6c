"""Partition reassignment on real brokers (`minikafka reassign-partitions`), and the automatic leader rebalance.

- A loaded topic moves onto broker 4, which held none of it, while a producer with acks=all keeps writing: no
  acknowledged record is lost, the new replicas are byte-identical to the others, the removed replicas' directories
  are gone, and the topic znode ends with the target replicas only.
- The replication factor goes from 3 to 2 and back to 3.
- The controller is killed (kill -9) in the middle of a reassignment: the next one resumes it from ZooKeeper, and
  the killed broker, whose replica was removed meanwhile, deletes it when it comes back.
- A target broker that is down holds its reassignment until it comes back.
- With auto.leader.rebalance.enable and a one-second check interval, a broker that comes back leads its partitions
  again without anyone asking.

A target broker is paused (SIGSTOP) where a test needs a reassignment to stay in progress: its new replica cannot
catch up, so the reassignment cannot complete until it is continued.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from client.cluster import start_broker
from client.metadata import PartitionInfo
from client.producer import Producer
from tests.integration.clusterutil import (
    cli,
    cluster_fixture,
    consume_all,
    controller_of,
    create_topic,
    describe_topic,
    pause,
    produce_values,
    resume,
    stop_broker,
    topic_znode,
    wait_identical_replicas,
    wait_partition_dirs,
    zookeeper_of,
)
from tests.polling import eventually
from zk import znodes

cluster = cluster_fixture(brokers=4, configs={
    "zookeeper.session.timeout.ms": "4000",  # a killed broker is gone within seconds
    "controlled.shutdown.retry.backoff.ms": "200",
    "leader.imbalance.check.interval.seconds": "1",
})


def reassign(cluster, tmp_path: Path, mode: str, plan: dict[tuple[str, int], list[int]]) -> dict[str, str]:
    """Run `reassign-partitions --execute` or `--verify` for a plan; the statuses for --verify."""
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r} for (t, p), r in plan.items()]}))
    args = ["reassign-partitions", f"--{mode}", "--reassignment-json-file", str(path), "--dir", str(cluster.directory)]
    result = cli(*args, *(["--json"] if mode == "verify" else []))
    return json.loads(result.stdout) if mode == "verify" else {}


async def wait_complete(cluster, tmp_path: Path, plan: dict[tuple[str, int], list[int]]) -> None:
    statuses: dict[str, str] = {}

    async def complete() -> bool | None:
        statuses.update(reassign(cluster, tmp_path, "verify", plan))
        return True if set(statuses.values()) == {"complete"} else None

    await eventually(complete, lambda: f"the reassignment to complete: {statuses}")
    topic = next(iter(plan))[0]

    async def shown() -> bool | None:  # the new metadata reaches every broker a moment later
        described = await describe_topic(cluster, topic)
        return True if all(list(described[p].replicas) == r and set(described[p].isr) == set(r)
                           for (_, p), r in plan.items()) else None

    await eventually(shown, f"the metadata of {topic} to show the target replicas, all in the ISR")
    znode = await topic_znode(cluster, topic)
    assert znode is not None and (znode.adding, znode.removing) == ({}, {})
    assert all(znode.partitions[p] == r for (_, p), r in plan.items())
    async with zookeeper_of(cluster) as zk:
        assert await zk.exists(znodes.REASSIGN_PARTITIONS_PATH) is None


async def test_a_loaded_topic_moves_onto_another_broker_while_acks_all_producing_goes_on(cluster, tmp_path: Path):
    await create_topic(cluster, "moving", assignments={0: [1, 2, 3], 1: [2, 3, 1]},
                       configs={"segment.bytes": "65536"})
    acked = await produce_values(cluster, "moving", [b"preloaded-%06d-" % i + b"x" * 200 for i in range(4000)])
    stop = asyncio.Event()
    produced = 0

    async def keep_producing() -> None:
        nonlocal produced
        async with Producer(cluster.bootstrap_servers, acks="all", linger_ms=2) as producer:
            while not stop.is_set():
                values = [b"live-%06d" % (produced + i) for i in range(20)]
                futures = [await producer.send("moving", value) for value in values]
                await producer.flush()
                for future, value in zip(futures, values, strict=True):
                    ack = future.result()
                    acked[(ack.partition, ack.offset)] = value
                produced += len(values)

    producing = asyncio.create_task(keep_producing())
    try:
        async def started() -> bool | None:
            return True if produced >= 100 else None

        await eventually(started, "the producer to get going")
        plan = {("moving", 0): [4, 2, 3], ("moving", 1): [2, 3, 4]}
        reassign(cluster, tmp_path, "execute", plan)
        await wait_complete(cluster, tmp_path, plan)
        after = produced

        async def still_producing() -> bool | None:
            return True if produced >= after + 100 else None

        await eventually(still_producing, "acks=all producing to go on after the reassignment")
    finally:
        stop.set()
        await producing
    leaders = {p: info.leader for p, info in (await describe_topic(cluster, "moving")).items()}
    assert leaders[0] in (4, 2, 3) and leaders[1] in (2, 3, 4)
    consumed = await consume_all(cluster, "moving")
    missing = {k: v for k, v in acked.items() if consumed.get(k) != v}
    assert not missing, f"{len(missing)} acknowledged records lost or changed, e.g. {list(missing.items())[:3]}"
    await wait_partition_dirs(cluster, 1, "moving", [])
    await wait_identical_replicas(cluster, "moving", {0: [4, 2, 3], 1: [2, 3, 4]})


async def test_the_replication_factor_goes_from_3_to_2_and_back_to_3(cluster, tmp_path: Path):
    await create_topic(cluster, "factor", assignments={0: [1, 2, 3]})
    await produce_values(cluster, "factor", [b"v%d" % i for i in range(300)])
    reassign(cluster, tmp_path, "execute", {("factor", 0): [1, 2]})
    await wait_complete(cluster, tmp_path, {("factor", 0): [1, 2]})
    shrunk = (await describe_topic(cluster, "factor"))[0]
    assert (list(shrunk.replicas), sorted(shrunk.isr)) == ([1, 2], [1, 2])
    await wait_partition_dirs(cluster, 3, "factor", [])

    reassign(cluster, tmp_path, "execute", {("factor", 0): [1, 2, 4]})
    await wait_complete(cluster, tmp_path, {("factor", 0): [1, 2, 4]})
    grown = (await describe_topic(cluster, "factor"))[0]
    assert (list(grown.replicas), sorted(grown.isr)) == ([1, 2, 4], [1, 2, 4])
    await wait_identical_replicas(cluster, "factor", {0: [1, 2, 4]})


async def test_verify_with_wait_answers_once_no_partition_is_in_progress(cluster, tmp_path: Path):
    await create_topic(cluster, "waited", assignments={0: [1, 2, 3], 1: [2, 3, 1]})
    await produce_values(cluster, "waited", [b"v%d" % i for i in range(2000)])
    plan = {("waited", 0): [4, 2, 3], ("waited", 1): [2, 3, 4]}
    reassign(cluster, tmp_path, "execute", plan)
    path = tmp_path / "plan.json"
    result = cli("reassign-partitions", "--verify", "--wait", "--timeout", "60", "--reassignment-json-file",
                 str(path), "--dir", str(cluster.directory), "--json")
    assert json.loads(result.stdout) == {"waited-0": "complete", "waited-1": "complete"}
    assert result.stderr == ""  # not a terminal: no status line
    await wait_complete(cluster, tmp_path, plan)


async def test_a_controller_killed_in_the_middle_is_succeeded_by_one_that_resumes_from_zookeeper(
    cluster, tmp_path: Path,
):
    controller, epoch = await controller_of(cluster)
    others = [b.id for b in cluster.brokers if b.id != controller]
    kept, target = others[0], others[1]
    await create_topic(cluster, "resumed", assignments={0: [controller, kept]})
    values = await produce_values(cluster, "resumed", [b"r%d" % i for i in range(300)])
    plan = {("resumed", 0): [kept, target]}
    await pause(cluster, target)  # its new replica cannot catch up: the reassignment stays in phase A
    try:
        reassign(cluster, tmp_path, "execute", plan)

        async def in_progress() -> bool | None:
            znode = await topic_znode(cluster, "resumed")
            return True if znode is not None and znode.adding == {0: [target]} else None

        await eventually(in_progress, "the controller to start the reassignment (adding replicas in the znode)")
        assert reassign(cluster, tmp_path, "verify", plan) == {"resumed-0": "in_progress"}
        znode = await topic_znode(cluster, "resumed")
        assert znode is not None and (znode.partitions[0], znode.removing) == ([kept, target, controller],
                                                                               {0: [controller]})

        await stop_broker(cluster, controller, "KILL")

        async def successor() -> tuple[int, int] | None:
            elected = await controller_of(cluster)
            return elected if elected[0] != controller and elected[1] > epoch else None

        new_controller, _ = await eventually(successor, "another broker to become the controller")
        assert new_controller != controller
    finally:
        await resume(cluster, target)
    await wait_complete(cluster, tmp_path, plan)
    await wait_identical_replicas(cluster, "resumed", {0: [kept, target]})
    assert await consume_all(cluster, "resumed") == values

    # The killed broker's replica was removed while it was down: it deletes it when back.
    async with zookeeper_of(cluster) as zk:
        pending = znodes.decode_pending_deletions(
            (await zk.get(znodes.pending_replica_deletions_path(controller)))[0])
    assert [(r.topic, r.partition) for r in pending] == [("resumed", 0)]
    await start_broker(cluster.directory, controller)
    await wait_partition_dirs(cluster, controller, "resumed", [])


async def test_a_target_broker_down_holds_the_reassignment_until_it_returns(cluster, tmp_path: Path):
    controller, _ = await controller_of(cluster)
    source, target = [b.id for b in cluster.brokers if b.id != controller][:2]
    await create_topic(cluster, "held", assignments={0: [source, controller]})
    values = await produce_values(cluster, "held", [b"h%d" % i for i in range(300)])
    plan = {("held", 0): [controller, target]}
    await pause(cluster, target)
    try:
        reassign(cluster, tmp_path, "execute", plan)

        async def started() -> bool | None:
            znode = await topic_znode(cluster, "held")
            return True if znode is not None and znode.adding == {0: [target]} else None

        await eventually(started, "the reassignment to start")
    finally:
        await stop_broker(cluster, target, "KILL")  # it is down before it ever caught up
    # Down: the reassignment holds (the source replica stays, the target is still being added).
    assert reassign(cluster, tmp_path, "verify", plan) == {"held-0": "in_progress"}
    held = await topic_znode(cluster, "held")
    assert held is not None and (held.adding, held.removing) == ({0: [target]}, {0: [source]})
    assert (await describe_topic(cluster, "held"))[0].leader in (source, controller)

    await start_broker(cluster.directory, target)
    await wait_complete(cluster, tmp_path, plan)
    await wait_partition_dirs(cluster, source, "held", [])
    await wait_identical_replicas(cluster, "held", {0: [controller, target]})
    assert await consume_all(cluster, "held") == values


async def test_a_broker_that_comes_back_leads_its_partitions_again_by_the_auto_rebalance(cluster):
    await create_topic(cluster, "balanced", partitions=4, replication_factor=2)
    assigned = {p: list(info.replicas) for p, info in (await describe_topic(cluster, "balanced")).items()}
    preferred_of_0 = assigned[0][0]
    await stop_broker(cluster, preferred_of_0, "TERM")
    async def moved_away() -> PartitionInfo | None:
        partition = (await describe_topic(cluster, "balanced"))[0]
        return partition if partition.leader == assigned[0][1] else None

    moved = await eventually(moved_away, f"partition 0 of balanced to move to broker {assigned[0][1]}")
    await start_broker(cluster.directory, preferred_of_0)

    async def rebalanced() -> bool | None:
        described = await describe_topic(cluster, "balanced")
        return True if all(described[p].leader == replicas[0] for p, replicas in assigned.items()) else None

    await eventually(rebalanced, f"broker {preferred_of_0} to lead partition 0 of balanced again")
    assert (await describe_topic(cluster, "balanced"))[0].leader_epoch > moved.leader_epoch
