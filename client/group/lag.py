"""A consumer group's position per partition: its committed offset, the log end offset, the lag and the member
holding the partition, as kafka-consumer-groups --describe lists them (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from client.group.descriptions import GroupDescription, MemberDescription
from protocol.topic_partition import TopicPartition

MISSING = "-"


@dataclass(frozen=True, slots=True)
class PartitionRow:
    """One row of `--describe`: a partition of the group, its committed offset, log end offset and lag, and the
    member it is assigned to ("-" without one; None where a value is not known)."""

    group: str
    topic: str | None
    partition: int | None
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None


def offset_rows(described: GroupDescription, committed: Mapping[TopicPartition, int],
                log_ends: Mapping[TopicPartition, int]) -> list[PartitionRow]:
    """The rows of `--describe` (--offsets): the partitions of each member with an assignment (members with more
    partitions first), then the group's other committed partitions, without a member."""

    def row(tp: TopicPartition, member: MemberDescription | None) -> PartitionRow:
        offset, end = committed.get(tp), log_ends.get(tp)
        lag = None if offset is None or end is None else end - offset
        if member is None:
            return PartitionRow(described.group_id, tp.topic, tp.partition, offset, end, lag, MISSING, MISSING, MISSING)
        return PartitionRow(described.group_id, tp.topic, tp.partition, offset, end, lag, member.member_id,
                            member.host, member.client_id)

    rows, assigned = [], set()
    members = sorted((m for m in described.members if m.assignment), key=lambda m: -len(m.assignment))
    for member in members:
        rows += [row(tp, member) for tp in sorted(member.assignment)]
        assigned.update(member.assignment)
    return rows + [row(tp, None) for tp in sorted(set(committed) - assigned)]
