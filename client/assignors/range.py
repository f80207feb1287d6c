"""Kafka's RangeAssignor ("range"): topic by topic, each topic's partitions split in consecutive ranges over the
members subscribed to it, in member order, the first members taking one more when they do not divide evenly. Members
subscribed to the same topics get the same ranges of each: co-partitioned topics stay together."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from client.assignors.base import Member, MemberAssignments, StatelessAssignor, member_order
from protocol.topic_partition import TopicPartition

RANGE = "range"


class RangeAssignor(StatelessAssignor):
    """Consecutive ranges of each topic's partitions."""

    name = RANGE

    def assign(self, partitions_per_topic: Mapping[str, int], members: Sequence[Member]) -> MemberAssignments:
        assignment: MemberAssignments = {m.member_id: [] for m in members}
        for topic, count in sorted(partitions_per_topic.items()):
            consumers = sorted((m for m in members if topic in m.subscription.topics), key=member_order)
            if not consumers or count <= 0:
                continue
            per_consumer, extra = divmod(count, len(consumers))
            start = 0
            for index, consumer in enumerate(consumers):
                length = per_consumer + (1 if index < extra else 0)
                assignment[consumer.member_id] += [TopicPartition(topic, p) for p in range(start, start + length)]
                start += length
        return assignment
