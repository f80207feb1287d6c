"""/metrics over HTTP on the broker's event loop (metrics.port), in Prometheus' text format."""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.registry import Collector


class MetricsServer:
    """Serves the collector's metrics (and the process's: CPU, memory, descriptors) at /metrics."""

    def __init__(self, collector: Collector) -> None:
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(collector)
        ProcessCollector(registry=self._registry)
        self._runner: web.AppRunner | None = None
        self.address: tuple[str, int] | None = None  # where it listens, once started

    async def start(self, host: str, port: int) -> tuple[str, int]:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host or None, port, reuse_address=True)
        await site.start()
        bound = self._runner.addresses[0]
        self.address = (bound[0], bound[1])
        return self.address

    async def _metrics(self, _request: web.Request) -> web.Response:
        body = generate_latest(self._registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
