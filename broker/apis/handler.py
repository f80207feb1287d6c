"""What a handler is and what it gives back."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

from broker.network import NoResponse, Request, Response

Handled: TypeAlias = Response | asyncio.Future[Response] | NoResponse
#: (decoded request body, the request it came in) -> the answer; every handler answers, none raises.
Handler: TypeAlias = Callable[[Any, Request], Awaitable[Handled]]


def respond(result: object) -> Response | asyncio.Future[Response]:
    """Wrap a body, or a future body from a purgatory, as the network layer's Response."""
    if not isinstance(result, asyncio.Future):
        return Response(result)
    wrapped: asyncio.Future[Response] = asyncio.get_running_loop().create_future()

    def done(future: asyncio.Future) -> None:
        if not wrapped.done():
            wrapped.set_result(Response(future.result()))

    result.add_done_callback(done)
    return wrapped
