"""SocketServer: the broker's network front end."""

import asyncio
import functools
import itertools
import logging
from collections.abc import Callable

from broker.metrics.counters import BrokerCounters
from broker.network.authenticator import SaslAuthenticator
from broker.network.channel import RequestChannel
from broker.network.config import NetworkConfig
from broker.network.handler_pool import RequestHandlerPool
from broker.network.processor import Processor
from broker.network.request import RequestHandler
from broker.network.stats import NetworkStats
from transport.frames import FrameStream

logger = logging.getLogger(__name__)

#: A listener's name -> a new connection's authenticator (None: the listener does not authenticate).
AuthenticatorFactory = Callable[[str], SaslAuthenticator | None]


class SocketServer:
    """Reactor-shaped, on one event loop: an acceptor per listener hands each connection
    round-robin to one of num_network_threads processors; connections read requests into a bounded
    request channel (queued_max_requests, back-pressure when full); num_io_threads handler tasks serve
    them; each connection writes its responses in request order. A SASL listener's connections authenticate first
    (`authenticators` gives each its SaslAuthenticator). Counters are in `stats`, and per request name
    in `counters` (the broker's metrics)."""

    def __init__(self, config: NetworkConfig, handler: RequestHandler, counters: BrokerCounters | None = None,
                 authenticators: AuthenticatorFactory | None = None, authentication_timeout_ms: int = 10000) -> None:
        self.config = config
        self._authenticators = authenticators
        self._authentication_timeout_s = authentication_timeout_ms / 1000
        self.stats = NetworkStats()
        self.counters = counters if counters is not None else BrokerCounters()
        self.channel = channel = RequestChannel(config.queued_max_requests)
        self._processors = [
            Processor(i, channel, config.connections_max_idle_ms, self.stats)
            for i in range(config.num_network_threads)
        ]
        self._next_processor = itertools.cycle(self._processors)
        self._handler_pool = RequestHandlerPool(channel, handler, config.num_io_threads, self.stats, self.counters)
        self._connection_ids = itertools.count()
        self._acceptors: list[asyncio.Server] = []
        self.bound: dict[str, tuple[str, int]] = {}  # listener name -> bound (host, port), once started
        self._stopped = False

    async def start(self) -> dict[str, tuple[str, int]]:
        """Listen on every configured listener (port 0: a free one); return each listener's bound host and port."""
        if self._acceptors or self._stopped:
            raise RuntimeError("a SocketServer starts once")
        bound: dict[str, tuple[str, int]] = {}
        loop = asyncio.get_running_loop()
        try:
            for listener in self.config.listeners:
                server = await loop.create_server(
                    functools.partial(self._accept, listener.listener_name),
                    listener.host or None,  # an empty host: every interface, as Kafka
                    listener.port,
                )
                self._acceptors.append(server)
                host, port = server.sockets[0].getsockname()[:2]
                bound[listener.listener_name] = (host, port)
                logger.info("listening on %s:%d (listener %s)", host, port, listener.listener_name)
        except BaseException:
            for server in self._acceptors:
                server.close()
            raise
        for processor in self._processors:
            processor.start()
        self._handler_pool.start()
        self.bound = bound
        return bound

    async def stop(self) -> None:
        """Stop listening, close every connection, stop the handler tasks and wait for all of it."""
        if not self._acceptors or self._stopped:
            return
        self._stopped = True
        for server in self._acceptors:
            server.close()
        await self._handler_pool.stop()
        await asyncio.gather(*(processor.stop() for processor in self._processors))
        for server in self._acceptors:
            await server.wait_closed()
        logger.info("stopped listening on %s", ", ".join(f"{h}:{p}" for h, p in self.bound.values()))

    def _accept(self, listener_name: str) -> FrameStream:
        """The protocol of a connection accepted on a listener; it is handed to a processor once connected."""
        return FrameStream(self.config.socket_request_max_bytes,
                           on_connected=functools.partial(self._connected, listener_name))

    def _connected(self, listener_name: str, stream: FrameStream) -> None:
        assert stream.transport is not None
        if self._stopped:
            stream.transport.abort()
            return
        peer = stream.get_extra_info("peername") or ("unknown", 0)
        connection_id = f"{peer[0]}:{peer[1]}-{next(self._connection_ids)}"
        self.stats.connections_accepted += 1
        authenticator = self._authenticators(listener_name) if self._authenticators is not None else None
        next(self._next_processor).accept(connection_id, stream, listener_name, authenticator,
                                          self._authentication_timeout_s)
