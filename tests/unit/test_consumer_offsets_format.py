"""The records of __consumer_offsets (protocol/consumer_offsets.py), byte for byte as Kafka 3.9 writes and reads them,
and the partition that holds a group.

The expected bytes were produced once by Kafka 3.9.1's own classes: a small Java program compiled with javac against
build/kafka/libs/* wrote each record with MessageUtil.toVersionPrefixedBytes(version, ...) of
org.apache.kafka.coordinator.group.generated.OffsetCommitKey / OffsetCommitValue / GroupMetadataValue at every
version, and with kafka.coordinator.group.GroupMetadataManager.offsetCommitKey / groupMetadataKey /
offsetCommitValue / groupMetadataValue (MetadataVersion.IBP_3_9_IV0) for the versions Kafka picks; the group value
comes from a real kafka.coordinator.group.GroupMetadata with two members (a dynamic and a static one) through
initNextGeneration. String.hashCode and Utils.abs(hash) % 50 were printed by the same program.
"""

from __future__ import annotations

import pytest

from protocol.consumer_offsets import (
    NO_LEADER_EPOCH,
    NO_TIMESTAMP,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
    group_metadata_record,
    group_metadata_tombstone,
    java_string_hash,
    offset_commit_record,
    offset_commit_tombstone,
    partition_for,
)
from protocol.consumer_protocol import Subscription, encode_subscription
from protocol.kafka.data import DataFormatError

KEY = OffsetCommitKey("group-a", "topic-x", 7)
OFFSET_KEY_V0 = "0000000767726f75702d610007746f7069632d7800000007"
OFFSET_KEY_V1 = "0001000767726f75702d610007746f7069632d7800000007"
GROUP_KEY = "0002000767726f75702d61"

# offset 42, leader epoch 5, metadata "meta", committed at 1700000000000, expiring at 1700000600000
OFFSET_VALUES = {
    0: "0000000000000000002a00046d6574610000018bcfe56800",
    1: "0001000000000000002a00046d6574610000018bcfe568000000018bcfee8fc0",
    2: "0002000000000000002a00046d6574610000018bcfe56800",
    3: "0003000000000000002a0000000500046d6574610000018bcfe56800",
    4: "0004000000000000002a00000005056d6574610000018bcfe5680000",
}
FULL_OFFSET = OffsetCommitValue(42, "meta", 1_700_000_000_000, leader_epoch=5, expire_timestamp=1_700_000_600_000)
# what each version keeps of FULL_OFFSET
DECODED_OFFSETS = {
    0: OffsetCommitValue(42, "meta", 1_700_000_000_000),
    1: OffsetCommitValue(42, "meta", 1_700_000_000_000, expire_timestamp=1_700_000_600_000),
    2: OffsetCommitValue(42, "meta", 1_700_000_000_000),
    3: OffsetCommitValue(42, "meta", 1_700_000_000_000, leader_epoch=5),
    4: OffsetCommitValue(42, "meta", 1_700_000_000_000, leader_epoch=5),
}
KAFKA_OFFSET_NO_EPOCH = "0003000000000000002affffffff00000000018bcfe56800"

# GroupMetadataValue with members m-1 (dynamic) and m-2 (instance i-2), at every version
GROUP_VALUES = {
    0: "00000008636f6e73756d657200000003000572616e676500036d2d310000000200036d2d310002633100032f683100002710000000"
       "010700000002080900036d2d320002633200032f6832000075300000000000000000",
    1: "00010008636f6e73756d657200000003000572616e676500036d2d310000000200036d2d310002633100032f68310000afc8000027"
       "10000000010700000002080900036d2d320002633200032f68320000ea60000075300000000000000000",
    2: "00020008636f6e73756d657200000003000572616e676500036d2d310000018bcfe5687b0000000200036d2d310002633100032f68"
       "310000afc800002710000000010700000002080900036d2d320002633200032f68320000ea60000075300000000000000000",
    3: "00030008636f6e73756d657200000003000572616e676500036d2d310000018bcfe5687b0000000200036d2d31ffff000263310003"
       "2f68310000afc800002710000000010700000002080900036d2d320003692d320002633200032f68320000ea600000753000000000"
       "00000000",
    4: "000409636f6e73756d6572000000030672616e6765046d2d310000018bcfe5687b03046d2d3100036331042f68310000afc8000027"
       "10020703080900046d2d3204692d32036332042f68320000ea600000753001010000",
}
MEMBER_1 = MemberMetadata("m-1", None, "c1", "/h1", 45000, 10000, b"\x07", b"\x08\x09")
MEMBER_2 = MemberMetadata("m-2", "i-2", "c2", "/h2", 60000, 30000, b"", b"")
GROUP_VALUE = GroupMetadataValue("consumer", 3, "range", "m-1", 1_700_000_000_123, (MEMBER_1, MEMBER_2))


def _as_of(version: int) -> GroupMetadataValue:
    """What a record of `version` keeps of GROUP_VALUE."""
    members = tuple(
        MemberMetadata(m.member_id, m.group_instance_id if version >= 3 else None, m.client_id, m.client_host,
                       m.rebalance_timeout if version >= 1 else -1, m.session_timeout, m.subscription, m.assignment)
        for m in GROUP_VALUE.members)
    timestamp = GROUP_VALUE.current_state_timestamp if version >= 2 else NO_TIMESTAMP
    return GroupMetadataValue("consumer", 3, "range", "m-1", timestamp, members)


# GroupMetadataManager.groupMetadataValue of a real GroupMetadata: generation 1, members m-1 and m-2 (static)
KAFKA_GROUP_VALUE = (
    "00030008636f6e73756d657200000001000572616e676500036d2d310000018bcfe5687b0000000200036d2d31ffff0008636c69656e74"
    "2d3100092f31302e302e302e310000afc8000027100000001c00030000000100066f7264657273ffffffff00000000ffffffffffff0000"
    "00010100036d2d32000a696e7374616e63652d320008636c69656e742d3200092f31302e302e302e32000493e00000afc80000001c0003"
    "0000000100066f7264657273ffffffff00000000ffffffffffff000000020202"
)
KAFKA_EMPTY_GROUP_VALUE = "0003000000000004ffffffff0000018bcfe5687b00000000"


def test_offset_commit_keys_are_kafkas():
    assert encode_offset_commit_key(KEY, version=0).hex() == OFFSET_KEY_V0
    assert encode_offset_commit_key(KEY).hex() == OFFSET_KEY_V1  # the version Kafka writes
    assert decode_key(bytes.fromhex(OFFSET_KEY_V0)) == KEY
    assert decode_key(bytes.fromhex(OFFSET_KEY_V1)) == KEY


def test_group_metadata_key_is_kafkas():
    assert encode_group_metadata_key(GroupMetadataKey("group-a")).hex() == GROUP_KEY
    assert decode_key(bytes.fromhex(GROUP_KEY)) == GroupMetadataKey("group-a")


def test_keys_of_other_versions_are_unknown():
    assert decode_key(bytes.fromhex("0003000167")) == UnknownKey(3)  # a consumer-group (KIP-848) record
    with pytest.raises(ValueError, match="no version"):
        encode_offset_commit_key(KEY, version=2)


@pytest.mark.parametrize("version", sorted(OFFSET_VALUES))
def test_offset_commit_value_of_every_version_is_kafkas(version):
    assert encode_offset_commit_value(FULL_OFFSET, version).hex() == OFFSET_VALUES[version]
    assert decode_offset_commit_value(bytes.fromhex(OFFSET_VALUES[version])) == DECODED_OFFSETS[version]


def test_offset_commit_value_is_written_at_the_version_kafka_picks():
    without_expiry = OffsetCommitValue(42, "meta", 1_700_000_000_000, leader_epoch=5)
    assert encode_offset_commit_value(without_expiry).hex() == OFFSET_VALUES[3]
    assert encode_offset_commit_value(FULL_OFFSET).hex() == OFFSET_VALUES[1]  # an explicit retention: v1
    no_epoch = OffsetCommitValue(42, "", 1_700_000_000_000)
    assert no_epoch.leader_epoch == NO_LEADER_EPOCH
    assert encode_offset_commit_value(no_epoch).hex() == KAFKA_OFFSET_NO_EPOCH


@pytest.mark.parametrize("version", sorted(GROUP_VALUES))
def test_group_metadata_value_of_every_version_is_kafkas(version):
    assert encode_group_metadata_value(_as_of(version), version).hex() == GROUP_VALUES[version]
    assert decode_group_metadata_value(bytes.fromhex(GROUP_VALUES[version])) == _as_of(version)


def test_group_metadata_value_as_kafkas_group_coordinator_writes_it():
    subscription = encode_subscription(Subscription(("orders",)))
    value = GroupMetadataValue("consumer", 1, "range", "m-1", 1_700_000_000_123, (
        MemberMetadata("m-1", None, "client-1", "/10.0.0.1", 45000, 10000, subscription, b"\x01"),
        MemberMetadata("m-2", "instance-2", "client-2", "/10.0.0.2", 300000, 45000, subscription, b"\x02\x02"),
    ))
    assert encode_group_metadata_value(value).hex() == KAFKA_GROUP_VALUE
    assert decode_group_metadata_value(bytes.fromhex(KAFKA_GROUP_VALUE)) == value
    empty = GroupMetadataValue("", 4, None, None, 1_700_000_000_123)
    assert encode_group_metadata_value(empty).hex() == KAFKA_EMPTY_GROUP_VALUE
    assert decode_group_metadata_value(bytes.fromhex(KAFKA_EMPTY_GROUP_VALUE)) == empty


def test_records_and_tombstones():
    value = OffsetCommitValue(42, "meta", 1_700_000_000_000, leader_epoch=5)
    assert offset_commit_record("group-a", "topic-x", 7, value) == (bytes.fromhex(OFFSET_KEY_V1),
                                                                     bytes.fromhex(OFFSET_VALUES[3]))
    assert offset_commit_tombstone("group-a", "topic-x", 7) == (bytes.fromhex(OFFSET_KEY_V1), None)
    assert group_metadata_record("group-a", GROUP_VALUE) == (bytes.fromhex(GROUP_KEY), bytes.fromhex(GROUP_VALUES[3]))
    assert group_metadata_tombstone("group-a") == (bytes.fromhex(GROUP_KEY), None)


def test_flexible_values_skip_tagged_fields_they_do_not_know():
    # v4 with one unknown tagged field (tag 5, 2 bytes) at the end of the offset value
    tagged = bytes.fromhex(OFFSET_VALUES[4][:-2] + "01050200ff")
    assert decode_offset_commit_value(tagged) == DECODED_OFFSETS[4]


@pytest.mark.parametrize("data", [
    "", "0003", "0003000000000000002a", "000500", "ffff",
    OFFSET_VALUES[3][:-4],
    "0003000000000000002a00000005ff00",  # a negative string length that is not null
])
def test_bad_offset_values_are_refused(data):
    with pytest.raises(DataFormatError):
        decode_offset_commit_value(bytes.fromhex(data))


@pytest.mark.parametrize("data", [
    GROUP_VALUES[3][:-10],
    GROUP_VALUES[3][:50] + "7fffffff",  # a member count larger than the bytes left
    "0005",
    "00030008636f6e73756d6572",
])
def test_bad_group_values_are_refused(data):
    with pytest.raises(DataFormatError):
        decode_group_metadata_value(bytes.fromhex(data))


def test_values_of_versions_kafka_does_not_have_are_not_written():
    with pytest.raises(ValueError):
        encode_offset_commit_value(FULL_OFFSET, 5)
    with pytest.raises(ValueError):
        encode_group_metadata_value(GROUP_VALUE, 5)


@pytest.mark.parametrize(("group_id", "java_hash", "partition"), [
    ("group-a", 293427347, 47),
    ("", 0, 0),
    ("grüppe", -1233264812, 12),
    ("组", 32452, 2),
    ("\N{THUMBS UP SIGN}group", -800474929, 29),  # a surrogate pair: two UTF-16 code units
    ("polygenelubricants", -(2**31), 0),  # Integer.MIN_VALUE: Utils.abs makes it 0
    ("console-consumer-12345", 158455506, 6),
    ("my-group", -1906497762, 12),
])
def test_partition_for_is_kafkas(group_id, java_hash, partition):
    assert java_string_hash(group_id) == java_hash
    assert partition_for(group_id, 50) == partition


def test_partition_for_spreads_over_the_partitions():
    assert {partition_for(f"group-{i}", 7) for i in range(200)} == set(range(7))
