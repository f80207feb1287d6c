"""DescribeProducers: the idempotent producers of partitions hosted here, from the replica manager."""

from __future__ import annotations

from typing import Protocol

from broker.apis.handler import Handled
from broker.network import Request, Response
from protocol.apis.producers import DescribeProducersRequest, DescribeProducersResponse


class ProducerStates(Protocol):
    """Where the partitions' producer states are read."""

    def describe_producers(self, request: DescribeProducersRequest) -> DescribeProducersResponse: ...


async def handle_describe_producers(states: ProducerStates, body: DescribeProducersRequest,
                                    _request: Request) -> Handled:
    return Response(states.describe_producers(body))
