"""The handler tasks (Kafka's KafkaRequestHandler pool): serve requests from the channel."""

import asyncio
import functools
import logging
import time

from broker.metrics.counters import BrokerCounters
from broker.network.channel import RequestChannel, ResponseSlot
from broker.network.request import HandlerResult, NoResponse, Request, RequestHandler, Response, ResponseResult
from broker.network.stats import NetworkStats
from protocol.apis import APIS
from protocol.apis.api import ApiKey
from protocol.errors import ErrorCode

logger = logging.getLogger(__name__)


class RequestHandlerPool:
    """num.io.threads tasks, each taking requests from the channel, awaiting the handler on them and putting
    the result into the request's response slot. A delayed result (a future) fills the slot when it completes;
    the task does not wait for it. A failing handler is answered with UNKNOWN_SERVER_ERROR. Each answered request
    is counted in ``counters`` (Kafka's RequestMetrics: by request name, its request-level error, its time)."""

    def __init__(self, channel: RequestChannel, handler: RequestHandler, num_io_threads: int, stats: NetworkStats,
                 counters: BrokerCounters) -> None:
        self._channel = channel
        self._counters = counters
        self._handler = handler
        self._num_io_threads = num_io_threads
        self._stats = stats
        self._tasks: list[asyncio.Task[None]] = []
        self.busy_s = 0.0  # seconds the handler tasks together spent on requests (for RequestHandlerAvgIdlePercent)

    def start(self) -> None:
        """Start the handler tasks."""
        self._tasks = [
            asyncio.create_task(self._serve(), name=f"kafka-request-handler-{i}") for i in range(self._num_io_threads)
        ]

    async def stop(self) -> None:
        """Cancel the handler tasks (requests still queued are dropped) and wait for them."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def _serve(self) -> None:
        while True:
            request, slot = await self._channel.receive_request()
            started = time.monotonic()
            try:
                result: HandlerResult = await self._handler(request)
            except Exception as e:
                result = self._failure(request, f"{type(e).__name__}: {e}", e)
            self.busy_s += time.monotonic() - started
            if isinstance(result, asyncio.Future):
                result.add_done_callback(functools.partial(self._complete_delayed, request, slot))
            else:
                self._complete(request, slot, result)

    def _complete_delayed(self, request: Request, slot: ResponseSlot, future: asyncio.Future[ResponseResult]) -> None:
        if future.cancelled():
            result: object = self._failure(request, "the delayed operation was cancelled", None)
        elif (e := future.exception()) is not None:
            result = self._failure(request, f"{type(e).__name__}: {e}", e)
        else:
            result = future.result()
        self._complete(request, slot, result)

    def _complete(self, request: Request, slot: ResponseSlot, result: object) -> None:
        if not isinstance(result, Response | NoResponse):
            result = self._failure(request, f"the handler returned a {type(result).__name__}, not a Response", None)
        if not slot.done():  # done (cancelled) if its connection has closed
            slot.set_result(result)
        error = result.error_code if isinstance(result, Response) else 0
        if not error and isinstance(result, Response):
            error = getattr(result.body, "error_code", 0)
        self._counters.request(request_name(request)).record(
            (time.monotonic() - request.received_s) * 1000.0, error)

    def _failure(self, request: Request, message: str, error: BaseException | None) -> Response:
        self._stats.handler_errors += 1
        logger.error(
            "request %d (api key %d) from %s failed: %s",
            request.header.correlation_id,
            request.header.api_key,
            request.connection_id,
            message,
            exc_info=error,
        )
        return Response(None, ErrorCode.UNKNOWN_SERVER_ERROR, message)


_NAMES = {int(key): api.name for key, api in APIS.items()}
_FETCH = int(ApiKey.FETCH)


def request_name(request: Request) -> str:
    """The request label of Kafka's RequestMetrics: the api's name, Fetch split into FetchConsumer and
    FetchFollower."""
    key = request.header.api_key
    if key == _FETCH:
        return "FetchFollower" if getattr(request.body, "replica_id", -1) >= 0 else "FetchConsumer"
    name = _NAMES.get(key)
    return name if name is not None else str(key)
