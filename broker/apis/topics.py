"""CreateTopics, DeleteTopics and CreatePartitions, answered by the controller (NOT_CONTROLLER on other brokers)."""

from __future__ import annotations

from typing import Protocol

from broker.apis.handler import Handled
from broker.network import Request, Response
from protocol.apis.topics import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
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


async def handle_create_topics(broker_id: int, controller: TopicController, body: CreateTopicsRequest,
                               _request: Request) -> Handled:
    if not controller.is_active:
        message = f"broker {broker_id} is not the controller"
        return Response(create_topics_error(body, ErrorCode.NOT_CONTROLLER, message))
    return Response(await controller.create_topics(body))


async def handle_delete_topics(controller: TopicController, body: DeleteTopicsRequest, _request: Request) -> Handled:
    """Answered by the controller (TOPIC_DELETION_DISABLED without delete.topic.enable, else NOT_CONTROLLER on
    other brokers)."""
    return Response(await controller.delete_topics(body))


async def handle_create_partitions(controller: TopicController, body: CreatePartitionsRequest,
                                   _request: Request) -> Handled:
    return Response(await controller.create_partitions(body))
