"""What a handler is and what it gives back."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

from broker.network import CLOSE_CONNECTION, NoResponse, Request, Response
from protocol.errors import ErrorCode

log = logging.getLogger(__name__)

Handled: TypeAlias = Response | asyncio.Future[Response] | NoResponse
#: (decoded request body, the request it came in) -> the answer; every handler answers, none raises.
Handler: TypeAlias = Callable[[Any, Request], Awaitable[Handled]]


def _same(body: Any) -> Any:
    return body


def respond(result: object, to_body: Callable[[Any], object] = _same) -> Response | asyncio.Future[Response]:
    """Wrap a body, or a future body (from a purgatory, or a coordinator's answer to come), as the network layer's
    Response; `to_body` makes the response body of what the future gives."""
    if not isinstance(result, asyncio.Future):
        return Response(to_body(result))
    wrapped: asyncio.Future[Response] = asyncio.get_running_loop().create_future()

    def done(future: asyncio.Future) -> None:
        if wrapped.done():
            return
        try:
            wrapped.set_result(Response(to_body(future.result())))
        except Exception as e:  # answered, never left waiting
            log.exception("a delayed answer could not be made")
            wrapped.set_result(Response(None, ErrorCode.UNKNOWN_SERVER_ERROR, str(e)))

    result.add_done_callback(done)
    return wrapped


def then(served: Handled, change: Callable[[Response], Response]) -> Handled:
    """`change` applied to the handler's answer, now or when its future completes; an answer that is not sent
    (acks=0) closes the connection instead, as a failed acks=0 produce does."""
    if isinstance(served, NoResponse):
        return CLOSE_CONNECTION
    if isinstance(served, Response):
        return change(served)
    changed: asyncio.Future[Response] = asyncio.get_running_loop().create_future()

    def done(future: asyncio.Future[Response]) -> None:
        if not changed.done():
            if future.cancelled():
                changed.cancel()
            elif future.exception() is not None:
                changed.set_exception(future.exception())  # type: ignore[arg-type]
            else:
                changed.set_result(change(future.result()))

    served.add_done_callback(done)
    return changed
