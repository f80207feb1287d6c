"""InitProducerId: a new producer id for an idempotent producer (transactions are not supported)."""

from __future__ import annotations

from typing import Protocol

from broker.apis.handler import Handled
from broker.network import Request, Response
from protocol.apis.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from protocol.errors import ErrorCode


class ProducerIdSource(Protocol):
    """Where InitProducerId gets its ids."""

    async def generate_producer_id(self) -> int: ...


async def handle_init_producer_id(producer_ids: ProducerIdSource, body: InitProducerIdRequest,
                                  _request: Request) -> Handled:
    if body.transactional_id is not None:
        return Response(InitProducerIdResponse(error_code=ErrorCode.INVALID_REQUEST,
                                               error_message="transactions are not supported"))
    producer_id = await producer_ids.generate_producer_id()
    return Response(InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0))
