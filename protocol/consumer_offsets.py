"""The records of Kafka's ``__consumer_offsets`` topic, byte for byte, and which of its partitions holds a group.

A record's key and value each start with an int16 version. Key versions 0 and 1 are an OffsetCommitKey (group,
topic, partition), version 2 a GroupMetadataKey (group); any other key version is a record this coordinator does
not read (Kafka skips them with a warning). Values, per Kafka 3.9's specs (specs.json's data section):

- OffsetCommitValue v0: offset, metadata, commit timestamp; v1 adds an expire timestamp; v2 drops it again; v3 adds
  the leader epoch; v4 is v3 in the flexible encoding. Kafka 3.9 writes v3, or v1 when the commit carries an
  explicit retention (an expire timestamp).
- GroupMetadataValue v0: protocol type, generation, protocol, leader and members (member id, client id, client host,
  session timeout, subscription, assignment); v1 adds each member's rebalance timeout, v2 the group's current state
  timestamp, v3 each member's group.instance.id; v4 is v3 in the flexible encoding. Kafka 3.9 writes v3.

A null value is a tombstone: the offset, or the group, is deleted. Kafka writes key version 1 for offsets.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.kafka import data

OFFSETS_TOPIC = "__consumer_offsets"
NO_TIMESTAMP = -1
NO_LEADER_EPOCH = -1

OFFSET_COMMIT_KEY = "OffsetCommitKey"
GROUP_METADATA_KEY = "GroupMetadataKey"
OFFSET_COMMIT_VALUE = "OffsetCommitValue"
GROUP_METADATA_VALUE = "GroupMetadataValue"
OFFSET_COMMIT_KEY_WRITTEN = 1
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_WRITTEN = 3


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class UnknownKey:
    """A key of a version this coordinator does not read."""

    version: int


RecordKey = OffsetCommitKey | GroupMetadataKey | UnknownKey


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    """A committed offset: NO_LEADER_EPOCH and NO_TIMESTAMP (-1) stand for "none"."""

    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = NO_LEADER_EPOCH
    expire_timestamp: int = NO_TIMESTAMP


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """One member as a GroupMetadataValue keeps it; rebalance_timeout is -1 in a v0 record (which has none)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = NO_TIMESTAMP
    members: tuple[MemberMetadata, ...] = ()


# ------------------------------------------------------------------------------------------------ keys


def encode_offset_commit_key(key: OffsetCommitKey, version: int = OFFSET_COMMIT_KEY_WRITTEN) -> bytes:
    return data.encode(OFFSET_COMMIT_KEY, version, {"group": key.group, "topic": key.topic,
                                                    "partition": key.partition})


def encode_group_metadata_key(key: GroupMetadataKey) -> bytes:
    return data.encode(GROUP_METADATA_KEY, GROUP_METADATA_KEY_VERSION, {"group": key.group})


def decode_key(key: bytes) -> RecordKey:
    """The key of a record of __consumer_offsets; DataFormatError for bytes that do not hold one."""
    version = data.read_version(key)
    if version in data.versions(OFFSET_COMMIT_KEY):
        fields = data.decode(OFFSET_COMMIT_KEY, version, key)
        return OffsetCommitKey(fields["group"], fields["topic"], fields["partition"])
    if version in data.versions(GROUP_METADATA_KEY):
        return GroupMetadataKey(data.decode(GROUP_METADATA_KEY, version, key)["group"])
    return UnknownKey(version)


# ------------------------------------------------------------------------------------------------ offset values


def offset_commit_value_version(value: OffsetCommitValue) -> int:
    """The version Kafka 3.9 writes: 1 for a commit with an expire timestamp, else 3."""
    return 1 if value.expire_timestamp != NO_TIMESTAMP else 3


def encode_offset_commit_value(value: OffsetCommitValue, version: int | None = None) -> bytes:
    """The value at `version` (by default the one Kafka 3.9 writes); fields the version lacks are left out."""
    version = offset_commit_value_version(value) if version is None else version
    return data.encode(OFFSET_COMMIT_VALUE, version, {
        "offset": value.offset, "leader_epoch": value.leader_epoch, "metadata": value.metadata,
        "commit_timestamp": value.commit_timestamp, "expire_timestamp": value.expire_timestamp})


def decode_offset_commit_value(value: bytes) -> OffsetCommitValue:
    """An OffsetCommitValue of any version; DataFormatError for an unknown version or bad bytes."""
    fields = data.decode(OFFSET_COMMIT_VALUE, data.read_version(value), value)
    return OffsetCommitValue(fields["offset"], fields["metadata"], fields["commit_timestamp"], fields["leader_epoch"],
                             fields["expire_timestamp"])


# ------------------------------------------------------------------------------------------------ group values


def encode_group_metadata_value(value: GroupMetadataValue, version: int = GROUP_METADATA_VALUE_WRITTEN) -> bytes:
    """The value at `version` (by default v3, which Kafka 3.9 writes); fields the version lacks are left out."""
    return data.encode(GROUP_METADATA_VALUE, version, {
        "protocol_type": value.protocol_type, "generation": value.generation, "protocol": value.protocol,
        "leader": value.leader, "current_state_timestamp": value.current_state_timestamp,
        "members": [{
            "member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
            "client_host": m.client_host, "rebalance_timeout": m.rebalance_timeout,
            "session_timeout": m.session_timeout, "subscription": m.subscription, "assignment": m.assignment,
        } for m in value.members]})


def decode_group_metadata_value(value: bytes) -> GroupMetadataValue:
    """A GroupMetadataValue of any version; DataFormatError for an unknown version or bad bytes."""
    fields = data.decode(GROUP_METADATA_VALUE, data.read_version(value), value)
    members = tuple(
        MemberMetadata(m["member_id"], m["group_instance_id"], m["client_id"], m["client_host"],
                       m["rebalance_timeout"], m["session_timeout"], m["subscription"], m["assignment"])
        for m in fields["members"])
    return GroupMetadataValue(fields["protocol_type"], fields["generation"], fields["protocol"], fields["leader"],
                              fields["current_state_timestamp"], members)


# ------------------------------------------------------------------------------------------------ records


def offset_commit_record(group: str, topic: str, partition: int, value: OffsetCommitValue) -> tuple[bytes, bytes]:
    """The (key, value) Kafka 3.9 writes for a committed offset."""
    key = encode_offset_commit_key(OffsetCommitKey(group, topic, partition))
    return key, encode_offset_commit_value(value)


def offset_commit_tombstone(group: str, topic: str, partition: int) -> tuple[bytes, None]:
    """The (key, null) that deletes a committed offset."""
    return encode_offset_commit_key(OffsetCommitKey(group, topic, partition)), None


def group_metadata_record(group: str, value: GroupMetadataValue) -> tuple[bytes, bytes]:
    """The (key, value) Kafka 3.9 writes for a group's metadata."""
    return encode_group_metadata_key(GroupMetadataKey(group)), encode_group_metadata_value(value)


def group_metadata_tombstone(group: str) -> tuple[bytes, None]:
    """The (key, null) that deletes a group."""
    return encode_group_metadata_key(GroupMetadataKey(group)), None


# ------------------------------------------------------------------------------------------------ placement


def java_string_hash(text: str) -> int:
    """Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, as a signed 32-bit int."""
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, partition_count: int) -> int:
    """The partition of __consumer_offsets that holds `group_id`: Kafka's Utils.abs(groupId.hashCode) % count,
    where Utils.abs maps Integer.MIN_VALUE to 0."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partition_count
