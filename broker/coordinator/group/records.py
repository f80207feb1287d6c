"""A group's state as the records of __consumer_offsets that keep it (Kafka's GroupMetadataManager's
groupMetadataValue and offset records), and the errors a client sees when appending them fails."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from broker.coordinator.group.effects import Record
from broker.coordinator.group.group import Group
from protocol.consumer_offsets import (
    NO_TIMESTAMP,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitValue,
    group_metadata_record,
    group_metadata_tombstone,
    offset_commit_record,
    offset_commit_tombstone,
)
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition


def group_metadata_value(group: Group, assignment: Mapping[str, bytes]) -> GroupMetadataValue:
    """The group's metadata with each member's subscription (its metadata for the chosen protocol) and the
    member's entry of `assignment`."""
    protocol = group.protocol_name
    if group.members and protocol is None:
        raise ValueError(f"group {group.group_id} has members but no protocol")
    members = tuple(
        MemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                       m.session_timeout_ms, m.metadata(protocol or ""), assignment[m.member_id])
        for m in group.members.values())
    timestamp = NO_TIMESTAMP if group.state_timestamp is None else group.state_timestamp
    return GroupMetadataValue(group.protocol_type or "", group.generation_id, protocol, group.leader_id, timestamp,
                              members)


def group_records(group: Group, assignment: Mapping[str, bytes]) -> list[Record]:
    return [group_metadata_record(group.group_id, group_metadata_value(group, assignment))]


def offset_records(group_id: str, offsets: Mapping[TopicPartition, OffsetCommitValue]) -> list[Record]:
    return [offset_commit_record(group_id, tp.topic, tp.partition, value) for tp, value in offsets.items()]


def tombstones(group_id: str, partitions: Iterable[TopicPartition], group_too: bool) -> list[Record]:
    """Tombstones for the offsets of `partitions`, and for the group itself if `group_too`."""
    records: list[Record] = [offset_commit_tombstone(group_id, tp.topic, tp.partition) for tp in partitions]
    if group_too:
        records.append(group_metadata_tombstone(group_id))
    return records


def group_store_error(append_error: ErrorCode) -> ErrorCode:
    """What a SyncGroup (or a static member's JoinGroup) answers when writing the group failed with
    `append_error` (Kafka's storeGroup)."""
    return _GROUP_STORE_ERRORS.get(append_error, append_error)


def offset_commit_error(append_error: ErrorCode) -> ErrorCode:
    """What an OffsetCommit answers when writing its offsets failed with `append_error`."""
    return _OFFSET_COMMIT_ERRORS.get(append_error, append_error)


_GROUP_STORE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}

_OFFSET_COMMIT_ERRORS = {
    ErrorCode.NETWORK_EXCEPTION: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}
