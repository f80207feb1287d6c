"""Leader elections by hand on real brokers (`minikafka leader-election`), automatic rebalance off.

Seed 001's walk-through, scaled from 8 brokers to 4: topic1 has 4 partitions with replication factor 3, partition
i preferring broker i + 1. With brokers 1 and 2 stopped, broker 3 leads three partitions; broker 1 comes back and
rejoins the ISRs but leads nothing; the preferred replica election makes it lead partition 0 again, while
partition 1 is not eligible (its preferred replica 2 is down) and the others are led by their preferred replicas
already. Broker 2 coming back changes nothing until the election runs again; then every broker leads one
partition. An unclean election by hand gives a partition whose ISR is gone a leader from outside it.
"""

from __future__ import annotations

import json
from pathlib import Path

from client.cluster import start_broker
from tests.integration.clusterutil import cli, cluster_fixture, create_topic, describe_topic, stop_broker
from tests.polling import eventually

cluster = cluster_fixture(brokers=4, configs={"auto.leader.rebalance.enable": "false",
                                               "controlled.shutdown.retry.backoff.ms": "200"})


def election(cluster, *args: str) -> tuple[int, dict[str, dict]]:
    result = cli("leader-election", *args, "--json", "--dir", str(cluster.directory), check=False)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, {f"{e['topic']}-{e['partition']}": e for e in json.loads(result.stdout)}


async def leaders(cluster, topic: str) -> dict[int, int]:
    return {p: info.leader for p, info in (await describe_topic(cluster, topic)).items()}


async def wait_leaders(cluster, topic: str, expected: dict[int, int]) -> dict[int, int]:
    """Wait until the cluster's metadata shows these leaders (it reaches every broker a moment after a change)."""
    seen: dict[int, int] = {}

    async def shown() -> bool | None:
        seen.update(await leaders(cluster, topic))
        return True if seen == expected else None

    await eventually(shown, lambda: f"leaders {expected} of {topic}, the cluster reports {seen}")
    return seen


async def wait_in_isr(cluster, topic: str, broker_id: int, partitions: list[int]) -> None:
    async def joined() -> bool | None:
        described = await describe_topic(cluster, topic)
        return True if all(broker_id in described[p].isr for p in partitions) else None

    await eventually(joined, f"broker {broker_id} to rejoin the ISRs of {topic} {partitions}")


async def test_seed_001_preferred_replica_election_scaled_to_four_brokers(cluster, tmp_path: Path):
    await create_topic(cluster, "topic1", partitions=4, replication_factor=3)
    described = await describe_topic(cluster, "topic1")
    assert {p: list(info.replicas) for p, info in described.items()} == {
        0: [1, 2, 3], 1: [2, 3, 4], 2: [3, 4, 1], 3: [4, 1, 2]}
    await wait_leaders(cluster, "topic1", {0: 1, 1: 2, 2: 3, 3: 4})

    for broker_id in (1, 2):
        await stop_broker(cluster, broker_id, "TERM")
    await wait_leaders(cluster, "topic1", {0: 3, 1: 3, 2: 3, 3: 4})

    await start_broker(cluster.directory, 1)
    await wait_in_isr(cluster, "topic1", 1, [0, 2, 3])
    before = await describe_topic(cluster, "topic1")
    assert {p: info.leader for p, info in before.items()} == {0: 3, 1: 3, 2: 3, 3: 4}  # 1 leads nothing

    code, outcomes = election(cluster, "--election-type", "preferred", "--all-topic-partitions")
    assert code == 1  # partition 1 could not be elected
    assert {name: e["outcome"] for name, e in outcomes.items()} == {
        "topic1-0": "elected", "topic1-1": "not eligible", "topic1-2": "already leader", "topic1-3": "already leader"}
    assert outcomes["topic1-1"]["error"] == "PREFERRED_LEADER_NOT_AVAILABLE"
    assert outcomes["topic1-1"]["message"] == "preferred replica 2 is not live"
    await wait_leaders(cluster, "topic1", {0: 1, 1: 3, 2: 3, 3: 4})
    after = await describe_topic(cluster, "topic1")
    assert after[0].leader_epoch == before[0].leader_epoch + 1  # the election bumped the leader epoch
    assert all(after[p].leader_epoch == before[p].leader_epoch for p in (1, 2, 3))
    assert set(after[0].isr) == set(before[0].isr)

    await start_broker(cluster.directory, 2)
    await wait_in_isr(cluster, "topic1", 2, [0, 1, 3])
    assert await leaders(cluster, "topic1") == {0: 1, 1: 3, 2: 3, 3: 4}  # nothing moves by itself

    plan = tmp_path / "election.json"
    plan.write_text(json.dumps({"partitions": [{"topic": "topic1", "partition": 1}]}))
    code, outcomes = election(cluster, "--election-type", "preferred", "--path-to-json-file", str(plan))
    assert code == 0 and outcomes["topic1-1"]["outcome"] == "elected"
    await wait_leaders(cluster, "topic1", {0: 1, 1: 2, 2: 3, 3: 4})  # every broker leads one partition
    code, outcomes = election(cluster, "--election-type", "preferred", "--topic", "topic1", "--partition", "3")
    assert code == 0 and outcomes["topic1-3"]["outcome"] == "already leader"


async def test_an_unclean_election_by_hand_elects_a_replica_outside_the_isr(cluster):
    await create_topic(cluster, "lonely", assignments={0: [3, 4]})
    await wait_in_isr(cluster, "lonely", 4, [0])
    # Broker 4 shuts down first (it leaves the ISR), then broker 3, the ISR's last member: the partition is offline.
    for broker_id in (4, 3):
        await stop_broker(cluster, broker_id, "TERM")
    await start_broker(cluster.directory, 4)
    await wait_leaders(cluster, "lonely", {0: -1})
    offline = (await describe_topic(cluster, "lonely"))[0]
    assert (offline.leader, list(offline.isr)) == (-1, [3])

    code, outcomes = election(cluster, "--election-type", "preferred", "--topic", "lonely", "--partition", "0")
    assert code == 1 and outcomes["lonely-0"]["message"] == "preferred replica 3 is not live"
    code, outcomes = election(cluster, "--election-type", "unclean", "--topic", "lonely", "--partition", "0")
    assert code == 0 and outcomes["lonely-0"]["outcome"] == "elected"
    assert "not in the ISR [3]" in outcomes["lonely-0"]["message"]
    await wait_leaders(cluster, "lonely", {0: 4})
    elected = (await describe_topic(cluster, "lonely"))[0]
    assert (elected.leader, list(elected.isr), elected.leader_epoch) == (4, [4], offline.leader_epoch + 1)
    code, outcomes = election(cluster, "--election-type", "unclean", "--topic", "lonely", "--partition", "0")
    assert code == 0 and outcomes["lonely-0"]["outcome"] == "already leader"
    await start_broker(cluster.directory, 3)
