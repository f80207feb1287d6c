"""`minikafka console`: a local web page that draws the cluster's replication live."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

import click

from client.cli.common import client_options, client_security, resolve_bootstrap, run
from client.cluster import ClusterError, load_cluster
from client.console.groups import GroupWatch
from client.console.server import Console, serve
from client.console.timeline import StateChangeTail
from client.console.watch import ClusterWatch
from protocol.state_change import STATE_CHANGE_LOG

NO_TIMELINE = ("The timeline is made of the brokers' state-change.log files, which are not served over the wire: "
               "start the console with --dir to see it.")


@click.command("console")
@client_options
@click.option("--host", default="127.0.0.1", show_default=True, help="The address the page is served on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True,
              help="The page's port (0: a free one).")
def console_command(bootstrap_server: str | None, directory: Path, host: str, port: int) -> None:
    """Serve a web page that shows the cluster live: the brokers, and for each partition every replica's log as
    offset boxes with its LEO and HW, the leader's view of its followers (remote LEO), the ISR and the leader
    epochs; with --dir, the timeline of the brokers' state-change logs. The page's URL is the first line printed;
    Ctrl-C stops."""
    bootstrap = resolve_bootstrap(bootstrap_server, directory)
    brokers: dict[int, str] = {}
    tail, note = None, NO_TIMELINE
    ctx = click.get_current_context()
    if bootstrap_server is None or ctx.get_parameter_source("directory") != click.core.ParameterSource.DEFAULT:
        try:
            state = load_cluster(directory)
        except ClusterError as e:
            note = f"No timeline: {e}."
        else:
            brokers = {b.id: b.kafka_address for b in state.brokers} if bootstrap_server is None else {}
            tail, note = StateChangeTail({f"broker {b.id}": Path(b.log_dir) / STATE_CHANGE_LOG
                                          for b in state.brokers}), ""
    source = f"the cluster in {directory.resolve()}" if bootstrap_server is None else bootstrap
    security = client_security()
    run(_serve(ClusterWatch(bootstrap, brokers, **security), GroupWatch(bootstrap, **security), tail, source, note,
               host, port))


async def _serve(watch: ClusterWatch, groups: GroupWatch, tail: StateChangeTail | None, source: str, note: str,
                 host: str, port: int) -> None:
    console = Console(watch, tail, source=source, timeline_note=note, groups=groups)
    try:
        runner, url = await serve(console, host, port)
    except OSError as e:
        await watch.close()
        await groups.close()
        raise click.ClickException(f"cannot serve on {host}:{port}: {e.strerror or e}") from None
    click.echo(url)
    click.echo(f"watching {source}; Ctrl-C stops", err=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    groups.start()
    updates = asyncio.create_task(console.run())
    try:
        await stop.wait()
    finally:
        updates.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await updates
        await runner.cleanup()
        await watch.close()
        await groups.close()
