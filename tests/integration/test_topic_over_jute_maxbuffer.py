"""A topic whose partition states do not fit in one ZooKeeper request, on real processes: ZooKeeper runs with
-Djute.maxbuffer=65536 (it drops the connection of a client whose request is larger) and the brokers know it. The
topic is created with every partition led, deleted to the last znode and replica, and created again with fresh data.
"""

from __future__ import annotations

from client.cluster import ClusterState
from tests.integration.clusterutil import (
    cli,
    cluster_fixture,
    consume_all,
    create_topic,
    metadata_leaders,
    produce_values,
    topic_znode,
    wait_partition_dirs,
    zookeeper_of,
)
from tests.polling import eventually
from zk import znodes
from zk.ops import CheckOp, CreateOp, multi_bytes
from zk.znodes import LeaderIsrAndControllerEpoch

JUTE_MAXBUFFER = 65536
PARTITIONS = 600
TOPIC = "wide"
cluster = cluster_fixture(
    brokers=3,
    configs={"controlled.shutdown.retry.backoff.ms": "200", "auto.leader.rebalance.enable": "false"},
    zookeeper_jvm_flags=[f"-Djute.maxbuffer={JUTE_MAXBUFFER}"],
)


def one_transaction_bytes(partitions: int) -> int:
    """The request that created a topic's partition znodes and states in one transaction."""
    state = znodes.encode_partition_state(LeaderIsrAndControllerEpoch(leader=1, leader_epoch=0, isr=(1, 2, 3),
                                                                      controller_epoch=1))
    ops = [CheckOp(znodes.CONTROLLER_EPOCH_PATH, 1), CreateOp(znodes.topic_partitions_path(TOPIC))]
    for p in range(partitions):
        ops += [CreateOp(znodes.topic_partition_path(TOPIC, p)), CreateOp(znodes.partition_state_path(TOPIC, p), state)]
    return multi_bytes(ops, "/minikafka")


async def test_a_topic_over_zookeepers_request_limit_is_created_deleted_and_created_again(cluster: ClusterState):
    # Over twice the limit: ZooKeeper also reads requests up to jute.maxbuffer + zookeeper.jute.maxbuffer.extrasize.
    assert one_transaction_bytes(PARTITIONS) > 2 * JUTE_MAXBUFFER

    await create_topic(cluster, TOPIC, partitions=PARTITIONS, replication_factor=3)
    live = {b.id for b in cluster.brokers}

    async def all_led() -> dict[int, int] | None:
        leaders = await metadata_leaders(cluster, TOPIC)
        return leaders if len(leaders) == PARTITIONS and set(leaders.values()) <= live else None

    await eventually(all_led, f"every partition of {TOPIC} to have a live leader")
    old = await topic_znode(cluster, TOPIC)
    assert old is not None and len(old.partitions) == PARTITIONS
    old_values = await produce_values(cluster, TOPIC, [b"old-%d" % i for i in range(100)])

    result = cli("topic", "delete", TOPIC, "--dir", str(cluster.directory))
    assert result.stdout.strip() == f"Deleted topic {TOPIC}."
    async with zookeeper_of(cluster) as zk:
        assert await zk.exists(znodes.topic_path(TOPIC)) is None
        assert await zk.exists(znodes.topic_partitions_path(TOPIC)) is None
        assert await zk.get_children(znodes.DELETE_TOPICS_PATH) == []
    for broker in cluster.brokers:
        await wait_partition_dirs(cluster, broker.id, TOPIC, [])

    await create_topic(cluster, TOPIC, partitions=PARTITIONS, replication_factor=3)
    await eventually(all_led, f"every partition of the new {TOPIC} to have a live leader")
    new = await topic_znode(cluster, TOPIC)
    assert new is not None and new.topic_id not in (None, old.topic_id)
    new_values = await produce_values(cluster, TOPIC, [b"new-%d" % i for i in range(100)])
    assert await consume_all(cluster, TOPIC) == new_values
    assert not set(old_values.values()) & set(new_values.values())
