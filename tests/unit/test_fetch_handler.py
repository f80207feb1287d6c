"""Fetch from v13 (topics named by id) and v12's last fetched epoch: ids resolved to names before the handler (and
its authorization guard) sees the request and named again in the answer, an unknown id answered UNKNOWN_TOPIC_ID;
a fetcher whose last fetched epoch the leader ends before its fetch offset is told where its log diverges, with no
records."""

from __future__ import annotations

import asyncio
from functools import partial

from broker.apis.fetch import by_topic_id, handle_fetch
from broker.network import Request, Response
from broker.replication.fetch_path import diverging_epoch
from protocol.apis.fetch import EpochEndOffset, FetchPartition, FetchPartitionResponse, FetchRequest, FetchResponse
from protocol.apis.shapes import Topic
from protocol.envelope import RequestHeader
from protocol.errors import ErrorCode
from protocol.kafka.primitives import uuid_bytes

KNOWN_ID, OTHER_ID = "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg"
REQUEST = Request(RequestHeader(api_key=1, api_version=13, correlation_id=1, client_id="c"), None, "c-1", 0,
                  "PLAINTEXT")


class Ids:
    topic_names = {KNOWN_ID: "known"}

    def topic_id(self, topic: str) -> str:
        return {"known": KNOWN_ID}.get(topic, "")


class Reader:
    def __init__(self) -> None:
        self.asked: FetchRequest | None = None

    def fetch(self, request: FetchRequest) -> FetchResponse:
        self.asked = request
        return FetchResponse(error_code=0, topics=[Topic(name=t.name, partitions=[FetchPartitionResponse(
            partition=p.partition, error_code=0, high_watermark=5, records=b"") for p in t.partitions])
            for t in request.topics])


def partition(index: int) -> FetchPartition:
    return FetchPartition(partition=index, fetch_offset=0, partition_max_bytes=100)


def test_topics_named_by_id_are_read_by_name_and_answered_by_id() -> None:
    reader = Reader()
    request = FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=100,
        topics=[Topic(name="", partitions=[partition(0)]), Topic(name="", partitions=[partition(3)])],
        topic_ids=[uuid_bytes(KNOWN_ID), uuid_bytes(OTHER_ID)],
        forgotten_topics=[Topic(name="", partitions=[1])], forgotten_topic_ids=[uuid_bytes(KNOWN_ID)])
    handled = asyncio.run(by_topic_id(Ids(), partial(handle_fetch, reader))(request, REQUEST))
    assert isinstance(handled, Response) and isinstance(handled.body, FetchResponse)
    assert reader.asked is not None
    assert [t.name for t in reader.asked.topics] == ["known"]
    assert [(t.name, t.partitions) for t in reader.asked.forgotten_topics] == [("known", [1])]
    answer = handled.body
    assert answer.topic_ids == [uuid_bytes(KNOWN_ID), uuid_bytes(OTHER_ID)]
    assert [[(p.partition, p.error_code) for p in t.partitions] for t in answer.topics] == [
        [(0, ErrorCode.NONE)], [(3, ErrorCode.UNKNOWN_TOPIC_ID)]]


class EpochLog:
    """A leader's log whose epoch 3 ends at offset 40 and whose epoch 5 starts there."""

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return (3, 40) if epoch in (3, 4) else (5, 90) if epoch == 5 else (-1, -1)


def test_a_fetch_past_the_end_of_its_last_fetched_epoch_on_the_leader_diverges() -> None:
    log = EpochLog()
    assert diverging_epoch(log, 3, 40) is None  # caught up to the end of epoch 3: no divergence
    assert diverging_epoch(log, 3, 45) == EpochEndOffset(epoch=3, end_offset=40)
    assert diverging_epoch(log, 4, 30) == EpochEndOffset(epoch=3, end_offset=40)  # the leader never had epoch 4
    assert diverging_epoch(log, 5, 60) is None
