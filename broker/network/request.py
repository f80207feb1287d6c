"""What the network layer hands to request handlers, and what they give back."""

import asyncio
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, TypeAlias

from protocol.envelope import RequestHeader
from protocol.errors import ErrorCode

ANONYMOUS: Final = "User:ANONYMOUS"
"""The principal of a connection that did not authenticate (Kafka's KafkaPrincipal.ANONYMOUS)."""


@dataclass(slots=True)
class Request:
    """A decoded request as read from one connection."""

    header: RequestHeader
    body: object  # the decoded request message
    connection_id: str  # "<peer host>:<peer port>-<N>", for logs
    size: int  # bytes of the frame, length prefix included
    listener_name: str = "PLAINTEXT"  # the listener the connection came in on
    received_s: float = 0.0  # time.monotonic() when it was read
    principal: str = ANONYMOUS  # who the connection authenticated as (Kafka's "User:NAME"), for authorization

    @property
    def client_host(self) -> str:
        """The peer's address as Kafka gives a client's host ("/127.0.0.1")."""
        return "/" + self.connection_id.rpartition("-")[0].rpartition(":")[0]


@dataclass(slots=True)
class Response:
    """A handler's answer; body is None only for a request-level error."""

    body: object | None
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None


class NoResponse(enum.Enum):
    """The type of NO_RESPONSE and CLOSE_CONNECTION."""

    NO_RESPONSE = "NO_RESPONSE"
    CLOSE_CONNECTION = "CLOSE_CONNECTION"


NO_RESPONSE: Final = NoResponse.NO_RESPONSE
"""Returned for an acks=0 produce: nothing is written back, later responses keep their order."""
CLOSE_CONNECTION: Final = NoResponse.CLOSE_CONNECTION
"""Returned for an acks=0 produce that failed (Kafka's way to tell a producer that reads no responses): the
responses before it are written, then the connection is closed."""

ResponseResult: TypeAlias = Response | NoResponse
HandlerResult: TypeAlias = ResponseResult | asyncio.Future[ResponseResult]
RequestHandler: TypeAlias = Callable[[Request], Awaitable[HandlerResult]]
"""Does the immediate work of a request. A delayed operation returns a future that completes later; the
handler task does not wait for it."""
