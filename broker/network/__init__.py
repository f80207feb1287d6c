"""The broker's network layer: acceptor, processors, bounded request channel, handler tasks, ordered responses."""

from broker.network.config import NetworkConfig
from broker.network.request import (
    CLOSE_CONNECTION,
    NO_RESPONSE,
    HandlerResult,
    NoResponse,
    Request,
    RequestHandler,
    Response,
    ResponseResult,
)
from broker.network.server import SocketServer
from broker.network.stats import NetworkStats

__all__ = [
    "CLOSE_CONNECTION",
    "NO_RESPONSE",
    "HandlerResult",
    "NetworkConfig",
    "NetworkStats",
    "NoResponse",
    "Request",
    "RequestHandler",
    "Response",
    "ResponseResult",
    "SocketServer",
]
