"""The bounded request channel between processors and handler tasks."""

import asyncio
from typing import TypeAlias

from broker.network.request import Request, ResponseResult

ResponseSlot: TypeAlias = asyncio.Future[ResponseResult]
"""Where a request's response is put; its connection writes it once every earlier slot is done."""


class RequestChannel:
    """Kafka's RequestChannel request queue: at most queued.max.requests requests wait for a handler task.

    When it is full, a processor's connection waits in send_request and reads nothing more from its socket.
    """

    def __init__(self, queued_max_requests: int) -> None:
        self._queue: asyncio.Queue[tuple[Request, ResponseSlot]] = asyncio.Queue(queued_max_requests)

    async def send_request(self, request: Request, slot: ResponseSlot) -> None:
        """Queue a request, waiting while the channel is full."""
        await self._queue.put((request, slot))

    def size(self) -> int:
        """Requests waiting for a handler task (Kafka's RequestQueueSize)."""
        return self._queue.qsize()

    async def receive_request(self) -> tuple[Request, ResponseSlot]:
        """The oldest queued request and its response slot, waiting for one if there is none."""
        return await self._queue.get()
