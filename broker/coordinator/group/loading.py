"""Groups and offsets rebuilt from a partition of __consumer_offsets, as Kafka's GroupMetadataManager loads them
when its broker becomes the partition's leader.

Records are read in log order; the last record of a key wins and a tombstone deletes it. A group with metadata comes
back Stable with its members (each offering only the group's protocol, with its subscription) and their
assignments, or Empty without members; offsets of a group without metadata come back in an Empty group. Keys of
versions this coordinator does not read are skipped, as Kafka does. (Transactional offset commits are not read.)
"""

from __future__ import annotations

from collections.abc import Iterable

from broker.coordinator.group.effects import Record
from broker.coordinator.group.group import Group
from broker.coordinator.group.member import Member
from broker.coordinator.group.states import EMPTY, STABLE
from protocol.consumer_offsets import (
    NO_TIMESTAMP,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
)
from protocol.topic_partition import TopicPartition


def _group_from_value(group_id: str, value: GroupMetadataValue, now_ms: int) -> Group:
    group = Group(group_id, now_ms, STABLE if value.members else EMPTY)
    group.generation_id = value.generation
    group.protocol_type = value.protocol_type or None
    group.protocol_name = value.protocol
    group.state_timestamp = None if value.current_state_timestamp == NO_TIMESTAMP else value.current_state_timestamp
    for m in value.members:
        rebalance_timeout = m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout
        group.add(Member(m.member_id, m.group_instance_id, m.client_id, m.client_host, rebalance_timeout,
                         m.session_timeout, value.protocol_type, ((value.protocol or "", m.subscription),),
                         m.assignment))
    group.leader_id = value.leader
    group.subscribed_topics = group.compute_subscribed_topics()
    return group


def load_groups(records: Iterable[Record], now_ms: int) -> list[Group]:
    """The groups the records of one partition of __consumer_offsets hold, in log order."""
    values: dict[str, GroupMetadataValue] = {}
    offsets: dict[str, dict[TopicPartition, OffsetCommitValue]] = {}
    for key_bytes, value_bytes in records:
        key = decode_key(key_bytes)
        if isinstance(key, OffsetCommitKey):
            group_offsets = offsets.setdefault(key.group, {})
            tp = TopicPartition(key.topic, key.partition)
            if value_bytes is None:
                group_offsets.pop(tp, None)
            else:
                group_offsets[tp] = decode_offset_commit_value(value_bytes)
        elif isinstance(key, GroupMetadataKey):
            if value_bytes is None:
                values.pop(key.group, None)
            else:
                values[key.group] = decode_group_metadata_value(value_bytes)
    groups = {group_id: _group_from_value(group_id, value, now_ms) for group_id, value in values.items()}
    for group_id, group_offsets in offsets.items():
        if group_offsets or group_id in groups:
            groups.setdefault(group_id, Group(group_id, now_ms)).offsets.update(group_offsets)
    return list(groups.values())
