"""Replicas identical on disk: after a few thousand acks=all records to a topic with 3 partitions and
replication factor 3, with small segments (topic config segment.bytes) so every partition rolls several times,
all replicas report the same LEO and HW, and every replica holds the same segment files, byte for byte, and
the same leader-epoch-checkpoint. The segments hold exactly the acknowledged records, in offset order.
Every broker also logs its state changes as JSON lines in state-change.log.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from client.cluster import ClusterState
from client.producer import Producer
from protocol.apis.replicas import DescribedReplica
from protocol.records import decode_records
from protocol.state_change import STATE_CHANGE_LOG
from tests.integration.clusterutil import cluster_fixture, connect, controller_of, create_topic, describe
from tests.polling import eventually

cluster = cluster_fixture(brokers=3)

TOPIC = "identical"
PARTITIONS = 3
RECORDS = 3000
SEGMENT_BYTES = 16384


def partition_dir(cluster: ClusterState, broker_id: int, partition: int) -> Path:
    return Path(cluster.broker(broker_id).log_dir) / f"{TOPIC}-{partition}"


async def test_replicas_converge_to_identical_segment_files(cluster):
    await create_topic(cluster, TOPIC, partitions=PARTITIONS, replication_factor=3,
                       configs={"segment.bytes": str(SEGMENT_BYTES)})
    sent: dict[tuple[int, int], tuple[bytes, bytes]] = {}
    async with Producer(cluster.bootstrap_servers, acks="all", batch_size=2048, linger_ms=2) as producer:
        pending = []
        for i in range(RECORDS):
            key, value = f"key-{i % 97}".encode(), f"value-{i:05d}-".encode() + b"x" * (i % 50)
            pending.append((await producer.send(TOPIC, value, key=key), key, value))
        await producer.flush()
        for future, key, value in pending:
            ack = future.result()
            sent[(ack.partition, ack.offset)] = (key, value)
    assert len(sent) == RECORDS

    brokers = [b.id for b in cluster.brokers]
    async with connect(cluster.broker(1)) as c1, connect(cluster.broker(2)) as c2, connect(cluster.broker(3)) as c3:
        connections = dict(zip(brokers, (c1, c2, c3), strict=True))
        last: dict[int, dict[int, DescribedReplica]] = {}

        async def converged() -> dict[int, dict[int, DescribedReplica]] | None:
            answers = await asyncio.gather(*(describe(c, TOPIC) for c in connections.values()))
            last.update(zip(connections, answers, strict=True))
            for partition in range(PARTITIONS):
                states = [last[b].get(partition) for b in brokers]
                if any(s is None for s in states):
                    return None
                if len({(s.log_end_offset, s.high_watermark) for s in states if s is not None}) != 1:
                    return None
                if states[0] is not None and states[0].log_end_offset != states[0].high_watermark:
                    return None
                [leader] = [s for s in states if s is not None and s.role == "leader"]
                if any(f.log_end_offset != leader.log_end_offset for f in leader.followers):
                    return None
            return dict(last)

        def progress() -> str:
            return "every replica to report the same LEO and HW: " + "; ".join(
                f"broker {b} p{s.partition} {s.role} LEO {s.log_end_offset} HW {s.high_watermark}"
                for b, states in last.items() for s in states.values())

        described = await eventually(converged, progress)

    leos = {p: described[1][p].log_end_offset for p in range(PARTITIONS)}
    assert sum(leos.values()) == RECORDS
    assert leos == {p: sum(1 for q, _ in sent if q == p) for p in range(PARTITIONS)}

    for partition in range(PARTITIONS):
        directories = {b: partition_dir(cluster, b, partition) for b in brokers}
        segment_names = {b: sorted(path.name for path in d.glob("*.log")) for b, d in directories.items()}
        reference = segment_names[brokers[0]]
        assert len(reference) >= 3, f"partition {partition} should have rolled several segments: {reference}"
        for broker_id, names in segment_names.items():
            assert names == reference, f"partition {partition}: broker {broker_id} has {names}, not {reference}"

        for name in reference:
            contents = {b: (d / name).read_bytes() for b, d in directories.items()}
            sizes = {b: len(data) for b, data in contents.items()}
            assert len(set(contents.values())) == 1, f"{TOPIC}-{partition}/{name} differs between brokers: {sizes}"
            assert 0 < sizes[brokers[0]] <= SEGMENT_BYTES

        checkpoints = {b: (d / "leader-epoch-checkpoint").read_text() for b, d in directories.items()}
        assert len(set(checkpoints.values())) == 1, f"partition {partition}: {checkpoints}"
        assert checkpoints[brokers[0]].splitlines() == ["0", "1", "0 0"], "version 0, one entry: epoch 0 at 0"

        # The segments, read in order, hold exactly the acknowledged records of the partition.
        records = [r for name in reference for r in decode_records((directories[brokers[0]] / name).read_bytes())]
        assert [r.offset for r in records] == list(range(leos[partition]))
        expected = {offset: kv for (p, offset), kv in sent.items() if p == partition}
        assert [(r.key, r.value) for r in records] == [expected[o] for o in range(leos[partition])]

        # Each segment file is named after the offset of its first record.
        for name in reference:
            first = next(iter(decode_records((directories[brokers[0]] / name).read_bytes())))
            assert name == f"{first.offset:020d}.log"


async def test_every_broker_logs_state_changes_as_json_lines(cluster):
    """Each broker's state-change.log holds one parseable line per state change it made or received:
    the controller's topic-creation states and every broker becoming leader or follower."""
    topic = "state-changes"
    await create_topic(cluster, topic, partitions=2, replication_factor=3)
    controller_id, controller_epoch = await controller_of(cluster)

    def lines(broker_id: int) -> list[dict]:
        path = Path(cluster.broker(broker_id).log_dir) / STATE_CHANGE_LOG
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def about_topic(broker_id: int, source: str) -> list[dict]:
        return [entry for entry in lines(broker_id) if entry["topic"] == topic and entry["source"] == source]

    async def every_broker_logged() -> bool | None:
        return all(len(about_topic(b.id, "broker")) >= 2 for b in cluster.brokers) or None

    await eventually(every_broker_logged, "every broker to log becoming leader or follower")
    created = about_topic(controller_id, "controller")
    assert sorted(entry["partition"] for entry in created) == [0, 1]
    for entry in created:
        assert entry["controller_epoch"] == controller_epoch and entry["leader_epoch"] == 0
        assert sorted(entry["isr"]) == [1, 2, 3] and entry["reason"]
    for broker in cluster.brokers:
        for entry in about_topic(broker.id, "broker"):
            assert entry["broker"] == broker.id
            role = "leader" if entry["leader"] == broker.id else "follower"
            assert entry["reason"].startswith(f"became {role}")
            assert {"time_ms", "controller_epoch", "leader_epoch", "isr"} <= entry.keys()
