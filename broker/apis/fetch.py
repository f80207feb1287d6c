"""Fetch: read by the replica manager, answered at once or when min_bytes have arrived (a long poll). From v13 on
Kafka's wire a fetch names its topics by id: the ids are resolved to names first, and the answer names each topic by
its id again; an id no topic has is answered UNKNOWN_TOPIC_ID for each partition asked, as Kafka does."""

from __future__ import annotations

import asyncio
from typing import Protocol

from broker.apis.handler import Handled, Handler, respond, then
from broker.network import Request, Response
from protocol.apis.fetch import FetchPartitionResponse, FetchRequest, FetchResponse
from protocol.apis.shapes import Topic
from protocol.errors import ErrorCode
from protocol.kafka.primitives import uuid_bytes, uuid_text


class LogReader(Protocol):
    """Where a fetch reads from."""

    def fetch(self, request: FetchRequest) -> FetchResponse | asyncio.Future[FetchResponse]: ...


class TopicIds(Protocol):
    """The topics' ids, as the broker's metadata has them (broker/metadata_cache.py)."""

    topic_names: dict[str, str]  # topic id -> topic

    def topic_id(self, topic: str) -> str: ...


async def handle_fetch(reader: LogReader, body: FetchRequest, _request: Request) -> Handled:
    return respond(reader.fetch(body))


def by_topic_id(topic_ids: TopicIds, fetch: Handler) -> Handler:
    """The fetch handler (its authorization guard included) for a fetch that names its topics by id: each id is
    resolved to its topic's name before ``fetch`` sees the request, the answer names each topic by its id again, and
    an unknown id is answered UNKNOWN_TOPIC_ID for each partition asked, as KafkaApis does."""
    async def handle(body: FetchRequest, request: Request) -> Handled:
        if not body.topic_ids:
            return await fetch(body, request)
        unknown: list[tuple[bytes, Topic]] = []
        known: list[tuple[bytes, Topic]] = []
        for topic_id, topic in zip(body.topic_ids, body.topics, strict=True):
            name = topic_ids.topic_names.get(uuid_text(topic_id))
            if name is None:
                unknown.append((topic_id, topic))
            else:
                topic.name = name
                known.append((topic_id, topic))
        body.topic_ids = [topic_id for topic_id, _topic in known]
        body.topics = [topic for _topic_id, topic in known]
        forgotten = []
        for topic_id, topic in zip(body.forgotten_topic_ids, body.forgotten_topics, strict=True):
            name = topic_ids.topic_names.get(uuid_text(topic_id))
            if name is not None:
                topic.name = name
                forgotten.append(topic)
        body.forgotten_topics = forgotten

        def with_ids(answer: Response) -> Response:
            if answer.body is None:
                return answer
            response: FetchResponse = answer.body  # type: ignore[assignment]
            response.topic_ids = [uuid_bytes(topic_ids.topic_id(topic.name)) for topic in response.topics]
            for topic_id, topic in unknown:
                response.topics.append(Topic(name="", partitions=[FetchPartitionResponse(
                    partition=p.partition, error_code=ErrorCode.UNKNOWN_TOPIC_ID, high_watermark=-1, records=b"")
                    for p in topic.partitions]))
                response.topic_ids.append(topic_id)
            return answer

        return then(await fetch(body, request), with_ids)
    return handle
