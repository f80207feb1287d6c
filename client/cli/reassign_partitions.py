"""`minikafka reassign-partitions`: move partitions between brokers or change their replication factor, like
Kafka's kafka-reassign-partitions: --generate, --execute, --verify, through ZooKeeper (--zookeeper, or the cluster
in --dir) or through the controller's admin apis (--bootstrap-server, as Kafka 2.5+ does)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click

from client import reassignment
from client.admin import Admin
from client.cli.common import client_security, dir_option, resolve_bootstrap, run, zookeeper_of, zookeeper_option
from client.progress import Progress
from client.reassignment import ReassignmentError, Reassignments, ReassignmentStatus, ZkReassignments
from client.reassignment_admin import AdminReassignments
from zk.client import ZkClient

T = TypeVar("T")


def _read(path: Path, option: str) -> str:
    try:
        return path.read_text()
    except OSError as e:
        raise click.BadParameter(f"cannot read {path}: {e.strerror}", param_hint=option) from None


def _broker_list(text: str) -> list[int]:
    try:
        brokers = [int(b) for b in text.split(",") if b.strip()]
    except ValueError:
        raise click.BadParameter(f"expected broker ids like 1,2,3, got {text!r}", param_hint="--broker-list") from None
    if not brokers or len(set(brokers)) != len(brokers):
        raise click.BadParameter(f"expected distinct broker ids like 1,2,3, got {text!r}", param_hint="--broker-list")
    return brokers


@click.command("reassign-partitions")
@click.option("--generate", "mode", flag_value="generate", help="Propose an assignment of the topics to move.")
@click.option("--execute", "mode", flag_value="execute", help="Start the reassignment in --reassignment-json-file.")
@click.option("--verify", "mode", flag_value="verify", help="Report each partition of --reassignment-json-file as "
              "complete, in progress or failed.")
@click.option("--topics-to-move-json-file", type=click.Path(dir_okay=False, path_type=Path),
              help='With --generate: {"topics": [{"topic": "foo"}], "version": 1}.')
@click.option("--broker-list", help="With --generate: the brokers to spread the topics over, e.g. 1,2,3.")
@click.option("--reassignment-json-file", type=click.Path(dir_okay=False, path_type=Path),
              help='With --execute and --verify: {"version": 1, "partitions": [{"topic": "foo", "partition": 0, '
                   '"replicas": [1, 2]}]}.')
@click.option("--json", "as_json", is_flag=True, help="With --verify: a JSON object, partition -> status.")
@click.option("--wait", is_flag=True, help="With --verify: report once no partition is in progress any more (at most "
              "--timeout seconds; exit status 1 if one still is).")
@click.option("--timeout", type=click.FloatRange(min=0), default=300, show_default=True,
              help="With --verify --wait: seconds to wait.")
@click.option("--bootstrap-server", metavar="HOST:PORT[,...]",
              help="Go through the controller's AlterPartitionReassignments and ListPartitionReassignments at these "
                   "brokers rather than through ZooKeeper.")
@zookeeper_option
@dir_option
def reassign_partitions_command(mode: str | None, topics_to_move_json_file: Path | None, broker_list: str | None,
                                reassignment_json_file: Path | None, as_json: bool, wait: bool, timeout: float,
                                bootstrap_server: str | None, zookeeper: str | None, directory: Path) -> None:
    """Reassign partitions: --generate prints the current assignment and a proposal (seed 001's rule over
    --broker-list); --execute writes /admin/reassign_partitions (with --bootstrap-server: asks the controller, by
    AlterPartitionReassignments), and the controller starts the new replicas, waits until they join the ISR, moves
    leaders into the target set and deletes the removed replicas; --verify reports each partition (exit status 1
    if one failed), with --wait once none is in progress (on a terminal, a status line counts them meanwhile). A
    target broker that is down holds its partitions' reassignments until it is back (over --bootstrap-server it
    is refused, as Kafka does); the replication factor may go up or down."""
    if mode is None:
        raise click.UsageError("give one of --generate, --execute, --verify")
    if mode == "generate" and (topics_to_move_json_file is None or broker_list is None):
        raise click.UsageError("--generate needs --topics-to-move-json-file and --broker-list")
    if mode != "generate" and reassignment_json_file is None:
        raise click.UsageError(f"--{mode} needs --reassignment-json-file")
    if bootstrap_server and zookeeper:
        raise click.UsageError("give --bootstrap-server or --zookeeper, not both")
    with_cluster = _admin_session(resolve_bootstrap(bootstrap_server, directory)) if bootstrap_server else (
        _zk_session(*zookeeper_of(zookeeper, directory)))

    if mode == "generate":
        assert topics_to_move_json_file is not None and broker_list is not None
        _generate(with_cluster, _read(topics_to_move_json_file, "--topics-to-move-json-file"),
                  _broker_list(broker_list))
        return
    assert reassignment_json_file is not None
    try:
        plan = reassignment.parse_plan(_read(reassignment_json_file, "--reassignment-json-file"))
    except ReassignmentError as e:
        raise click.ClickException(str(e)) from None
    if mode == "execute":
        current = with_cluster(lambda cluster: reassignment.execute(cluster, plan))
        click.echo(f"Current partition replica assignment\n\n{reassignment.plan_json(current)}\n\n"
                   "Save this to use as the --reassignment-json-file option during rollback")
        click.echo("Successfully started reassignment of partitions.")
        return
    progress = Progress(enabled=not as_json)
    result = with_cluster(lambda cluster: _wait(cluster, plan, timeout, progress) if wait
                          else reassignment.read_statuses(cluster, plan))
    if as_json:
        click.echo(json.dumps({f"{t}-{p}": status.name.lower() for (t, p), status in sorted(result.items())}))
    else:
        click.echo("\n".join(reassignment.status_lines(result)))
    still_moving = wait and ReassignmentStatus.IN_PROGRESS in result.values()
    if ReassignmentStatus.FAILED in result.values() or still_moving:
        raise SystemExit(1)


Session = Callable[[Callable[[Reassignments], Awaitable[T]]], T]


def _zk_session(connect: str, chroot: str) -> Session:
    """Run work against the cluster through ZooKeeper."""

    def with_zk(work: Callable[[Reassignments], Awaitable[T]]) -> T:
        async def session() -> T:
            zk = ZkClient(connect, chroot=chroot)
            await zk.start()
            try:
                return await work(ZkReassignments(zk))
            finally:
                await zk.close()

        return _run(session())

    return with_zk


def _admin_session(bootstrap: str) -> Session:
    """Run work against the cluster through the admin apis."""

    def with_admin(work: Callable[[Reassignments], Awaitable[T]]) -> T:
        async def session() -> T:
            async with Admin(bootstrap, client_id="minikafka-cli", **client_security()) as admin:
                return await work(AdminReassignments(admin))

        return _run(session())

    return with_admin


def _run(session: Coroutine[Any, Any, T]) -> T:
    try:
        return run(session)
    except ReassignmentError as e:
        raise click.ClickException(str(e)) from None


async def _wait(cluster: Reassignments, plan: reassignment.Plan, timeout: float,
                progress: Progress) -> dict[tuple[str, int], ReassignmentStatus]:
    """--verify --wait: the statuses once none is in progress, counted on the status line meanwhile."""
    latest: Counter[ReassignmentStatus] = Counter()

    def seen(found: Mapping[tuple[str, int], ReassignmentStatus]) -> None:
        latest.clear()
        latest.update(found.values())

    def status(seconds: float) -> str:
        return (f"reassignment: {latest[ReassignmentStatus.COMPLETE]} of {len(plan)} partitions complete, "
                f"{latest[ReassignmentStatus.IN_PROGRESS]} in progress, {latest[ReassignmentStatus.FAILED]} failed "
                f"({seconds:.0f} s)")

    with progress.ticking(status):
        return await reassignment.wait_statuses(cluster, plan, timeout, seen)


def _generate(with_cluster: Session, topics_text: str, brokers: list[int]) -> None:
    try:
        topics = reassignment.parse_topics_to_move(topics_text)
    except ReassignmentError as e:
        raise click.ClickException(str(e)) from None

    async def plans(cluster: Reassignments) -> tuple[reassignment.Plan, reassignment.Plan]:
        assignments = await cluster.assignments(topics)
        missing = [t for t in topics if t not in assignments]
        if missing:
            raise ReassignmentError(f"Topics {', '.join(missing)} do not exist")
        await reassignment.check_brokers(cluster, brokers)
        partitions = [(t, p) for t in topics for p in assignments[t].partitions]
        return reassignment.current_plan(assignments, partitions), reassignment.propose(assignments, topics, brokers)

    current, proposed = with_cluster(plans)
    click.echo(f"Current partition replica assignment\n{reassignment.plan_json(current)}\n")
    click.echo(f"Proposed partition reassignment configuration\n{reassignment.plan_json(proposed)}")
