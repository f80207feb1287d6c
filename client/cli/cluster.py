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
    heal_cluster,
    kill_broker,
    partition_cluster,
    start_broker,
)
from client.cluster_security import CLIENT_PROPERTIES, LIBRDKAFKA_PROPERTIES, SECURITY_CHOICES
from client.netsplit import NetsplitError


@click.group("cluster")
def cluster_group() -> None:
    """Run a local cluster: ZooKeeper and N brokers, each on its own loopback address, described in a directory."""


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
@click.option("--zookeeper-jvm-flag", "zookeeper_jvm_flags", multiple=True, metavar="FLAG",
              help="A flag for ZooKeeper's JVM (repeatable), e.g. -Djute.maxbuffer=65536 (which the brokers then "
                   "take as zookeeper.jute.maxbuffer).")
@click.option("--timeout", type=click.FloatRange(min=1), default=60, show_default=True, help="Seconds to wait.")
@click.option("--security", type=click.Choice(SECURITY_CHOICES, case_sensitive=False), default="plaintext",
              show_default=True,
              help="Give every broker a listener of this security protocol beside its plaintext one, and write the "
                   "client settings for it (client.properties, librdkafka.properties, ca.pem) into --dir.")
def cluster_up_command(
    brokers: int,
    directory: Path,
    overrides: dict[str, str],
    base_port: int | None,
    zookeeper_port: int,
    zookeeper_jvm_flags: tuple[str, ...],
    timeout: float,
    security: str,
) -> None:
    """Start ZooKeeper and the brokers in the background and wait until a controller is elected.

    Prints the bootstrap address on stdout (progress goes to stderr): with --security, the secured listeners'."""
    state = run(
        cluster_up(
            directory,
            brokers=brokers,
            overrides=overrides,
            base_port=base_port,
            zookeeper_port=zookeeper_port,
            zookeeper_jvm_flags=zookeeper_jvm_flags,
            timeout_s=timeout,
            security=security.lower(),
        )
    )
    click.echo(f"ZooKeeper on {state.zookeeper.connect} (pid {state.zookeeper.pid})", err=True)
    for broker in state.brokers:
        secured = f", {security.upper()} on {broker.kafka_address}" if broker.secure_port else ""
        click.echo(f"broker {broker.id} on {broker.address}{secured} (pid {broker.pid}, log {broker.server_log})",
                   err=True)
    if security != "plaintext":
        click.echo(f"client settings: {state.directory / CLIENT_PROPERTIES} (Kafka's tools: --command-config), "
                   f"{state.directory / LIBRDKAFKA_PROPERTIES} (kcat -F)", err=True)
    click.echo(state.kafka_bootstrap_servers)


@cluster_group.command("status")
@dir_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
def cluster_status_command(directory: Path, as_json: bool) -> None:
    """Show the cluster id, each member's address, the controller and its epoch, which brokers are alive, and the
    network cuts in force (listing them needs root)."""
    status = run(cluster_status(directory))
    if as_json:
        click.echo(json.dumps(status))
        return
    zk = status["zookeeper"]
    click.echo(f"cluster id: {status['cluster_id'] or 'unknown (no broker answers)'}")
    click.echo(f"zookeeper: {zk['host']}:{zk['port']} pid {zk['pid']} {'alive' if zk['alive'] else 'down'}")
    click.echo(f"controller: {status['controller']} (epoch {status['controller_epoch']})")
    for b in status["brokers"]:
        state = "alive" if b["alive"] else "down"
        if b["exit_status"] is not None:
            state += f" ({describe_exit(b['exit_status'])})"
        click.echo(f"broker {b['id']}: {b['host']}:{b['port']} (kafka {b['kafka_address']}) pid {b['pid']} {state} "
                   f"log_dir {b['log_dir']}")
    cuts = status["cuts"]
    if cuts is None:
        click.echo("cuts: unknown (listing nftables rules needs root)")
    else:
        click.echo(f"cuts: {'; '.join(cuts) if cuts else 'none'}")


@cluster_group.command("down")
@dir_option
@click.option("--timeout", type=click.FloatRange(min=0), default=30, show_default=True,
              help="Seconds to wait for a clean stop before SIGKILL.")
def cluster_down_command(directory: Path, timeout: float) -> None:
    """Heal every network cut, stop every broker (SIGTERM, then SIGKILL after --timeout), then ZooKeeper."""
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


@cluster_group.command("partition")
@click.argument("side_a")
@click.argument("side_b")
@click.option("--one-way", is_flag=True, help="Drop only the packets from SIDE_A to SIDE_B.")
@dir_option
def cluster_partition_command(side_a: str, side_b: str, one_way: bool, directory: Path) -> None:
    """Cut the network between SIDE_A and SIDE_B: each is a comma-separated list of broker ids and/or zk.

    `partition 1 2,3,zk` isolates broker 1; `partition 2 zk` cuts broker 2 from ZooKeeper only. The cuts are
    nftables drop rules on lo (root only); they add up until `cluster heal` (or `cluster down`)."""
    try:
        cut = partition_cluster(directory, side_a, side_b, one_way=one_way)
    except (ClusterError, NetsplitError) as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"cut {cut}", err=True)


@cluster_group.command("heal")
@dir_option
def cluster_heal_command(directory: Path) -> None:
    """Remove every network cut of the cluster."""
    try:
        cuts = heal_cluster(directory)
    except (ClusterError, NetsplitError) as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"healed {'; '.join(map(str, cuts)) if cuts else 'nothing (no cuts were in force)'}", err=True)
