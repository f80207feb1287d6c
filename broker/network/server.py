"""SocketServer: the broker's network front end."""

import asyncio
import functools
import itertools
import logging
import ssl
from collections.abc import Callable

from broker.metrics.counters import BrokerCounters
from broker.network.authenticator import SaslAuthenticator
from broker.network.channel import RequestChannel
from broker.network.config import NetworkConfig
from broker.network.handler_pool import RequestHandlerPool
from broker.network.processor import Processor
from broker.network.request import ANONYMOUS, RequestHandler
from broker.network.stats import NetworkStats
from broker.network.tls_accept import TlsAcceptor
from transport.frames import FrameStream

logger = logging.getLogger(__name__)

#: A listener's name -> a new connection's authenticator (None: the listener does not authenticate).
AuthenticatorFactory = Callable[[str], SaslAuthenticator | None]


class SocketServer:
    """Reactor-shaped, on one event loop: an acceptor per listener hands each connection
    round-robin to one of num_network_threads processors; connections read requests into a bounded
    request channel (queued_max_requests, back-pressure when full); num_io_threads handler tasks serve
    them; each connection writes its responses in request order. Counters are in `stats`, and per request name
    in `counters` (the broker's metrics).

    On a TLS listener a connection is handed over once its handshake is done; one that fails or does not finish
    within ssl.handshake.timeout.ms (a plaintext client, say) is closed with a log line naming why. A client
    certificate names the connection's principal. A SASL listener's connections (over TLS too) authenticate first
    (`authenticators` gives each its SaslAuthenticator)."""

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
        self._tls_acceptors: list[TlsAcceptor] = []
        self._acceptors: list[asyncio.Server] = []
        self._started = False
        self.bound: dict[str, tuple[str, int]] = {}  # listener name -> bound (host, port), once started
        self._stopped = False

    @property
    def handler_busy_s(self) -> float:
        """Seconds the handler tasks together have spent serving requests since start."""
        return self._handler_pool.busy_s

    async def start(self) -> dict[str, tuple[str, int]]:
        """Listen on every configured listener (port 0: a free one); return each listener's bound host and port."""
        if self._started or self._stopped:
            raise RuntimeError("a SocketServer starts once")
        self._started = True
        bound: dict[str, tuple[str, int]] = {}
        loop = asyncio.get_running_loop()
        try:
            for listener in self.config.listeners:
                context = self.config.tls.get(listener.listener_name)
                if context is not None:
                    acceptor = self._tls_acceptor(listener.listener_name, context)
                    self._tls_acceptors.append(acceptor)
                    host, port = bound[listener.listener_name] = acceptor.start(listener.host, listener.port)
                    logger.info("listening on %s:%d (listener %s, TLS)", host, port, listener.listener_name)
                    continue
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
            await asyncio.gather(*(acceptor.stop() for acceptor in self._tls_acceptors))
            raise
        for processor in self._processors:
            processor.start()
        self._handler_pool.start()
        self.bound = bound
        return bound

    async def stop(self) -> None:
        """Stop listening, close every connection, stop the handler tasks and wait for all of it."""
        if not self._started or self._stopped:
            return
        self._stopped = True
        for server in self._acceptors:
            server.close()
        await asyncio.gather(*(acceptor.stop() for acceptor in self._tls_acceptors))
        await self._handler_pool.stop()
        await asyncio.gather(*(processor.stop() for processor in self._processors))
        for server in self._acceptors:
            await server.wait_closed()
        logger.info("stopped listening on %s", ", ".join(f"{h}:{p}" for h, p in self.bound.values()))

    def _accept(self, listener_name: str) -> FrameStream:
        """The protocol of a connection accepted on a plaintext listener; it is handed to a processor once
        connected."""
        return FrameStream(self.config.socket_request_max_bytes,
                           on_connected=functools.partial(self._connected, listener_name))

    def _tls_acceptor(self, listener_name: str, context: ssl.SSLContext) -> TlsAcceptor:
        def secured(stream: FrameStream, principal: str | None) -> None:
            self._connected(listener_name, stream, principal or ANONYMOUS)

        def failed() -> None:
            self.stats.tls_handshakes_failed += 1

        return TlsAcceptor(listener_name, context, self.config.ssl_handshake_timeout_ms / 1000,
                           self.config.socket_request_max_bytes, secured, failed)

    def _connected(self, listener_name: str, stream: FrameStream, principal: str = ANONYMOUS) -> None:
        assert stream.transport is not None
        if self._stopped:
            stream.transport.abort()
            return
        peer = stream.get_extra_info("peername") or ("unknown", 0)
        connection_id = f"{peer[0]}:{peer[1]}-{next(self._connection_ids)}"
        self.stats.connections_accepted += 1
        authenticator = self._authenticators(listener_name) if self._authenticators is not None else None
        next(self._next_processor).accept(connection_id, stream, listener_name, principal, authenticator,
                                          self._authentication_timeout_s)

