"""Produce: batches appended by the replica manager, answered at once (acks=1), when the ISR has them (acks=all),
or not at all (acks=0, whose failure closes the connection)."""

from __future__ import annotations

import asyncio
from typing import Protocol

from broker.apis.handler import Handled, respond
from broker.network import CLOSE_CONNECTION, NO_RESPONSE, Request, Response
from protocol.apis.produce import ProduceRequest, ProduceResponse, produce_error
from protocol.errors import ErrorCode

VALID_ACKS = (-1, 0, 1)


class RecordAppender(Protocol):
    """Where a produce request's batches are appended."""

    def append_records(self, request: ProduceRequest) -> ProduceResponse | asyncio.Future[ProduceResponse]: ...


async def handle_produce(appender: RecordAppender, body: ProduceRequest, _request: Request) -> Handled:
    if body.acks not in VALID_ACKS:
        return Response(produce_error(body, ErrorCode.INVALID_REQUIRED_ACKS,
                                      f"acks must be -1, 0 or 1, got {body.acks}"))
    result = appender.append_records(body)
    if body.acks == 0:
        if isinstance(result, asyncio.Future):  # it waited for a leader epoch to be written
            result = await result
        failed = any(p.error_code != ErrorCode.NONE for t in result.topics for p in t.partitions)
        return CLOSE_CONNECTION if failed else NO_RESPONSE
    return respond(result)
