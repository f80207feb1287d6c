"""Kafka's default partitioning: murmur2 and toPositive exactly as Kafka's Utils, and the sticky round-robin of
keyless records."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import DefaultPartitioner
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from client.partitioner import Partitioner, murmur2, partition_for_key, to_positive

# Apache Kafka's UtilsTest.testMurmur2.
KAFKA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("data", "expected"), KAFKA_MURMUR2.items())
def test_murmur2_matches_kafkas_test_values(data, expected):
    assert murmur2(data) == expected


def _signed(value: int) -> int:
    return value - (1 << 32) if value >= 1 << 31 else value


@given(st.binary(max_size=64))
def test_murmur2_matches_kafka_python(data):
    assert murmur2(data) == _signed(kafka_python_murmur2(bytearray(data)))


class _OneTopic:
    """The slice of kafka-python's ClusterMetadata its DefaultPartitioner reads."""

    def __init__(self, num_partitions: int) -> None:
        self.num_partitions = num_partitions

    def topics(self) -> set[str]:
        return {"t"}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(self.num_partitions))

    available_partitions_for_topic = partitions_for_topic


@given(st.binary(min_size=1, max_size=32), st.integers(min_value=1, max_value=100))
def test_keyed_partition_matches_kafka_pythons_default_partitioner(key, num_partitions):
    expected = DefaultPartitioner().partition("t", key, key, None, None, _OneTopic(num_partitions))
    assert partition_for_key(key, num_partitions) == expected


def test_to_positive_clears_only_the_sign_bit():
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert to_positive(5) == 5
    assert to_positive(murmur2(b"21")) == (-973932308) & 0x7FFFFFFF


def test_keyed_records_ignore_the_sticky_partition():
    partitioner = Partitioner(random.Random(1))
    assert partitioner.partition("t", b"foobar", 7) == to_positive(-790332482) % 7


@settings(max_examples=100)
@given(st.lists(st.tuples(st.binary(max_size=6), st.integers(min_value=1, max_value=50)), max_size=60))
def test_remembered_key_hashes_place_keys_as_kafka_does(records):
    partitioner = Partitioner(random.Random(0), key_cache_size=3)
    for key, num_partitions in records:  # short keys repeat: hits, misses and cache resets
        assert partitioner.partition("t", key, num_partitions) == partition_for_key(key, num_partitions)
        assert len(partitioner._positive_hashes) <= 3
    assert partitioner.partition("t", bytearray(b"foobar"), 7) == partition_for_key(b"foobar", 7)


def test_keyless_records_stick_to_a_partition_until_a_new_batch_is_needed():
    partitioner = Partitioner(random.Random(1))
    first = partitioner.partition("t", None, 4)
    assert [partitioner.partition("t", None, 4) for _ in range(5)] == [first] * 5


def test_keyless_records_move_round_robin_on_each_new_batch():
    partitioner = Partitioner(random.Random(2))
    current = start = partitioner.partition("t", None, 3)
    chosen = []
    for _ in range(6):
        current = partitioner.on_new_batch("t", 3, current)
        chosen.append(partitioner.partition("t", None, 3))
    assert chosen == [(start + i) % 3 for i in range(1, 7)]


def test_keyless_partitions_are_per_topic_and_follow_a_shrunk_partition_count():
    partitioner = Partitioner(random.Random(3))
    a = partitioner.partition("a", None, 100)
    b = partitioner.partition("b", None, 100)
    partitioner.on_new_batch("b", 100, b)
    assert partitioner.partition("a", None, 100) == a
    assert partitioner.partition("b", None, 100) == (b + 1) % 100
    assert 0 <= partitioner.partition("a", None, 1) < 1
