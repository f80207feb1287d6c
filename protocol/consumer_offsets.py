"""The records of Kafka's ``__consumer_offsets`` topic, byte for byte, and which of its partitions holds a group.

A record's key and value each start with an int16 version. Key versions 0 and 1 are an OffsetCommitKey (group,
topic, partition), version 2 a GroupMetadataKey (group); any other key version is a record this coordinator does
not read (Kafka skips them with a warning). Values, per Kafka 3.9's message specs:

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

from protocol.data_fields import DataFormatError, FieldReader, FieldWriter

OFFSETS_TOPIC = "__consumer_offsets"
NO_TIMESTAMP = -1
NO_LEADER_EPOCH = -1

OFFSET_COMMIT_KEY_VERSIONS = range(0, 2)
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSIONS = range(0, 5)
GROUP_METADATA_VALUE_VERSIONS = range(0, 5)
FLEXIBLE_FROM = 4  # both values: the first flexible version
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


def encode_offset_commit_key(key: OffsetCommitKey, version: int = 1) -> bytes:
    if version not in OFFSET_COMMIT_KEY_VERSIONS:
        raise ValueError(f"OffsetCommitKey has no version {version}")
    out = FieldWriter()
    out.int16(version)
    out.string(key.group)
    out.string(key.topic)
    out.int32(key.partition)
    return out.getvalue()


def encode_group_metadata_key(key: GroupMetadataKey) -> bytes:
    out = FieldWriter()
    out.int16(GROUP_METADATA_KEY_VERSION)
    out.string(key.group)
    return out.getvalue()


def decode_key(data: bytes) -> RecordKey:
    """The key of a record of __consumer_offsets; DataFormatError for bytes that do not hold one."""
    reader = FieldReader(data)
    version = reader.int16()
    if version in OFFSET_COMMIT_KEY_VERSIONS:
        return OffsetCommitKey(reader.string(), reader.string(), reader.int32())
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupMetadataKey(reader.string())
    return UnknownKey(version)


# ------------------------------------------------------------------------------------------------ offset values


def _versioned(data: bytes, versions: range, what: str) -> tuple[FieldReader, int]:
    """A reader past the value's version, and the version (DataFormatError for one outside `versions`)."""
    reader = FieldReader(data)
    version = reader.int16()
    if version not in versions:
        raise DataFormatError(f"unknown {what} version {version}")
    return reader, version


def offset_commit_value_version(value: OffsetCommitValue) -> int:
    """The version Kafka 3.9 writes: 1 for a commit with an expire timestamp, else 3."""
    return 1 if value.expire_timestamp != NO_TIMESTAMP else 3


def encode_offset_commit_value(value: OffsetCommitValue, version: int | None = None) -> bytes:
    """The value at `version` (by default the one Kafka 3.9 writes); fields the version lacks are left out."""
    version = offset_commit_value_version(value) if version is None else version
    if version not in OFFSET_COMMIT_VALUE_VERSIONS:
        raise ValueError(f"OffsetCommitValue has no version {version}")
    compact = version >= FLEXIBLE_FROM
    out = FieldWriter()
    out.int16(version)
    out.int64(value.offset)
    if version >= 3:
        out.int32(value.leader_epoch)
    out.string(value.metadata, compact)
    out.int64(value.commit_timestamp)
    if version == 1:
        out.int64(value.expire_timestamp)
    if compact:
        out.empty_tagged_fields()
    return out.getvalue()


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    """An OffsetCommitValue of any version; DataFormatError for an unknown version or bad bytes."""
    reader, version = _versioned(data, OFFSET_COMMIT_VALUE_VERSIONS, "OffsetCommitValue")
    compact = version >= FLEXIBLE_FROM
    offset = reader.int64()
    leader_epoch = reader.int32() if version >= 3 else NO_LEADER_EPOCH
    metadata = reader.string(compact)
    commit_timestamp = reader.int64()
    expire_timestamp = reader.int64() if version == 1 else NO_TIMESTAMP
    if compact:
        reader.skip_tagged_fields()
    return OffsetCommitValue(offset, metadata, commit_timestamp, leader_epoch, expire_timestamp)


# ------------------------------------------------------------------------------------------------ group values


def _write_member(out: FieldWriter, member: MemberMetadata, version: int) -> None:
    compact = version >= FLEXIBLE_FROM
    out.string(member.member_id, compact)
    if version >= 3:
        out.string(member.group_instance_id, compact)
    out.string(member.client_id, compact)
    out.string(member.client_host, compact)
    if version >= 1:
        out.int32(member.rebalance_timeout)
    out.int32(member.session_timeout)
    out.binary(member.subscription, compact)
    out.binary(member.assignment, compact)
    if compact:
        out.empty_tagged_fields()


def encode_group_metadata_value(value: GroupMetadataValue, version: int = GROUP_METADATA_VALUE_WRITTEN) -> bytes:
    """The value at `version` (by default v3, which Kafka 3.9 writes); fields the version lacks are left out."""
    if version not in GROUP_METADATA_VALUE_VERSIONS:
        raise ValueError(f"GroupMetadataValue has no version {version}")
    compact = version >= FLEXIBLE_FROM
    out = FieldWriter()
    out.int16(version)
    out.string(value.protocol_type, compact)
    out.int32(value.generation)
    out.string(value.protocol, compact)
    out.string(value.leader, compact)
    if version >= 2:
        out.int64(value.current_state_timestamp)
    out.array_count(len(value.members), compact)
    for member in value.members:
        _write_member(out, member, version)
    if compact:
        out.empty_tagged_fields()
    return out.getvalue()


def _read_member(reader: FieldReader, version: int) -> MemberMetadata:
    compact = version >= FLEXIBLE_FROM
    member_id = reader.string(compact)
    instance_id = reader.nullable_string(compact) if version >= 3 else None
    client_id = reader.string(compact)
    client_host = reader.string(compact)
    rebalance_timeout = reader.int32() if version >= 1 else -1
    member = MemberMetadata(member_id, instance_id, client_id, client_host, rebalance_timeout,
                            session_timeout=reader.int32(), subscription=reader.binary(compact),
                            assignment=reader.binary(compact))
    if compact:
        reader.skip_tagged_fields()
    return member


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    """A GroupMetadataValue of any version; DataFormatError for an unknown version or bad bytes."""
    reader, version = _versioned(data, GROUP_METADATA_VALUE_VERSIONS, "GroupMetadataValue")
    compact = version >= FLEXIBLE_FROM
    protocol_type = reader.string(compact)
    generation = reader.int32()
    protocol = reader.nullable_string(compact)
    leader = reader.nullable_string(compact)
    timestamp = reader.int64() if version >= 2 else NO_TIMESTAMP
    members = tuple(_read_member(reader, version) for _ in range(reader.array_count(compact)))
    if compact:
        reader.skip_tagged_fields()
    return GroupMetadataValue(protocol_type, generation, protocol, leader, timestamp, members)


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
