"""The ``minikafka`` command line."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import IO, Any, TypeVar

import click

from broker.config import parse_overrides
from broker.log.config import LogConfig, LogConfigError
from client.accumulator import FutureRecordMetadata
from client.admin import Admin, AdminError, NewTopic
from client.cluster import (
    CHROOT,
    DEFAULT_DIR,
    SIGNALS,
    ClusterError,
    cluster_down,
    cluster_status,
    cluster_up,
    kill_broker,
    load_cluster,
    start_broker,
)
from client.connection import KafkaConnectionError
from client.consumer import Consumer, ConsumerError, ConsumerRecord
from client.metadata import PartitionInfo, parse_bootstrap_servers
from client.producer import Producer, ProducerError
from controller.topic_config import alter_topic_config
from controller.zk import ZkClient
from protocol.errors import KafkaError
from protocol.messages import ReplicaState
from protocol.records import RecordBatchError, decode_batch, iter_batches, validate_batch

T = TypeVar("T")

# A mistyped topic name should fail in seconds, not after the library's minute.
CLI_MAX_BLOCK_MS = 10000
_CLIENT_ERRORS = (ClusterError, AdminError, ProducerError, ConsumerError, KafkaConnectionError, KafkaError)


def _run(coro: Coroutine[Any, Any, T]) -> T:
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


def _key_values(ctx: click.Context, param: click.Parameter, items: tuple[str, ...]) -> dict[str, str]:
    try:
        return parse_overrides(items)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


_dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DIR,
    show_default=True,
    help="The directory describing the local cluster.",
)


def _client_options(f: Callable[..., None]) -> Callable[..., None]:
    """Add --bootstrap-server and --dir (resolve them with `_bootstrap` once the other arguments are checked)."""
    f = _dir_option(f)
    return click.option(
        "--bootstrap-server",
        "bootstrap_server",
        metavar="HOST:PORT[,...]",
        envvar="MINIKAFKA_BOOTSTRAP_SERVER",
        help="Brokers to bootstrap from [default: the cluster in --dir].",
    )(f)


def _bootstrap(bootstrap_server: str | None, directory: Path) -> str:
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


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", errors="backslashreplace")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """minikafka: Kafka's replication layer, on one machine."""


# ------------------------------------------------------------------------------------------------- broker


@main.command("broker")
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The broker's server.properties.",
)
@click.option("--override", "overrides", multiple=True, metavar="KEY=VALUE", help="Replace a property (repeatable).")
def broker_command(config_path: Path, overrides: tuple[str, ...]) -> None:
    """Run one broker in the foreground until SIGTERM or Ctrl-C."""
    from broker.config import ConfigError
    from broker.server import run_broker

    try:
        run_broker(config_path, list(overrides))
    except ConfigError as e:
        raise click.ClickException(f"{config_path}: {e}") from None
    except KeyboardInterrupt:
        sys.exit(130)


# ------------------------------------------------------------------------------------------------- cluster


@main.group("cluster")
def cluster_group() -> None:
    """Run a local cluster: ZooKeeper and N brokers on 127.0.0.1, described in a directory."""


@cluster_group.command("up")
@click.option("--brokers", type=click.IntRange(min=1), default=3, show_default=True, help="Number of brokers.")
@_dir_option
@click.option(
    "--config",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    callback=_key_values,
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
    state = _run(
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
@_dir_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
def cluster_status_command(directory: Path, as_json: bool) -> None:
    """Show the controller, its epoch and which brokers are alive."""
    status = _run(cluster_status(directory))
    if as_json:
        click.echo(json.dumps(status))
        return
    zk = status["zookeeper"]
    click.echo(f"zookeeper: port {zk['port']} pid {zk['pid']} {'alive' if zk['alive'] else 'down'}")
    click.echo(f"controller: {status['controller']} (epoch {status['controller_epoch']})")
    for b in status["brokers"]:
        state = "alive" if b["alive"] else "down"
        click.echo(f"broker {b['id']}: {b['host']}:{b['port']} pid {b['pid']} {state} log_dir {b['log_dir']}")


@cluster_group.command("down")
@_dir_option
@click.option("--timeout", type=click.FloatRange(min=0), default=30, show_default=True,
              help="Seconds to wait for a clean stop before SIGKILL.")
def cluster_down_command(directory: Path, timeout: float) -> None:
    """Stop every broker (SIGTERM, then SIGKILL after --timeout), then ZooKeeper."""
    state = _run(cluster_down(directory, timeout_s=timeout))
    click.echo(f"stopped {len(state.brokers)} brokers and ZooKeeper in {state.directory}", err=True)


@cluster_group.command("kill")
@click.argument("broker_id", type=int)
@_dir_option
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
@_dir_option
@click.option("--timeout", type=click.FloatRange(min=1), default=60, show_default=True, help="Seconds to wait.")
def cluster_start_command(broker_id: int, directory: Path, timeout: float) -> None:
    """Restart stopped broker BROKER_ID with its configuration and data."""
    broker = _run(start_broker(directory, broker_id, timeout_s=timeout))
    click.echo(f"broker {broker.id} on {broker.address} (pid {broker.pid})", err=True)


# ------------------------------------------------------------------------------------------------- topics


@main.group("topic")
def topic_group() -> None:
    """Create, list and describe topics."""


@topic_group.command("create")
@click.argument("name")
@click.option("--partitions", type=click.IntRange(min=1), required=True, help="Number of partitions.")
@click.option("--replication-factor", type=click.IntRange(min=1), required=True, help="Replicas per partition.")
@click.option(
    "--config",
    "configs",
    multiple=True,
    metavar="KEY=VALUE",
    callback=_key_values,
    help="A topic config, e.g. min.insync.replicas=2 (repeatable).",
)
@_client_options
def topic_create_command(
    name: str,
    partitions: int,
    replication_factor: int,
    configs: dict[str, str],
    bootstrap_server: str | None,
    directory: Path,
) -> None:
    """Create topic NAME."""
    bootstrap = _bootstrap(bootstrap_server, directory)

    async def create() -> None:
        async with Admin(bootstrap, client_id="minikafka-cli") as admin:
            await admin.create_topics([NewTopic(name, partitions, replication_factor, configs)])

    _run(create())
    click.echo(f"Created topic {name}.")


@topic_group.command("alter")
@click.argument("name")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE", callback=_key_values,
              help="Set a topic config, e.g. unclean.leader.election.enable=true (repeatable).")
@click.option("--delete-config", "deleted", multiple=True, metavar="KEY", help="Remove an override (repeatable).")
@click.option("--zookeeper", metavar="HOST:PORT[/CHROOT]",
              help="ZooKeeper to write to [default: the cluster in --dir, chroot /minikafka].")
@_dir_option
def topic_alter_command(name: str, configs: dict[str, str], deleted: tuple[str, ...], zookeeper: str | None,
                        directory: Path) -> None:
    """Change topic NAME's configs at run time, like kafka-configs --alter: brokers and the controller
    pick the change up without restarts (turning unclean.leader.election.enable on elects offline partitions)."""
    if not configs and not deleted:
        raise click.UsageError("give at least one --config or --delete-config")
    if zookeeper:
        connect, slash, chroot = zookeeper.partition("/")
        chroot = "/" + chroot if slash and chroot else CHROOT
    else:
        try:
            state = load_cluster(directory)
        except ClusterError as e:
            raise click.ClickException(f"no --zookeeper given, and {e}") from None
        connect, chroot = state.zookeeper.connect, state.chroot

    async def alter() -> dict[str, str]:
        zk = ZkClient(connect, chroot=chroot)
        await zk.start()
        try:
            return await alter_topic_config(zk, name, configs, deleted,
                                            validate=LogConfig().with_topic_overrides)
        finally:
            await zk.close()

    try:
        overrides = _run(alter())
    except LogConfigError as e:
        raise click.ClickException(f"INVALID_CONFIG: {e}") from None
    shown = ", ".join(f"{k}={v}" for k, v in sorted(overrides.items())) or "(none)"
    click.echo(f"Altered topic {name}; its overrides are now: {shown}")


@topic_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="A JSON list of names.")
@_client_options
def topic_list_command(as_json: bool, bootstrap_server: str | None, directory: Path) -> None:
    """List the topics."""
    bootstrap = _bootstrap(bootstrap_server, directory)

    async def names() -> list[str]:
        async with Admin(bootstrap, client_id="minikafka-cli") as admin:
            return await admin.list_topics()

    topics = _run(names())
    click.echo(json.dumps(topics) if as_json else "\n".join(topics))


@topic_group.command("describe")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="A JSON list with one object per partition.")
@click.option("--replicas", is_flag=True, help="Also each replica's LEO, HW and log start, and remote LEOs.")
@_client_options
def topic_describe_command(
    name: str | None, as_json: bool, replicas: bool, bootstrap_server: str | None, directory: Path
) -> None:
    """Describe topic NAME (or all topics): leader, replicas, ISR and leader epoch per partition."""
    bootstrap = _bootstrap(bootstrap_server, directory)

    async def describe() -> tuple[list[PartitionInfo], dict[int, list[ReplicaState]] | None]:
        async with Admin(bootstrap, client_id="minikafka-cli") as admin:
            names = None if name is None else [name]
            partitions = await admin.describe_topics(names)
            return partitions, (await admin.describe_replicas(names) if replicas else None)

    partitions, states = _run(describe())
    if as_json:
        click.echo(json.dumps(describe_json(partitions, states)))
    else:
        for line in describe_lines(partitions, states):
            click.echo(line)


def _replica_index(states: dict[int, list[ReplicaState]]) -> dict[tuple[str, int], dict[int, ReplicaState]]:
    index: dict[tuple[str, int], dict[int, ReplicaState]] = {}
    for broker_id, replicas in states.items():
        for state in replicas:
            index.setdefault((state.topic, state.partition), {})[broker_id] = state
    return index


def _replica_json(broker_id: int, state: ReplicaState) -> dict[str, Any]:
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
    partitions: list[PartitionInfo], states: dict[int, list[ReplicaState]] | None
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


def describe_lines(partitions: list[PartitionInfo], states: dict[int, list[ReplicaState]] | None) -> list[str]:
    """`topic describe`: kafka-topics --describe's layout, plus replica lines when states are given."""
    index = _replica_index(states or {})
    lines = []
    for i, p in enumerate(partitions):
        if i == 0 or partitions[i - 1].topic != p.topic:
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


# ------------------------------------------------------------------------------------------------- produce


async def _read_lines(stream: IO[bytes]) -> AsyncIterator[bytes]:
    """Lines of a binary stream without their line ending, read in a thread as they arrive."""
    read = getattr(stream, "read1", stream.read)
    pending = b""
    while chunk := await asyncio.to_thread(read, 65536):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.removesuffix(b"\r")
    if pending:
        yield pending


def split_key(line: bytes, separator: bytes | None, number: int) -> tuple[bytes | None, bytes]:
    """(key, value) of an input line: split at the first separator, or (None, line) without one."""
    if separator is None:
        return None, line
    key, found, value = line.partition(separator)
    if not found:
        raise click.ClickException(f"line {number} has no key separator {separator.decode()!r}")
    return key, value


async def _produce(
    bootstrap: str, topic: str, partition: int | None, acks: str, separator: bytes | None, as_json: bool
) -> list[str]:
    """Send stdin's lines; print acknowledgements in input order; return the failures."""
    failures: list[str] = []
    acknowledged: asyncio.Queue[tuple[int, FutureRecordMetadata] | None] = asyncio.Queue()

    async def report() -> None:
        while (item := await acknowledged.get()) is not None:
            number, future = item
            try:
                metadata = await future
            except ProducerError as e:
                failures.append(f"line {number}: {e}")
                continue
            if as_json:
                click.echo(json.dumps({"partition": metadata.partition, "offset": metadata.offset}))

    producer = Producer(bootstrap, acks=acks, max_block_ms=CLI_MAX_BLOCK_MS, client_id="minikafka-cli")
    reporter = asyncio.create_task(report())
    try:
        number = 0
        async for line in _read_lines(sys.stdin.buffer):
            number += 1
            key, value = split_key(line, separator, number)
            future = await producer.send(topic, value, key=key, partition=partition)
            acknowledged.put_nowait((number, future))
        await producer.flush()
    finally:
        acknowledged.put_nowait(None)
        await reporter
        await producer.close()
    return failures


@main.command("produce")
@click.argument("topic")
@click.option("--partition", type=click.IntRange(min=0), help="Write every record to this partition.")
@click.option(
    "--acks", type=click.Choice(["all", "-1", "1", "0"]), default="all", show_default=True, help="Acknowledgements."
)
@click.option("--key-separator", metavar="SEP", help="Split each line at the first SEP into key and value.")
@click.option("--json", "as_json", is_flag=True, help='Print {"partition", "offset"} per acknowledged record.')
@_client_options
def produce_command(
    topic: str,
    partition: int | None,
    acks: str,
    key_separator: str | None,
    as_json: bool,
    bootstrap_server: str | None,
    directory: Path,
) -> None:
    """Send each line of stdin to TOPIC as one record.

    Exits with status 1 if any record could not be written."""
    if key_separator == "":
        raise click.BadParameter("must not be empty", param_hint="--key-separator")
    separator = key_separator.encode() if key_separator is not None else None
    bootstrap = _bootstrap(bootstrap_server, directory)
    failures = _run(_produce(bootstrap, topic, partition, acks, separator, as_json))
    if failures:
        raise click.ClickException(f"{len(failures)} record(s) were not written; the first: {failures[0]}")


# ------------------------------------------------------------------------------------------------- consume


def record_json(record: ConsumerRecord) -> str:
    """`consume --json`: one line per record."""
    return json.dumps(
        {
            "partition": record.partition,
            "offset": record.offset,
            "key": _text(record.key),
            "value": _text(record.value),
            "timestamp": record.timestamp,
            "leader_epoch": record.leader_epoch,
        }
    )


async def _consume(
    bootstrap: str,
    topic: str,
    partition: int | None,
    from_beginning: bool,
    offset: int | None,
    max_messages: int | None,
    timeout_ms: int | None,
    as_json: bool,
) -> int:
    """Print records until max_messages or timeout_ms without a record; return how many were printed."""
    count = 0
    async with Consumer(bootstrap, client_id="minikafka-cli") as consumer:
        if partition is None:
            await consumer.metadata.refresh([topic])
            partitions = consumer.metadata.partitions(topic)
            if not partitions:
                error = consumer.metadata.topic_errors.get(topic)
                reason = error.name if error else "no partitions"
                raise click.ClickException(f"cannot consume topic {topic!r}: {reason}")
            consumer.assign([(topic, p.partition) for p in partitions])
        else:
            consumer.assign([(topic, partition)])
        if from_beginning:
            await consumer.seek_to_beginning()
        elif offset is not None and partition is not None:
            consumer.seek((topic, partition), offset)
        else:
            await consumer.seek_to_end()
        last_record = time.monotonic()
        while max_messages is None or count < max_messages:
            wait_ms = 1000
            if timeout_ms is not None:
                wait_ms = int(timeout_ms - (time.monotonic() - last_record) * 1000)
                if wait_ms <= 0:
                    break
            limit = 500 if max_messages is None else max_messages - count
            records = await consumer.poll(timeout_ms=wait_ms, max_records=limit)
            for record in records:
                click.echo(record_json(record) if as_json else _text(record.value) or "")
            if records:
                count += len(records)
                last_record = time.monotonic()
    return count


@main.command("consume")
@click.argument("topic")
@click.option("--partition", type=click.IntRange(min=0), help="Read only this partition [default: all].")
@click.option("--from-beginning", is_flag=True, help="Start at the log start offset [default: the end].")
@click.option("--offset", type=click.IntRange(min=0), help="Start at this offset (needs --partition).")
@click.option("--max-messages", type=click.IntRange(min=1), help="Stop after this many records.")
@click.option("--timeout-ms", type=click.IntRange(min=0), help="Stop when no record arrived for this long.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per record.")
@_client_options
def consume_command(
    topic: str,
    partition: int | None,
    from_beginning: bool,
    offset: int | None,
    max_messages: int | None,
    timeout_ms: int | None,
    as_json: bool,
    bootstrap_server: str | None,
    directory: Path,
) -> None:
    """Print the records of TOPIC, one per line (the value, or JSON with --json)."""
    if from_beginning and offset is not None:
        raise click.UsageError("--from-beginning and --offset exclude each other")
    if offset is not None and partition is None:
        raise click.UsageError("--offset needs --partition")
    bootstrap = _bootstrap(bootstrap_server, directory)
    count = _run(_consume(bootstrap, topic, partition, from_beginning, offset, max_messages, timeout_ms, as_json))
    click.echo(f"Processed a total of {count} messages", err=True)


# ------------------------------------------------------------------------------------------------- dump-log


@main.command("dump-log")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--print-data", is_flag=True, help="Also print every record's key, value and headers.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per batch (and per record).")
def dump_log(paths: tuple[Path, ...], print_data: bool, as_json: bool) -> None:
    """Print the batches of segment files (.log), like Kafka's kafka-dump-log.

    Stops at the first invalid batch and says where it is.
    """
    for path in paths:
        click.echo(f"Dumping {path}" if not as_json else json.dumps({"file": str(path)}))
        data = path.read_bytes()
        try:
            for position, header in iter_batches(data):
                _echo_batch(data, position, header.size_in_bytes, print_data, as_json)
        except RecordBatchError as e:
            raise click.ClickException(f"{path}: invalid batch: {e}") from None
        if not as_json:
            click.echo(f"{path.name}: {len(data)} bytes, base offset {int(path.stem) if path.stem.isdigit() else '?'}")


def _echo_batch(data: bytes, position: int, size: int, print_data: bool, as_json: bool) -> None:
    header = validate_batch(data, position)
    fields = {
        "baseOffset": header.base_offset, "lastOffset": header.last_offset, "count": header.record_count,
        "position": position, "size": size, "partitionLeaderEpoch": header.partition_leader_epoch,
        "baseTimestamp": header.base_timestamp, "maxTimestamp": header.max_timestamp, "crc": header.crc,
        "producerId": header.producer_id, "isTransactional": header.is_transactional,
    }
    click.echo(json.dumps(fields) if as_json else " ".join(f"{k}: {v}" for k, v in fields.items()))
    if not print_data:
        return
    for record in decode_batch(data, position)[1]:
        shown = {
            "offset": record.offset, "timestamp": record.timestamp,
            "key": _text(record.key), "value": _text(record.value),
            "headers": {h.key: _text(h.value) for h in record.headers},
        }
        click.echo(json.dumps(shown) if as_json else "| " + " ".join(f"{k}: {v}" for k, v in shown.items()))


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", errors="backslashreplace")


if __name__ == "__main__":
    main()
