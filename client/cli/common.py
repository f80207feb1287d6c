"""What every command shares: running a coroutine, the --dir and --bootstrap-server options, text output."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import click

from broker.config import parse_overrides
from client.admin import AdminError
from client.cluster import CHROOT, DEFAULT_DIR, ClusterError, load_cluster
from client.connection import KafkaConnectionError
from client.consumer import ConsumerError
from client.metadata import parse_bootstrap_servers
from client.producer import ProducerError
from protocol.errors import KafkaError

T = TypeVar("T")

# A mistyped topic name should fail in seconds, not after the library's minute.
CLI_MAX_BLOCK_MS = 10000
_CLIENT_ERRORS = (ClusterError, AdminError, ProducerError, ConsumerError, KafkaConnectionError, KafkaError)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on a new event loop (uvloop where installed); client errors become clean CLI errors."""
    try:
        import uvloop

        loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = uvloop.new_event_loop
    except ImportError:
        loop_factory = None
    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(coro)
    except KeyboardInterrupt:
        sys.exit(130)
    except _CLIENT_ERRORS as e:
        raise click.ClickException(str(e)) from None


def key_values(ctx: click.Context, param: click.Parameter, items: tuple[str, ...]) -> dict[str, str]:
    """Click callback: repeated KEY=VALUE options as a dict."""
    try:
        return parse_overrides(items)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DIR,
    show_default=True,
    help="The directory describing the local cluster.",
)


def client_options(f: Callable[..., None]) -> Callable[..., None]:
    """Add --bootstrap-server and --dir (resolve them with `resolve_bootstrap` once the other arguments are checked)."""
    f = dir_option(f)
    return click.option(
        "--bootstrap-server",
        "bootstrap_server",
        metavar="HOST:PORT[,...]",
        envvar="MINIKAFKA_BOOTSTRAP_SERVER",
        help="Brokers to bootstrap from [default: the cluster in --dir].",
    )(f)


def resolve_bootstrap(bootstrap_server: str | None, directory: Path) -> str:
    """--bootstrap-server if given, else the brokers of the cluster described in --dir."""
    if bootstrap_server:
        try:
            parse_bootstrap_servers(bootstrap_server)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--bootstrap-server") from None
        return bootstrap_server
    try:
        return load_cluster(directory).bootstrap_servers
    except ClusterError as e:
        raise click.ClickException(f"no --bootstrap-server given, and {e}") from None


def zookeeper_of(zookeeper: str | None, directory: Path) -> tuple[str, str]:
    """(connect string, chroot) from --zookeeper HOST:PORT[/CHROOT] if given, else of the cluster in --dir."""
    if zookeeper:
        connect, slash, chroot = zookeeper.partition("/")
        return connect, "/" + chroot if slash and chroot else CHROOT
    try:
        state = load_cluster(directory)
    except ClusterError as e:
        raise click.ClickException(f"no --zookeeper given, and {e}") from None
    return state.zookeeper.connect, state.chroot


zookeeper_option = click.option(
    "--zookeeper", metavar="HOST:PORT[/CHROOT]",
    help="ZooKeeper to use [default: the cluster in --dir, chroot /minikafka].")


def text(value: bytes | None) -> str | None:
    """Bytes shown as UTF-8, undecodable bytes escaped."""
    return None if value is None else value.decode("utf-8", errors="backslashreplace")
