"""The operator's tools on a running cluster of real brokers:

- `replica-verification --once` agrees on a healthy cluster, and finds the replica whose segment was altered on
  disk (a flipped bit in one record: its batch no longer matches its CRC);
- `topic alter --partitions` adds partitions placed as in a topic created with that many, and refuses fewer;
- `topic describe` filters: under-replicated, unavailable and under-min-ISR partitions;
- `state-change-log merge` tells one partition's story across the brokers and the controller, in time order.
"""

from __future__ import annotations

import json
from pathlib import Path

from client.cluster import start_broker
from protocol.state_change import STATE_CHANGE_LOG
from tests.integration.clusterutil import (
    cli,
    cluster_fixture,
    controller_of,
    create_topic,
    describe_topic,
    produce_values,
    stop_broker,
    wait_identical_replicas,
)
from tests.polling import eventually

cluster = cluster_fixture(brokers=3, configs={"auto.leader.rebalance.enable": "false",
                                               "controlled.shutdown.retry.backoff.ms": "200"})


def verification(cluster, pattern: str) -> tuple[int, dict]:
    result = cli("replica-verification", "--once", "--topic-white-list", pattern, "--json", "--timeout-ms", "10000",
                 "--dir", str(cluster.directory), check=False)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


async def test_replica_verification_agrees_on_a_healthy_cluster_and_finds_an_altered_segment(cluster):
    await create_topic(cluster, "verified", partitions=2, replication_factor=3)
    await create_topic(cluster, "altered", partitions=1, replication_factor=3)
    for topic in ("verified", "altered"):
        await produce_values(cluster, topic, [b"%s-%04d" % (topic.encode(), i) for i in range(500)])
        await wait_identical_replicas(cluster, topic, {p: [1, 2, 3] for p in (await describe_topic(cluster, topic))})
    code, report = verification(cluster, "verified|altered")
    assert (code, report["ok"], report["mismatches"], report["partitions"]) == (0, True, [], 3)
    text = cli("replica-verification", "--once", "--topic-white-list", "verified", "--dir", str(cluster.directory))
    assert "max lag is 0 for partition" in text.stdout
    assert "every replica agrees up to the high watermark" in text.stdout

    leader = (await describe_topic(cluster, "altered"))[0].leader
    follower = next(b for b in (1, 2, 3) if b != leader)
    segment = Path(cluster.broker(follower).log_dir) / "altered-0" / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    at = data.index(b"altered-0250")
    data[at + 11] ^= 0x01  # "altered-0250" becomes "altered-0251" on that replica only
    segment.write_bytes(bytes(data))

    code, report = verification(cluster, "altered")
    assert code == 1 and not report["ok"]
    assert len(report["mismatches"]) == 1, report
    assert f"replica {follower}'s batch at offset" in report["mismatches"][0]
    assert "does not match its CRC" in report["mismatches"][0]
    code, report = verification(cluster, "verified")  # the other topic is unaffected
    assert code == 0


async def test_partitions_are_added_where_the_assignment_puts_them_and_never_removed(cluster):
    await create_topic(cluster, "growing", partitions=2, replication_factor=2)
    result = cli("topic", "alter", "growing", "--partitions", "5", "--dir", str(cluster.directory))
    assert result.stdout.strip() == "Topic growing has 5 partitions."
    described = await describe_topic(cluster, "growing")
    assert {p: list(info.replicas) for p, info in described.items()} == {
        0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3], 4: [2, 1]}
    assert all(info.leader == info.replicas[0] for info in described.values())
    await produce_values(cluster, "growing", [b"g%d" % i for i in range(100)])
    fewer = cli("topic", "alter", "growing", "--partitions", "3", "--dir", str(cluster.directory), check=False)
    assert fewer.returncode == 1
    assert "INVALID_PARTITIONS: Topic currently has 5 partitions, which is higher than the requested 3." in fewer.stderr
    assert len(await describe_topic(cluster, "growing")) == 5


async def test_describe_filters_and_the_merged_state_change_log(cluster):
    controller, _ = await controller_of(cluster)
    down = next(b.id for b in cluster.brokers if b.id != controller)
    kept = next(b.id for b in cluster.brokers if b.id not in (controller, down))
    await create_topic(cluster, "filtered", assignments={0: [controller, down], 1: [kept, controller]},
                       configs={"min.insync.replicas": "2"})
    await create_topic(cluster, "stranded", assignments={0: [down]})
    await stop_broker(cluster, down)
    try:
        def described(topic: str, *flags: str) -> list[int]:
            result = cli("topic", "describe", topic, *flags, "--json", "--dir", str(cluster.directory))
            return [entry["partition"] for entry in json.loads(result.stdout)]

        async def shown() -> bool | None:  # the metadata reaches every broker a moment after the change
            return True if described("stranded", "--unavailable-partitions") == [0] else None

        await eventually(shown, "the partition on the stopped broker to be unavailable")
        assert described("filtered") == [0, 1]
        assert described("filtered", "--under-replicated-partitions") == [0]
        assert described("filtered", "--under-min-isr-partitions") == [0]
        assert described("filtered", "--unavailable-partitions") == []
        assert described("stranded", "--unavailable-partitions") == [0]
        assert described("stranded", "--under-min-isr-partitions") == [0]  # no leader
        assert described("stranded", "--under-replicated-partitions") == []  # the ISR keeps its last member
        text = cli("topic", "describe", "stranded", "--unavailable-partitions", "--dir", str(cluster.directory))
        assert text.stdout.splitlines() == [  # the leader epoch went up when the partition went offline
            f"\tTopic: stranded\tPartition: 0\tLeader: none\tReplicas: {down}\tIsr: {down}\tLeaderEpoch: 1"]
    finally:
        await start_broker(cluster.directory, down)

    logs = [str(Path(b.log_dir) / STATE_CHANGE_LOG) for b in cluster.brokers]
    merged = cli("state-change-log", "merge", "--logs", ",".join(logs), "--topic", "filtered", "--partitions", "0",
                 "--json")
    entries = [json.loads(line) for line in merged.stdout.splitlines()]
    assert entries and all((e["topic"], e["partition"]) == ("filtered", 0) for e in entries)
    assert [e["time_ms"] for e in entries] == sorted(e["time_ms"] for e in entries)
    assert {e["broker"] for e in entries} == {controller, down}  # the controller and both replicas tell it
    assert entries[0]["source"] == "controller" and entries[0]["reason"] == "topic created"
    assert any(e["reason"].startswith("controlled shutdown of broker") for e in entries)
    text = cli("state-change-log", "merge", *logs, "--topic", "filtered", "--partitions", "0")
    assert len(text.stdout.splitlines()) == len(entries)

    async def back_in_isr() -> bool | None:
        return True if down in (await describe_topic(cluster, "filtered"))[0].isr else None

    await eventually(back_in_isr, f"broker {down} to rejoin the ISR of filtered-0")
