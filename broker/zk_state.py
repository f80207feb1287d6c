"""What a broker itself reads and writes in ZooKeeper: topic configs, and the ISR of partitions it leads.

As in Kafka's ZooKeeper mode, a leader persists its ISR changes itself: a write of the partition's state
znode conditional on the version it last saw, then a sequential /isr_change_notification znode so the
controller propagates the change with UpdateMetadata.
"""

from __future__ import annotations

import contextlib
import logging

from broker.log.checkpoint import TopicPartition
from controller import zkdata
from controller.zk import BadVersionError, NodeExistsError, NoNodeError, ZkClient
from controller.zkdata import LeaderIsrAndControllerEpoch

log = logging.getLogger(__name__)


class BrokerZkState:
    """A broker's own ZooKeeper reads and writes (the controller has its own)."""

    def __init__(self, zk: ZkClient) -> None:
        self.zk = zk

    async def topic_config(self, topic: str) -> dict[str, str]:
        """The topic's config overrides (empty if none were set)."""
        try:
            data, _stat = await self.zk.get(zkdata.topic_config_path(topic))
        except NoNodeError:
            return {}
        return zkdata.decode_topic_config(data)

    async def mark_topic_for_deletion(self, topic: str) -> None:
        """Create /admin/delete_topics/<topic>, as Kafka's DeleteTopics does; the controller deletes the topic."""
        with contextlib.suppress(NodeExistsError):  # already marked
            await self.zk.create(zkdata.delete_topic_path(topic), makepath=True)

    async def write_isr(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> int | None:
        """Write ``state`` if the state znode is still at ``state.zk_version``; returns the new version,
        or None when someone else (the controller) changed it first: the leader's view is stale and it
        must wait for the controller's LeaderAndIsr."""
        path = zkdata.partition_state_path(tp.topic, tp.partition)
        try:
            stat = await self.zk.set(path, zkdata.encode_partition_state(state), version=state.zk_version)
        except BadVersionError:
            data, current = await self.zk.get(path)
            stored = zkdata.decode_partition_state(data, current.version)
            # An earlier attempt may have written exactly this state before its answer was lost (Kafka's
            # checkLeaderAndIsrZkData).
            if (stored.leader, stored.leader_epoch, tuple(stored.isr)) != (state.leader, state.leader_epoch,
                                                                          tuple(state.isr)):
                log.info("%s: cached state znode version %d is stale (now %d); ISR update skipped", tp,
                         state.zk_version, current.version)
                return None
            stat = current
        await self.zk.create(zkdata.isr_change_sequence_path(), zkdata.encode_isr_change([(tp.topic, tp.partition)]),
                             sequence=True, makepath=True)
        return stat.version
