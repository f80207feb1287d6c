"""What every command shares: running a coroutine, the --dir and --bootstrap-server options, text output."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from broker.config import ConfigError, parse_overrides
from client.admin import AdminError
from client.client_configs import consumer_config, producer_config, read_config_file, security_config
from client.cluster import CHROOT, DEFAULT_DIR, ClusterError, load_cluster
from client.cluster_security import CLIENT_PROPERTIES
from client.consumer import ConsumerError
from client.metadata import parse_bootstrap_servers
from client.netsplit import NetsplitError
from client.producer import ProducerError
from protocol.errors import KafkaError
from transport.connection import KafkaConnectionError

T = TypeVar("T")

# A mistyped topic name should fail in seconds, not after the library's minute.
CLI_MAX_BLOCK_MS = 10000
_CLIENT_ERRORS = (ClusterError, NetsplitError, AdminError, ProducerError, ConsumerError, KafkaConnectionError,
                  KafkaError)


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


def _remember_command_config(ctx: click.Context, param: click.Parameter, value: Path | None) -> None:
    ctx.meta["command_config"] = value


def client_options(f: Callable[..., None]) -> Callable[..., None]:
    """Add --bootstrap-server, --dir and --command-config (resolve them with `resolve_bootstrap` once the other
    arguments are checked, then give the clients `client_security()`)."""
    f = dir_option(f)
    f = click.option("--command-config", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                     expose_value=False, callback=_remember_command_config, is_eager=True,
                     help="Client settings (Kafka's names: security.protocol, ssl.*, sasl.*) "
                          "[default: client.properties of the cluster in --dir, if it has one].")(f)
    return click.option(
        "--bootstrap-server",
        "bootstrap_server",
        metavar="HOST:PORT[,...]",
        envvar="MINIKAFKA_BOOTSTRAP_SERVER",
        help="Brokers to bootstrap from [default: the cluster in --dir].",
    )(f)


def resolve_bootstrap(bootstrap_server: str | None, directory: Path) -> str:
    """--bootstrap-server if given, else the brokers of the cluster described in --dir (their secured listeners
    when the cluster is secured: it has client.properties). The security settings (--command-config, else that
    client.properties) are then `client_security()`."""
    ctx = click.get_current_context()
    settings_file: Path | None = ctx.meta.get("command_config")
    if bootstrap_server:
        try:
            parse_bootstrap_servers(bootstrap_server)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--bootstrap-server") from None
        resolved = bootstrap_server
    else:
        try:
            state = load_cluster(directory)
        except ClusterError as e:
            raise click.ClickException(f"no --bootstrap-server given, and {e}") from None
        secured = directory / CLIENT_PROPERTIES
        settings_file = settings_file or (secured if secured.exists() else None)
        resolved = state.kafka_bootstrap_servers if secured.exists() else state.bootstrap_servers
    try:
        ctx.meta["client_security"] = security_config(read_config_file(settings_file)) if settings_file else {}
    except ConfigError as e:
        raise click.ClickException(str(e)) from None
    return resolved


def client_security() -> dict[str, Any]:
    """The clients' security keyword arguments (`tls`) that `resolve_bootstrap` found."""
    return dict(click.get_current_context().meta.get("client_security", {}))


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


def client_config_options(kind: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Kafka's console-tool options for a client's configs: ``--KIND-property KEY=VALUE`` (repeatable) and
    ``--KIND.config FILE`` (kind: producer or consumer). Resolve them with `client_config`."""

    def decorate(f: Callable[..., None]) -> Callable[..., None]:
        f = click.option(f"--{kind}.config", f"{kind}_config_file", type=click.Path(dir_okay=False, path_type=Path),
                         help=f"A {kind}.properties file with Kafka's {kind} config names.")(f)
        return click.option(f"--{kind}-property", f"{kind}_properties", multiple=True, metavar="KEY=VALUE",
                            callback=key_values,
                            help=f"A {kind} config with Kafka's name (acks, linger.ms, ...); repeatable; "
                                 f"overrides --{kind}.config.")(f)

    return decorate


def client_config(kind: str, config_file: Path | None, properties: dict[str, str],
                  explicit: dict[str, Any]) -> dict[str, Any]:
    """The client's keyword arguments: the config file, then the properties, then the explicit options given
    (those that are not None). Warnings (unknown names) go to stderr; a bad value is a usage error."""
    mapping = producer_config if kind == "producer" else consumer_config
    try:
        merged = read_config_file(config_file) if config_file is not None else {}
        config = mapping(merged | properties)
    except ConfigError as e:
        raise click.BadParameter(str(e), param_hint=f"--{kind}-property/--{kind}.config") from None
    for warning in config.warnings:
        click.echo(f"warning: {warning}", err=True)
    return config.kwargs | {name: value for name, value in explicit.items() if value is not None}


@contextmanager
def show_client_warnings() -> Iterator[None]:
    """Within the block, the client library's warnings (a producer's retries, for instance) go to stderr as they
    happen, one line each."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("warning: %(message)s"))
    logger = logging.getLogger("client")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
