"""CreateTopics, DeleteTopics and CreatePartitions, answered by the controller (NOT_CONTROLLER on other brokers)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Protocol

from broker.apis.handler import Handled, Handler
from broker.network import Request, Response
from protocol.apis.configs import ConfigEntry
from protocol.apis.topics import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    create_topics_error,
)
from protocol.errors import ErrorCode


class TopicController(Protocol):
    """The controller's part in creating, deleting and growing topics."""

    @property
    def is_active(self) -> bool: ...

    async def create_topics(self, request: CreateTopicsRequest) -> CreateTopicsResponse: ...

    async def delete_topics(self, request: DeleteTopicsRequest) -> DeleteTopicsResponse: ...

    async def create_partitions(self, request: CreatePartitionsRequest) -> CreatePartitionsResponse: ...


#: A new topic's configs as DescribeConfigs lists them, from the overrides it was created with.
TopicConfigs = Callable[[Mapping[str, str]], list[ConfigEntry]]


async def handle_create_topics(broker_id: int, controller: TopicController, configs: TopicConfigs,
                               body: CreateTopicsRequest, _request: Request) -> Handled:
    """Answered by the controller (NOT_CONTROLLER on other brokers); each topic created with its configs, as
    Kafka answers them from v5."""
    if not controller.is_active:
        message = f"broker {broker_id} is not the controller"
        return Response(create_topics_error(body, ErrorCode.NOT_CONTROLLER, message))
    response = await controller.create_topics(body)
    asked = {topic.name: topic.configs for topic in body.topics}
    for result in response.topics:
        if result.error_code == ErrorCode.NONE and result.name in asked:
            result.configs = configs(asked[result.name])
    return Response(response)


async def handle_delete_topics(controller: TopicController, body: DeleteTopicsRequest, _request: Request) -> Handled:
    """Answered by the controller (TOPIC_DELETION_DISABLED without delete.topic.enable, else NOT_CONTROLLER on
    other brokers); the topics by name (`by_topic_id` names those asked for by id)."""
    return Response(await controller.delete_topics(body))


#: Whether the request's principal may DESCRIBE the topic.
Described = Callable[[Request, str], bool]


def by_topic_id(topic_names: Callable[[], Mapping[str, str]], described: Described, delete: Handler) -> Handler:
    """DeleteTopics from Kafka's v6: each topic named by id is deleted by its name in this broker's metadata
    (UNKNOWN_TOPIC_ID for another id); a topic the principal may not DESCRIBE is answered
    TOPIC_AUTHORIZATION_FAILED by id alone and not deleted, as KafkaApis keeps its name from such a principal."""
    async def handle(body: DeleteTopicsRequest, request: Request) -> Handled:
        if not body.topic_ids:
            return await delete(body, request)
        names = topic_names()
        known = {i: names[i] for i in body.topic_ids if i in names and described(request, names[i])}
        unanswered = [DeletableTopicResult(name=None, topic_id=i, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                      if i in names else
                      DeletableTopicResult(name=None, topic_id=i, error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                                           error_message=f"Topic id {i} does not exist.")
                      for i in body.topic_ids if i not in known]
        served = await delete(replace(body, topic_names=[*body.topic_names, *known.values()], topic_ids=[]), request)
        assert isinstance(served, Response)
        if served.body is None:
            return served
        ids = {name: topic_id for topic_id, name in known.items()}
        responses = [replace(r, topic_id=ids.get(r.name or "", "")) for r in served.body.responses]
        return Response(replace(served.body, responses=[*responses, *unanswered]))
    return handle


async def handle_create_partitions(controller: TopicController, body: CreatePartitionsRequest,
                                   _request: Request) -> Handled:
    return Response(await controller.create_partitions(body))
