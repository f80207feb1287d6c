"""CreateTopics from Kafka's v5 answers each new topic's configs (and from v7 its id); DeleteTopics from v6 takes
topics by id, those of the broker's metadata (UNKNOWN_TOPIC_ID for another)."""

from __future__ import annotations

import asyncio

from broker.apis.topics import by_topic_id, handle_create_topics, handle_delete_topics
from broker.config_description import topic_config_entries
from broker.log.config import LogConfig
from broker.network import Response
from protocol.apis import KAFKA_APIS
from protocol.apis.api import ApiKey
from protocol.apis.topics import (
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from protocol.errors import ErrorCode
from protocol.kafka import codec
from protocol.kafka.primitives import ZERO_UUID, uuid_bytes

TOPIC_ID = "Wz3hJwq9T0y1e6bRfZbBLQ"


class Controller:
    is_active = True

    def __init__(self) -> None:
        self.deleted: list[str] = []

    async def create_topics(self, request: CreateTopicsRequest) -> CreateTopicsResponse:
        return CreateTopicsResponse(topics=[
            CreatableTopicResult(name="orders", error_code=ErrorCode.NONE, num_partitions=3, replication_factor=2,
                                 topic_id=TOPIC_ID),
            CreatableTopicResult(name="taken", error_code=ErrorCode.TOPIC_ALREADY_EXISTS, error_message="exists")])

    async def delete_topics(self, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
        self.deleted += request.topic_names
        return DeleteTopicsResponse(responses=[DeletableTopicResult(name=name, error_code=ErrorCode.NONE)
                                               for name in request.topic_names])


def answered(api_key: ApiKey, version: int, message: dict, handler) -> dict:  # type: ignore[no-untyped-def]
    """Kafka's response to `message`, decoded and answered by `handler` and encoded at `version`."""
    api = KAFKA_APIS[api_key]
    frame = codec.encode(f"{api.name}Request", version, message)
    response = asyncio.run(handler(api.decode(frame, 0, version), None))
    assert isinstance(response, Response)
    return codec.decode(f"{api.name}Response", version, b"".join(api.encode(response.body, version, None)))


def test_create_topics_v7_answers_a_new_topics_id_counts_and_configs() -> None:
    def configs(overrides):  # type: ignore[no-untyped-def]
        return topic_config_entries(LogConfig(), overrides, None, False)

    async def handler(body, request):  # type: ignore[no-untyped-def]
        return await handle_create_topics(1, Controller(), configs, body, request)

    topic = {"name": "orders", "num_partitions": 3, "replication_factor": 2, "assignments": [],
             "configs": [{"name": "retention.ms", "value": "1000"}]}
    taken = {**topic, "name": "taken", "configs": []}
    [created, refused] = answered(ApiKey.CREATE_TOPICS, 7, {"topics": [topic, taken], "timeout_ms": 1000,
                                                            "validate_only": False}, handler)["topics"]
    assert (created["topic_id"], created["num_partitions"], created["replication_factor"]) == (
        uuid_bytes(TOPIC_ID), 3, 2)
    retention = next(c for c in created["configs"] if c["name"] == "retention.ms")
    assert (retention["value"], retention["config_source"]) == ("1000", 1)  # DYNAMIC_TOPIC_CONFIG
    assert (refused["error_code"], refused["configs"], refused["topic_id"]) == (
        ErrorCode.TOPIC_ALREADY_EXISTS, None, ZERO_UUID)


def test_delete_topics_v6_deletes_a_topic_named_by_its_id_and_refuses_an_unknown_id() -> None:
    controller = Controller()
    other = "AAAAAAAAAAAAAAAAAAAAAQ"

    async def delete(body, request):  # type: ignore[no-untyped-def]
        return await handle_delete_topics(controller, body, request)

    handler = by_topic_id(lambda: {TOPIC_ID: "orders"}, lambda _request, _name: True, delete)

    results = answered(ApiKey.DELETE_TOPICS, 6, {"topics": [
        {"name": None, "topic_id": uuid_bytes(TOPIC_ID)}, {"name": None, "topic_id": uuid_bytes(other)},
        {"name": "events", "topic_id": ZERO_UUID}], "timeout_ms": 1000}, handler)["responses"]
    assert controller.deleted == ["events", "orders"]
    assert [(r["name"], r["topic_id"], r["error_code"]) for r in results] == [
        ("events", ZERO_UUID, ErrorCode.NONE), ("orders", uuid_bytes(TOPIC_ID), ErrorCode.NONE),
        (None, uuid_bytes(other), ErrorCode.UNKNOWN_TOPIC_ID)]


def test_delete_topics_by_id_keeps_a_topic_the_principal_may_not_describe_and_its_name() -> None:
    controller = Controller()

    async def delete(body, request):  # type: ignore[no-untyped-def]
        return await handle_delete_topics(controller, body, request)

    handler = by_topic_id(lambda: {TOPIC_ID: "orders"}, lambda _request, name: name != "orders", delete)
    [result] = answered(ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": None, "topic_id": uuid_bytes(TOPIC_ID)}],
                                                  "timeout_ms": 1000}, handler)["responses"]
    assert controller.deleted == []
    assert (result["name"], result["topic_id"], result["error_code"]) == (
        None, uuid_bytes(TOPIC_ID), ErrorCode.TOPIC_AUTHORIZATION_FAILED)
