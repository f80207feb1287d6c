"""SocketServer: the broker's network front end."""

import asyncio
import itertools
import logging

from broker.network.channel import RequestChannel
from broker.network.config import NetworkConfig
from broker.network.handler_pool import RequestHandlerPool
from broker.network.processor import Processor
from broker.network.request import RequestHandler
from broker.network.stats import NetworkStats
from protocol.framing import STREAM_BUFFER_LIMIT

logger = logging.getLogger(__name__)


class SocketServer:
    """Reactor-shaped, on one event loop: an acceptor listening on host:port hands each connection
    round-robin to one of num_network_threads processors; connections read requests into a bounded
    request channel (queued_max_requests, back-pressure when full); num_io_threads handler tasks serve
    them; each connection writes its responses in request order. Counters are in `stats`."""

    def __init__(self, config: NetworkConfig, handler: RequestHandler) -> None:
        self.config = config
        self.stats = NetworkStats()
        channel = RequestChannel(config.queued_max_requests)
        self._processors = [
            Processor(i, channel, config.socket_request_max_bytes, config.connections_max_idle_ms, self.stats)
            for i in range(config.num_network_threads)
        ]
        self._next_processor = itertools.cycle(self._processors)
        self._handler_pool = RequestHandlerPool(channel, handler, config.num_io_threads, self.stats)
        self._connection_ids = itertools.count()
        self._listener: asyncio.Server | None = None
        self._stopped = False

    async def start(self) -> tuple[str, int]:
        """Listen on the configured host and port (0: a free one); return the bound host and port."""
        if self._listener is not None or self._stopped:
            raise RuntimeError("a SocketServer starts once")
        self._listener = await asyncio.start_server(
            self._accept, self.config.host, self.config.port, limit=STREAM_BUFFER_LIMIT
        )
        for processor in self._processors:
            processor.start()
        self._handler_pool.start()
        host, port = self._listener.sockets[0].getsockname()[:2]
        logger.info("listening on %s:%d", host, port)
        return host, port

    async def stop(self) -> None:
        """Stop listening, close every connection, stop the handler tasks and wait for all of it."""
        if self._listener is None or self._stopped:
            return
        self._stopped = True
        self._listener.close()
        await self._handler_pool.stop()
        await asyncio.gather(*(processor.stop() for processor in self._processors))
        await self._listener.wait_closed()
        logger.info("stopped listening on %s:%d", self.config.host, self.config.port)

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._stopped:
            writer.transport.abort()
            return
        peer = writer.get_extra_info("peername") or ("unknown", 0)
        connection_id = f"{peer[0]}:{peer[1]}-{next(self._connection_ids)}"
        self.stats.connections_accepted += 1
        next(self._next_processor).accept(connection_id, reader, writer)
