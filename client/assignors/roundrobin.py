"""Kafka's RoundRobinAssignor ("roundrobin"): every subscribed partition, topics in name order, handed to the members
in turn (in member order), skipping a member not subscribed to the partition's topic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from client.assignors.base import Member, MemberAssignments, StatelessAssignor, member_order
from protocol.topic_partition import TopicPartition

ROUNDROBIN = "roundrobin"


class RoundRobinAssignor(StatelessAssignor):
    """All partitions dealt to the members in turn."""

    name = ROUNDROBIN

    def assign(self, partitions_per_topic: Mapping[str, int], members: Sequence[Member]) -> MemberAssignments:
        assignment: MemberAssignments = {m.member_id: [] for m in members}
        ordered = sorted(members, key=member_order)
        topics = sorted({topic for m in members for topic in m.subscription.topics} & partitions_per_topic.keys())
        turn = 0
        for topic in topics:
            for partition in range(partitions_per_topic[topic]):
                while topic not in ordered[turn % len(ordered)].subscription.topics:
                    turn += 1
                assignment[ordered[turn % len(ordered)].member_id].append(TopicPartition(topic, partition))
                turn += 1
        return assignment
