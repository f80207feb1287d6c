"""Metadata: the metadata cache's answer, with each broker's endpoint on the listener the request came in on."""

from __future__ import annotations

from typing import Protocol

from broker.apis.handler import Handled
from broker.network import Request, Response
from protocol.apis.metadata import MetadataRequest, MetadataResponse


class MetadataSource(Protocol):
    """Where Metadata is answered from."""

    def metadata(self, topics: list[str] | None, listener_name: str) -> MetadataResponse: ...


async def handle_metadata(source: MetadataSource, body: MetadataRequest, request: Request) -> Handled:
    return Response(source.metadata(body.topics, request.listener_name))
