"""A follower that comes back rejoins every ISR of a topic of hundreds of partitions on real brokers, and its leaders
tell the controller in a few ISR change notifications, not one per partition."""

from __future__ import annotations

from client.cluster import ClusterState, start_broker
from tests.integration.clusterutil import (
    cluster_fixture,
    controller_of,
    create_topic,
    describe_topic,
    stop_broker,
    zookeeper_of,
)
from tests.polling import eventually
from zk import znodes

TOPIC = "wide"
PARTITIONS = 300
cluster = cluster_fixture(brokers=3, configs={"zookeeper.session.timeout.ms": "4000",
                                             "replica.lag.time.max.ms": "2000"})


async def isrs_without(cluster: ClusterState, broker_id: int) -> int:
    """How many partitions' ISRs (as the metadata shows them) leave `broker_id` out."""
    return sum(broker_id not in p.isr for p in (await describe_topic(cluster, TOPIC)).values())


async def notifications_processed(cluster: ClusterState) -> int | None:
    """The change version of /isr_change_notification once the controller has deleted every notification (each
    notification created and deleted moves it by two), else None."""
    async with zookeeper_of(cluster) as zk:
        stat = await zk.exists(znodes.ISR_CHANGE_NOTIFICATION_PATH)
    assert stat is not None
    return stat.cversion if stat.num_children == 0 else None


async def test_a_restarted_follower_rejoins_hundreds_of_isrs_named_in_a_few_notifications(cluster: ClusterState):
    await create_topic(cluster, TOPIC, partitions=PARTITIONS, replication_factor=3)
    controller, _epoch = await controller_of(cluster)
    follower = next(b.id for b in cluster.brokers if b.id != controller)

    async def full_isrs() -> bool | None:
        return True if await isrs_without(cluster, follower) == 0 else None

    await eventually(full_isrs, f"every ISR of {TOPIC} to be full")
    await stop_broker(cluster, follower, "KILL")

    async def follower_left_every_isr() -> bool | None:
        return True if await isrs_without(cluster, follower) == PARTITIONS else None

    await eventually(follower_left_every_isr, f"broker {follower} to leave every ISR")
    before = await eventually(lambda: notifications_processed(cluster), "the shrink notifications to be processed")

    await start_broker(cluster.directory, follower)
    await eventually(full_isrs, lambda: f"broker {follower} to rejoin every ISR of {TOPIC}", timeout_s=60)
    after = await eventually(lambda: notifications_processed(cluster), "the expand notifications to be processed")
    written = (after - before) // 2
    assert 1 <= written <= PARTITIONS // 10, f"{written} ISR change notifications for {PARTITIONS} partitions"
