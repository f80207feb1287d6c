"""`minikafka cluster`: start, inspect, break and stop a local cluster."""

from __future__ import annotations

import json
from pathlib import Path

import click

from client.cli.common import dir_option, key_values, run
from client.cluster import (
    SIGNALS,
    ClusterError,
    cluster_down,
    cluster_status,
    cluster_up,
    describe_exit,
    kill_broker,
    start_broker,
)


@click.group("cluster")
def cluster_group() -> None:
    """Run a local cluster: ZooKeeper and N brokers on 127.0.0.1, described in a directory."""


@cluster_group.command("up")
@click.option("--brokers", type=click.IntRange(min=1), default=3, show_default=True, help="Number of brokers.")
@dir_option
@click.option(
    "--config",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    callback=key_values,
    help="A server.properties setting for every broker (repeatable).",
)
@click.option("--base-port", type=click.IntRange(1, 65535), help="Listen on BASE-PORT, +1, ... instead of free ports.")
@click.option("--zookeeper-port", type=click.IntRange(0, 65535), default=0, help="ZooKeeper's port [default: free].")
@click.option("--timeout", type=click.FloatRange(min=1), default=60, show_default=True, help="Seconds to wait.")
def cluster_up_command(
    brokers: int,
    directory: Path,
    overrides: dict[str, str],
    base_port: int | None,
    zookeeper_port: int,
    timeout: float,
) -> None:
    """Start ZooKeeper and the brokers in the background and wait until a controller is elected.

    Prints the bootstrap address on stdout (progress goes to stderr)."""
    state = run(
        cluster_up(
            directory,
            brokers=brokers,
            overrides=overrides,
            base_port=base_port,
            zookeeper_port=zookeeper_port,
            timeout_s=timeout,
        )
    )
    click.echo(f"ZooKeeper on {state.zookeeper.connect} (pid {state.zookeeper.pid})", err=True)
    for broker in state.brokers:
        click.echo(f"broker {broker.id} on {broker.address} (pid {broker.pid}, log {broker.server_log})", err=True)
    click.echo(state.bootstrap_servers)


@cluster_group.command("status")
@dir_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
def cluster_status_command(directory: Path, as_json: bool) -> None:
    """Show the controller, its epoch and which brokers are alive."""
    status = run(cluster_status(directory))
    if as_json:
        click.echo(json.dumps(status))
        return
    zk = status["zookeeper"]
    click.echo(f"zookeeper: port {zk['port']} pid {zk['pid']} {'alive' if zk['alive'] else 'down'}")
    click.echo(f"controller: {status['controller']} (epoch {status['controller_epoch']})")
    for b in status["brokers"]:
        state = "alive" if b["alive"] else "down"
        if b["exit_status"] is not None:
            state += f" ({describe_exit(b['exit_status'])})"
        click.echo(f"broker {b['id']}: {b['host']}:{b['port']} (kafka {b['kafka_address']}) pid {b['pid']} {state} "
                   f"log_dir {b['log_dir']}")


@cluster_group.command("down")
@dir_option
@click.option("--timeout", type=click.FloatRange(min=0), default=30, show_default=True,
              help="Seconds to wait for a clean stop before SIGKILL.")
def cluster_down_command(directory: Path, timeout: float) -> None:
    """Stop every broker (SIGTERM, then SIGKILL after --timeout), then ZooKeeper."""
    state = run(cluster_down(directory, timeout_s=timeout))
    click.echo(f"stopped {len(state.brokers)} brokers and ZooKeeper in {state.directory}", err=True)


@cluster_group.command("kill")
@click.argument("broker_id", type=int)
@dir_option
@click.option(
    "--signal",
    "signal_name",
    type=click.Choice(list(SIGNALS), case_sensitive=False),
    default="TERM",
    show_default=True,
    help="The signal to send.",
)
def cluster_kill_command(broker_id: int, directory: Path, signal_name: str) -> None:
    """Send a signal to broker BROKER_ID (KILL and STOP break it, CONT resumes a stopped one)."""
    try:
        broker = kill_broker(directory, broker_id, signal_name)
    except ClusterError as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"sent SIG{signal_name.upper()} to broker {broker_id} (pid {broker.pid})", err=True)


@cluster_group.command("start")
@click.argument("broker_id", type=int)
@dir_option
@click.option("--timeout", type=click.FloatRange(min=1), default=60, show_default=True, help="Seconds to wait.")
def cluster_start_command(broker_id: int, directory: Path, timeout: float) -> None:
    """Restart stopped broker BROKER_ID with its configuration and data."""
    broker = run(start_broker(directory, broker_id, timeout_s=timeout))
    click.echo(f"broker {broker.id} on {broker.address} (pid {broker.pid})", err=True)
