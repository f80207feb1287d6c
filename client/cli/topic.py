"""`minikafka topic`: create, delete, alter, list and describe topics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from broker.log.config import LogConfig, LogConfigError
from client.admin import Admin, NewTopic
from client.cli.common import client_options, client_security, key_values, resolve_bootstrap, run, zookeeper_of
from client.metadata import PartitionInfo
from protocol.apis.replicas import DescribedReplica
from zk.client import ZkClient
from zk.topic_config import alter_topic_config


@click.group("topic")
def topic_group() -> None:
    """Create, delete, alter, list and describe topics."""


@topic_group.command("create")
@click.argument("name")
@click.option("--partitions", type=click.IntRange(min=1), required=True, help="Number of partitions.")
@click.option("--replication-factor", type=click.IntRange(min=1), required=True, help="Replicas per partition.")
@click.option(
    "--config",
    "configs",
    multiple=True,
    metavar="KEY=VALUE",
    callback=key_values,
    help="A topic config, e.g. min.insync.replicas=2 (repeatable).",
)
@client_options
def topic_create_command(
    name: str,
    partitions: int,
    replication_factor: int,
    configs: dict[str, str],
    bootstrap_server: str | None,
    directory: Path,
) -> None:
    """Create topic NAME."""
    bootstrap = resolve_bootstrap(bootstrap_server, directory)

    async def create() -> None:
        async with Admin(bootstrap, client_id="minikafka-cli", **client_security()) as admin:
            await admin.create_topics([NewTopic(name, partitions, replication_factor, configs)])

    run(create())
    click.echo(f"Created topic {name}.")


@topic_group.command("delete")
@click.argument("name")
@click.option("--timeout-ms", type=click.IntRange(min=0), default=30000, show_default=True,
              help="How long to wait for the topic to be gone.")
@client_options
def topic_delete_command(name: str, timeout_ms: int, bootstrap_server: str | None, directory: Path) -> None:
    """Delete topic NAME, like kafka-topics --delete: the controller queues it in /admin/delete_topics, every
    replica is deleted, then its znodes. Refused when the brokers run with delete.topic.enable=false."""
    bootstrap = resolve_bootstrap(bootstrap_server, directory)

    async def delete() -> None:
        async with Admin(bootstrap, client_id="minikafka-cli", **client_security()) as admin:
            await admin.delete_topics([name], timeout_ms=timeout_ms)

    run(delete())
    click.echo(f"Deleted topic {name}.")


@topic_group.command("alter")
@click.argument("name")
@click.option("--partitions", type=click.IntRange(min=1),
              help="Grow the topic to this many partitions (never fewer), placed by seed 001's rule.")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE", callback=key_values,
              help="Set a topic config, e.g. unclean.leader.election.enable=true (repeatable).")
@click.option("--delete-config", "deleted", multiple=True, metavar="KEY", help="Remove an override (repeatable).")
@click.option("--zookeeper", metavar="HOST:PORT[/CHROOT]",
              help="ZooKeeper to write configs to [default: the cluster in --dir, chroot /minikafka].")
@client_options
def topic_alter_command(name: str, partitions: int | None, configs: dict[str, str], deleted: tuple[str, ...],
                        zookeeper: str | None, bootstrap_server: str | None, directory: Path) -> None:
    """Change topic NAME at run time: more partitions (like kafka-topics --alter --partitions, through the
    controller), or its configs (like kafka-configs --alter, in ZooKeeper): brokers and the controller pick the
    change up without restarts (turning unclean.leader.election.enable on elects offline partitions)."""
    if partitions is None and not configs and not deleted:
        raise click.UsageError("give --partitions, or at least one --config or --delete-config")
    if partitions is not None:
        bootstrap = resolve_bootstrap(bootstrap_server, directory)

        async def grow() -> None:
            async with Admin(bootstrap, client_id="minikafka-cli", **client_security()) as admin:
                await admin.create_partitions({name: partitions})

        run(grow())
        click.echo(f"Topic {name} has {partitions} partitions.")
    if configs or deleted:
        _alter_configs(name, configs, deleted, zookeeper, directory)


def _alter_configs(name: str, configs: dict[str, str], deleted: tuple[str, ...], zookeeper: str | None,
                   directory: Path) -> None:
    connect, chroot = zookeeper_of(zookeeper, directory)

    async def alter() -> dict[str, str]:
        zk = ZkClient(connect, chroot=chroot)
        await zk.start()
        try:
            return await alter_topic_config(zk, name, configs, deleted,
                                            validate=LogConfig().with_topic_overrides)
        finally:
            await zk.close()

    try:
        overrides = run(alter())
    except LogConfigError as e:
        raise click.ClickException(f"INVALID_CONFIG: {e}") from None
    shown = ", ".join(f"{k}={v}" for k, v in sorted(overrides.items())) or "(none)"
    click.echo(f"Altered topic {name}; its overrides are now: {shown}")


@topic_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="A JSON list of names.")
@client_options
def topic_list_command(as_json: bool, bootstrap_server: str | None, directory: Path) -> None:
    """List the topics."""
    bootstrap = resolve_bootstrap(bootstrap_server, directory)

    async def names() -> list[str]:
        async with Admin(bootstrap, client_id="minikafka-cli", **client_security()) as admin:
            return await admin.list_topics()

    topics = run(names())
    click.echo(json.dumps(topics) if as_json else "\n".join(topics))


@topic_group.command("describe")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="A JSON list with one object per partition.")
@click.option("--replicas", is_flag=True, help="Also each replica's LEO, HW and log start, and remote LEOs.")
@click.option("--under-replicated-partitions", "under_replicated", is_flag=True,
              help="Only partitions whose ISR is smaller than their replica set.")
@click.option("--unavailable-partitions", "unavailable", is_flag=True,
              help="Only partitions without a live leader.")
@click.option("--under-min-isr-partitions", "under_min_isr", is_flag=True,
              help="Only partitions whose ISR is smaller than min.insync.replicas (or without a leader).")
@client_options
def topic_describe_command(
    name: str | None, as_json: bool, replicas: bool, under_replicated: bool, unavailable: bool, under_min_isr: bool,
    bootstrap_server: str | None, directory: Path
) -> None:
    """Describe topic NAME (or all topics): leader, replicas, ISR and leader epoch per partition. With a filter
    (as kafka-topics'), only the partitions it selects, without the topic lines."""
    bootstrap = resolve_bootstrap(bootstrap_server, directory)

    async def describe() -> tuple[list[PartitionInfo], dict[int, list[DescribedReplica]] | None]:
        async with Admin(bootstrap, client_id="minikafka-cli", **client_security()) as admin:
            names = None if name is None else [name]
            partitions = await admin.describe_topics(names)
            wanted = replicas or under_min_isr
            return partitions, (await admin.describe_replicas(names) if wanted else None)

    partitions, states = run(describe())
    filters = [under_replicated, unavailable, under_min_isr]
    if any(filters):
        partitions = select_partitions(partitions, states or {}, under_replicated=under_replicated,
                                       unavailable=unavailable, under_min_isr=under_min_isr)
    shown_states = states if replicas else None
    if as_json:
        click.echo(json.dumps(describe_json(partitions, shown_states)))
    else:
        for line in describe_lines(partitions, shown_states, headers=not any(filters)):
            click.echo(line)


def select_partitions(partitions: list[PartitionInfo], states: dict[int, list[DescribedReplica]], *,
                      under_replicated: bool, unavailable: bool, under_min_isr: bool) -> list[PartitionInfo]:
    """kafka-topics' describe filters (a partition is shown if any chosen filter selects it): under-replicated
    (ISR smaller than the replicas), unavailable (no live leader), under min ISR (no leader, or an ISR smaller
    than min.insync.replicas as its leader reports it)."""
    index = _replica_index(states)

    def min_isr(p: PartitionInfo) -> int:
        leader_state = index.get((p.topic, p.partition), {}).get(p.leader)
        return leader_state.min_insync_replicas if leader_state is not None else -1

    def selected(p: PartitionInfo) -> bool:
        no_leader = p.leader < 0
        return ((under_replicated and len(p.isr) < len(p.replicas))
                or (unavailable and no_leader)
                or (under_min_isr and (no_leader or len(p.isr) < min_isr(p))))

    return [p for p in partitions if selected(p)]


def _replica_index(states: dict[int, list[DescribedReplica]]) -> dict[tuple[str, int], dict[int, DescribedReplica]]:
    index: dict[tuple[str, int], dict[int, DescribedReplica]] = {}
    for broker_id, replicas in states.items():
        for state in replicas:
            index.setdefault((state.topic, state.partition), {})[broker_id] = state
    return index


def _replica_json(broker_id: int, state: DescribedReplica) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "broker": broker_id,
        "role": state.role,
        "leader_epoch": state.leader_epoch,
        "leo": state.log_end_offset,
        "hw": state.high_watermark,
        "log_start_offset": state.log_start_offset,
    }
    if state.role == "leader":
        entry["followers"] = [
            {"broker": f.broker_id, "remote_leo": f.log_end_offset, "last_caught_up_time_ms": f.last_caught_up_time_ms}
            for f in state.followers
        ]
    return entry


def describe_json(
    partitions: list[PartitionInfo], states: dict[int, list[DescribedReplica]] | None
) -> list[dict[str, Any]]:
    """`topic describe --json`: one object per partition, with replica_states when states are given."""
    index = _replica_index(states or {})
    described = []
    for p in partitions:
        entry: dict[str, Any] = {
            "topic": p.topic,
            "partition": p.partition,
            "leader": p.leader,
            "leader_epoch": p.leader_epoch,
            "replicas": list(p.replicas),
            "isr": list(p.isr),
        }
        if states is not None:
            hosted = index.get((p.topic, p.partition), {})
            entry["replica_states"] = [_replica_json(b, hosted[b]) for b in p.replicas if b in hosted]
        described.append(entry)
    return described


def describe_lines(partitions: list[PartitionInfo], states: dict[int, list[DescribedReplica]] | None, *,
                   headers: bool = True) -> list[str]:
    """`topic describe`: kafka-topics --describe's layout (topic lines when `headers`), plus replica lines when
    states are given."""
    index = _replica_index(states or {})
    lines = []
    for i, p in enumerate(partitions):
        if headers and (i == 0 or partitions[i - 1].topic != p.topic):
            count = sum(1 for q in partitions if q.topic == p.topic)
            lines.append(f"Topic: {p.topic}\tPartitionCount: {count}\tReplicationFactor: {len(p.replicas)}")
        leader = p.leader if p.leader >= 0 else "none"
        replicas, isr = ",".join(map(str, p.replicas)), ",".join(map(str, p.isr))
        lines.append(
            f"\tTopic: {p.topic}\tPartition: {p.partition}\tLeader: {leader}\t"
            f"Replicas: {replicas}\tIsr: {isr}\tLeaderEpoch: {p.leader_epoch}"
        )
        hosted = index.get((p.topic, p.partition), {})
        for broker_id in p.replicas if states is not None else ():
            state = hosted.get(broker_id)
            if state is None:
                lines.append(f"\t\tReplica: {broker_id}\t(no answer)")
                continue
            line = (
                f"\t\tReplica: {broker_id}\tRole: {state.role}\tLEO: {state.log_end_offset}\t"
                f"HW: {state.high_watermark}\tLogStartOffset: {state.log_start_offset}"
            )
            if state.role == "leader":
                line += "\tRemoteLEO: " + ",".join(f"{f.broker_id}={f.log_end_offset}" for f in state.followers)
            lines.append(line)
    return lines
