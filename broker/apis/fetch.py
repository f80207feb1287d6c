"""Fetch: read by the replica manager, answered at once or when min_bytes have arrived (a long poll)."""

from __future__ import annotations

import asyncio
from typing import Protocol

from broker.apis.handler import Handled, respond
from broker.network import Request
from protocol.apis.fetch import FetchRequest, FetchResponse


class LogReader(Protocol):
    """Where a fetch reads from."""

    def fetch(self, request: FetchRequest) -> FetchResponse | asyncio.Future[FetchResponse]: ...


async def handle_fetch(reader: LogReader, body: FetchRequest, _request: Request) -> Handled:
    return respond(reader.fetch(body))
