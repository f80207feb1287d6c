"""A network processor (Kafka's Processor): owns a share of the connections."""

import asyncio
import logging
import time

from broker.network.authenticator import SaslAuthenticator
from broker.network.channel import RequestChannel
from broker.network.connection import Connection
from broker.network.stats import NetworkStats
from transport.frames import FrameStream

logger = logging.getLogger(__name__)


class Processor:
    """Runs the connections the acceptor hands it, closes those idle for connections.max.idle.ms (no request
    received and no response pending), and closes the rest at stop."""

    def __init__(
        self,
        index: int,
        channel: RequestChannel,
        connections_max_idle_ms: int,
        stats: NetworkStats,
    ) -> None:
        self.index = index
        self._channel = channel
        self._max_idle_s = connections_max_idle_ms / 1000
        self._stats = stats
        self._connections: dict[asyncio.Task[None], Connection] = {}
        self._idle_sweeper: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start closing idle connections."""
        self._idle_sweeper = asyncio.create_task(self._close_idle_connections(), name=f"network-processor-{self.index}")

    def accept(self, connection_id: str, stream: FrameStream, listener_name: str, principal: str,
               authenticator: SaslAuthenticator | None = None, authentication_timeout_s: float = 10.0) -> None:
        """Take over a connection newly accepted on a listener, its peer known as `principal` (a SASL listener's
        with its authenticator)."""
        connection = Connection(connection_id, stream, self._channel, self._stats, listener_name, principal,
                                authenticator, authentication_timeout_s)
        task = connection.start()
        self._connections[task] = connection
        self._stats.connections_open += 1
        task.add_done_callback(self._connection_closed)

    async def stop(self) -> None:
        """Close every connection and wait until they and the idle sweeper have finished."""
        tasks = list(self._connections)
        if self._idle_sweeper is not None:
            self._idle_sweeper.cancel()
            tasks.append(self._idle_sweeper)
        for connection in self._connections.values():
            connection.close("the server is stopping")
        await asyncio.gather(*tasks, return_exceptions=True)

    def _connection_closed(self, task: asyncio.Task[None]) -> None:
        connection = self._connections.pop(task)
        self._stats.connections_open -= 1
        if not task.cancelled() and (error := task.exception()) is not None:
            logger.error("connection %s failed", connection.id, exc_info=error)

    async def _close_idle_connections(self) -> None:
        interval = min(self._max_idle_s / 4, 1.0)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for connection in list(self._connections.values()):
                if connection.idle_seconds(now) >= self._max_idle_s:
                    self._stats.connections_closed_idle += 1
                    connection.close(f"idle for more than connections.max.idle.ms={self._max_idle_s * 1000:.0f}")
