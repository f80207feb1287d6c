"""InitProducerId: a new producer id for an idempotent producer (transactions are not supported)."""

from __future__ import annotations

from typing import Protocol

from broker.apis.handler import Handled
from broker.log.producer_state import NO_PRODUCER_EPOCH
from broker.network import Request, Response
from protocol.apis.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from protocol.errors import ErrorCode
from protocol.records import NO_PRODUCER_ID


class ProducerIdSource(Protocol):
    """Where InitProducerId gets its ids."""

    async def generate_producer_id(self) -> int: ...


async def handle_init_producer_id(producer_ids: ProducerIdSource, body: InitProducerIdRequest,
                                  _request: Request) -> Handled:
    if body.transactional_id is not None:
        return Response(InitProducerIdResponse(error_code=ErrorCode.INVALID_REQUEST,
                                               error_message="transactions are not supported"))
    if (body.producer_id == NO_PRODUCER_ID) != (body.producer_epoch == NO_PRODUCER_EPOCH):
        return Response(InitProducerIdResponse(error_code=ErrorCode.INVALID_REQUEST,
                                               error_message="a producer id and an epoch go together"))
    producer_id = await producer_ids.generate_producer_id()  # a new one, as Kafka for a producer with no txn id
    return Response(InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0))
