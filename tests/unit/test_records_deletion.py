"""DeleteRecords on the leader: the log start offset moves up to the offset asked for (the high watermark for -1),
and offsets beyond the high watermark, followers, unknown partitions and the internal topic are refused with
Kafka's error codes."""

from __future__ import annotations

from broker.replication.hosted import HostedPartitions
from broker.replication.offsets import delete_records
from broker.replication.partition import LeaderAndIsrState
from protocol.apis.records_deletion import (
    HIGH_WATERMARK,
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from protocol.errors import ErrorCode
from tests.unit.logutil import ManualClock, batch
from tests.unit.test_partition import FOLLOWER, LEADER, TP, replica, two_replicas


def hosted_leader_of_ten_records() -> HostedPartitions:
    hosted = HostedPartitions(LEADER)
    alone = replica(LEADER, ManualClock())
    alone.make_leader(LeaderAndIsrState(leader=LEADER, leader_epoch=0, isr=(LEADER,), replicas=(LEADER,)))
    for i in range(10):
        alone.append_records_to_leader(batch(b"%d" % i), required_acks=-1)
    hosted.add(TP, alone)
    return hosted


def results(hosted: HostedPartitions, topic: str, *offsets: tuple[int, int]) -> list[tuple[int, int, ErrorCode]]:
    request = DeleteRecordsRequest(topics=[DeleteRecordsTopic(name=topic, partitions=[
        DeleteRecordsPartition(partition_index=p, offset=o) for p, o in offsets])], timeout_ms=1000)
    [topic_result] = delete_records(hosted, request).topics
    return [(r.partition_index, r.low_watermark, r.error_code) for r in topic_result.partitions]


def test_the_leader_moves_its_log_start_offset_never_back_and_to_the_high_watermark_for_minus_one():
    hosted = hosted_leader_of_ten_records()
    assert results(hosted, TP.topic, (0, 4)) == [(0, 4, ErrorCode.NONE)]
    assert results(hosted, TP.topic, (0, 2)) == [(0, 4, ErrorCode.NONE)]
    assert results(hosted, TP.topic, (0, HIGH_WATERMARK)) == [(0, 10, ErrorCode.NONE)]
    assert hosted.get(TP).log.log_start_offset == 10


def test_bad_offsets_unknown_partitions_followers_and_the_internal_topic_are_refused():
    hosted = hosted_leader_of_ten_records()
    assert results(hosted, TP.topic, (0, 11), (0, -2), (5, 1)) == [
        (0, -1, ErrorCode.OFFSET_OUT_OF_RANGE), (0, -1, ErrorCode.OFFSET_OUT_OF_RANGE),
        (5, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert results(hosted, "__consumer_offsets", (0, 1)) == [(0, -1, ErrorCode.INVALID_TOPIC_EXCEPTION)]
    followers = HostedPartitions(FOLLOWER)
    followers.add(TP, two_replicas(ManualClock())[1])
    assert results(followers, TP.topic, (0, 0)) == [(0, -1, ErrorCode.NOT_LEADER_OR_FOLLOWER)]
