"""A local cluster described in a directory: one ZooKeeper and N broker processes on loopback.

Each member has its own loopback address in a 127.A.B.0/24 block of the cluster's own (ZooKeeper 127.A.B.1,
broker N 127.A.B.(N+1)), and brokers bind every connection they open to theirs (`source.address`), so that a
link between two members can be cut (client/netsplit.py). Clients connect from 127.0.0.1 and are never cut.

Layout of the directory::

    cluster.json                 what runs: ZooKeeper's address and pid, each broker's id, address, pid and paths
    zookeeper/                   ZooKeeper's data directory and zookeeper.log
    broker-<id>/server.properties
    broker-<id>/server.log       the broker's output
    broker-<id>/data/            its log.dirs
    client.properties, ca.pem... a secured cluster's client settings and certificates (client/cluster_security.py)

Processes are signalled only through the pids recorded in cluster.json, and only after checking that the pid
still runs the recorded program.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from client import netsplit
from client.cluster_security import ADMIN_USER, SCRAM_MECHANISM, create_admin_user, prepare
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.errors import KafkaError
from transport.connection import BrokerConnection, KafkaConnectionError
from zk.server import MAIN_CLASS, ZooKeeperError, ZooKeeperServer, jute_maxbuffer, stop_pid

CLUSTER_FILE = "cluster.json"
DEFAULT_DIR = Path("minikafka-data")
CHROOT = "/minikafka"
HOST = "127.0.0.1"
#: The largest broker id `cluster up` starts: broker N is at 127.A.B.(N+1).
MAX_BROKERS = 253
SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "STOP": signal.SIGSTOP, "CONT": signal.SIGCONT}
_PROJECT_ROOT = Path(__file__).resolve().parents[1]
_POLL_S = 0.1
_PROBE_TIMEOUT_MS = 2000


class ClusterError(RuntimeError):
    """The cluster could not be started, found, or acted on; the message says why."""


@dataclass(frozen=True, slots=True)
class ZooKeeperProcess:
    """The cluster's ZooKeeper server."""

    port: int
    pid: int
    data_dir: str
    host: str = HOST

    @property
    def connect(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class BrokerProcess:
    """One broker: its id, listener, process, server.properties and log directory, its metrics port (0: none) and
    the port of its secured listener (0: none)."""

    id: int
    host: str
    port: int
    pid: int
    config: str
    log_dir: str
    metrics_port: int = 0
    secure_port: int = 0

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def kafka_address(self) -> str:
        """Where clients connect: the secured listener if there is one, else the plaintext one."""
        return f"{self.host}:{self.secure_port}" if self.secure_port else self.address

    @property
    def metrics_address(self) -> str | None:
        """Where it serves /metrics ("host:port"), if it does."""
        return f"{self.host}:{self.metrics_port}" if self.metrics_port else None

    @property
    def server_log(self) -> Path:
        return Path(self.config).parent / "server.log"


@dataclass(frozen=True, slots=True)
class ClusterState:
    """The content of cluster.json."""

    directory: Path
    zookeeper: ZooKeeperProcess
    brokers: tuple[BrokerProcess, ...]
    chroot: str = CHROOT

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(broker.address for broker in self.brokers)

    @property
    def kafka_bootstrap_servers(self) -> str:
        """The brokers' secured listeners (their plaintext ones in a plaintext cluster)."""
        return ",".join(broker.kafka_address for broker in self.brokers)

    def broker(self, broker_id: int) -> BrokerProcess:
        for broker in self.brokers:
            if broker.id == broker_id:
                return broker
        known = ", ".join(str(b.id) for b in self.brokers)
        raise ClusterError(f"no broker {broker_id} in {self.directory / CLUSTER_FILE} (brokers: {known})")

    @property
    def addresses(self) -> dict[str, str]:
        """Each member's address: "zk" and the broker ids (as strings), as `cluster partition` names them."""
        return {netsplit.ZOOKEEPER_MEMBER: self.zookeeper.host} | {str(b.id): b.host for b in self.brokers}

    def with_broker(self, broker: BrokerProcess) -> ClusterState:
        brokers = tuple(broker if b.id == broker.id else b for b in self.brokers)
        return ClusterState(self.directory, self.zookeeper, brokers, self.chroot)

    def to_json(self) -> dict[str, Any]:
        return {
            "zookeeper": asdict(self.zookeeper) | {"connect": self.zookeeper.connect},
            "chroot": self.chroot,
            "brokers": [asdict(b) for b in self.brokers],
        }

    @classmethod
    def from_json(cls, directory: Path, data: Mapping[str, Any]) -> ClusterState:
        zk = data["zookeeper"]
        return cls(
            directory=directory,
            zookeeper=ZooKeeperProcess(port=int(zk["port"]), pid=int(zk["pid"]), data_dir=str(zk["data_dir"]),
                                       host=str(zk.get("host", HOST))),
            brokers=tuple(
                BrokerProcess(
                    id=int(b["id"]),
                    host=str(b["host"]),
                    port=int(b["port"]),
                    pid=int(b["pid"]),
                    config=str(b["config"]),
                    log_dir=str(b["log_dir"]),
                    metrics_port=int(b.get("metrics_port", 0)),
                    secure_port=int(b.get("secure_port", 0)),
                )
                for b in data["brokers"]
            ),
            chroot=str(data.get("chroot", CHROOT)),
        )


# ----------------------------------------------------------------------------------------- pure helpers


def server_properties(
    broker_id: int, port: int, log_dir: Path, zookeeper_connect: str, overrides: Mapping[str, str] | None = None,
    *, host: str = HOST, metrics_port: int = 0, secured: tuple[str, int] | None = None,
) -> str:
    """A broker's server.properties: id, listener and source address on `host` (and a `secured` (listener name,
    port) beside the plaintext listener), log.dirs and zookeeper.connect, metrics.port when given, then the
    overrides (which replace those keys too)."""
    listeners = f"PLAINTEXT://{host}:{port}" + (f",{secured[0]}://{host}:{secured[1]}" if secured else "")
    settings = {
        "broker.id": str(broker_id),
        "listeners": listeners,
        "source.address": host,
        "log.dirs": str(log_dir),
        "zookeeper.connect": zookeeper_connect,
        **({"metrics.port": str(metrics_port)} if metrics_port else {}),
        **(overrides or {}),
    }
    lines = [f"# minikafka broker {broker_id}, written by `minikafka cluster up`"]
    lines += [f"{key}={value}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def development_settings(brokers: int) -> dict[str, str]:
    """What `cluster up` sets unless told otherwise, as Kafka's own config/server.properties does for a development
    cluster: the offsets topic replicated on as many brokers as there are (up to Kafka's 3), and no initial rebalance
    delay (Kafka's 3 s wait for more members before a new group's first rebalance)."""
    return {"offsets.topic.replication.factor": str(min(3, brokers)), "group.initial.rebalance.delay.ms": "0"}


def broker_command(config: Path | str) -> list[str]:
    """The command line that runs one broker in the foreground."""
    return [sys.executable, "-m", "client.cli", "broker", "--config", str(config)]


def load_cluster(directory: Path) -> ClusterState:
    """The cluster described in `directory`; ClusterError if there is none or the file is damaged."""
    path = directory / CLUSTER_FILE
    try:
        return ClusterState.from_json(directory, json.loads(path.read_text()))
    except FileNotFoundError:
        raise ClusterError(
            f"no cluster in {directory} ({path} is missing; start one with `minikafka cluster up`)"
        ) from None
    except (ValueError, KeyError, TypeError) as e:
        raise ClusterError(f"{path} is damaged: {e!r}") from None


def save_cluster(state: ClusterState) -> None:
    """Write cluster.json atomically."""
    path = state.directory / CLUSTER_FILE
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(state.to_json(), indent=2) + "\n")
    temporary.replace(path)


def log_tail(path: Path, lines: int = 30) -> str:
    """The last lines of a log file, or a note that it cannot be read."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as e:
        return f"({path}: {e.strerror})"


# ----------------------------------------------------------------------------------------- processes


def process_running(pid: int, *markers: str) -> bool:
    """True if `pid` runs (not a zombie) and its command line contains every marker."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    if stat.rpartition(")")[2].split()[0] == "Z":
        return False
    return all(marker.encode() in cmdline for marker in markers)


def broker_running(broker: BrokerProcess) -> bool:
    """True if the broker's recorded pid still runs that broker."""
    return process_running(broker.pid, "client.cli", broker.config)


def zookeeper_running(zookeeper: ZooKeeperProcess) -> bool:
    """True if ZooKeeper's recorded pid still runs a ZooKeeper server."""
    return process_running(zookeeper.pid, MAIN_CLASS)


def _free_ports(hosts: list[str]) -> list[int]:
    """A port on each of `hosts` that nothing listens on right now."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in hosts]
        for s, host in zip(sockets, hosts, strict=True):
            s.bind((host, 0))
        return [s.getsockname()[1] for s in sockets]


def metrics_ports(hosts: list[str], overrides: Mapping[str, str]) -> list[int]:
    """Each broker's metrics.port: a free one on its host, unless `overrides` set one for all (0: no metrics)."""
    text = overrides.get("metrics.port")
    if text is None:
        return _free_ports(hosts)
    try:
        return [int(text)] * len(hosts)
    except ValueError:
        raise ClusterError(f"metrics.port must be a port number, got {text!r}") from None


# ----------------------------------------------------------------------------------------- addresses


def member_address(block: tuple[int, int], member: int) -> str:
    """The address of a member in a block: 0 is ZooKeeper (127.A.B.1), N is broker N (127.A.B.(N+1))."""
    return f"127.{block[0]}.{block[1]}.{member + 1}"


def block_of(state: ClusterState) -> tuple[int, int] | None:
    """The 127.A.B.0/24 block of a cluster started with an address per member, or None."""
    _, a, b, _ = state.zookeeper.host.split(".")
    return (int(a), int(b)) if state.zookeeper.host != HOST else None


def _listening_addresses() -> set[str]:
    """IPv4 addresses that have a listening TCP socket on this machine (from /proc/net/tcp)."""
    addresses = set()
    try:
        lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return addresses
    for line in lines:
        fields = line.split()
        if len(fields) > 3 and fields[3] == "0A":  # TCP_LISTEN
            raw = int(fields[1].split(":")[0], 16)
            addresses.add(socket.inet_ntoa(raw.to_bytes(4, sys.byteorder)))
    return addresses


def choose_block(previous: tuple[int, int] | None = None) -> tuple[int, int]:
    """A 127.A.B.0/24 block where nothing listens: the cluster's previous one if it is free, else a random one
    (A >= 2: 127.0.x.x and 127.1.x.x are left to the rest of the machine)."""
    busy = {tuple(int(part) for part in address.split(".")[1:3]) for address in _listening_addresses()
            if address.startswith("127.")}
    if previous is not None and previous not in busy:
        return previous
    chooser = random.SystemRandom()
    for _ in range(1000):
        block = (chooser.randint(2, 254), chooser.randint(0, 255))
        if block not in busy:
            return block
    raise ClusterError("no free 127.A.B.0/24 block of loopback addresses")


def _heal_if_possible(state: ClusterState) -> list[netsplit.Cut]:
    """Remove the cluster's network cuts when this process may (root); otherwise there is nothing it could
    have cut."""
    if block_of(state) is None or not netsplit.can_change_rules():
        return []
    try:
        return netsplit.heal(state.addresses)
    except netsplit.NoPermissionError:  # root without CAP_NET_ADMIN (a container): it cannot have cut anything
        return []


_EXEC_WAIT_S = 5.0


# Starts the broker in the background with its output appended to server.log, prints its pid, and once it ends
# writes its exit status (128+N when signal N killed it): a broker that dies leaves a record of how.
_SUPERVISOR = '"$@" </dev/null >>"$MK_SERVER_LOG" 2>&1 & echo $!; exec >/dev/null; wait $!; echo $? >"$MK_EXIT_FILE"'
EXIT_FILE = "exit-status"


def _spawn_broker(config: Path) -> int:
    env = dict(os.environ, PYTHONUNBUFFERED="1", MK_SERVER_LOG=str(config.parent / "server.log"),
               MK_EXIT_FILE=str(config.parent / EXIT_FILE))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PROJECT_ROOT), env.get("PYTHONPATH")]))
    (config.parent / EXIT_FILE).unlink(missing_ok=True)
    supervisor = subprocess.Popen(
        ["/bin/sh", "-c", _SUPERVISOR, "minikafka-broker", *broker_command(config)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    assert supervisor.stdout is not None
    with supervisor.stdout:
        line = supervisor.stdout.readline()
    if not line.strip().isdigit():
        raise ClusterError(f"could not start a broker with {config}")
    pid = int(line)
    # Until the broker has exec'd, /proc/<pid>/cmdline is the shell's, or empty during the exec itself.
    deadline = time.monotonic() + _EXEC_WAIT_S
    command = os.fsencode(sys.executable) + b"\0"
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(command):
                break
        except OSError:
            break  # gone already: the exit status will say how
        time.sleep(0.005)
    return pid


def exit_status(broker: BrokerProcess) -> int | None:
    """How the broker's last process ended (128+N: killed by signal N), or None if no end is recorded."""
    try:
        return int((Path(broker.config).parent / EXIT_FILE).read_text())
    except (OSError, ValueError):
        return None


def describe_exit(status: int) -> str:
    """'exited with status 1', 'killed by SIGKILL'."""
    if status > 128:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(status - 128).name}"
    return f"exited with status {status}"


def _signal_broker(broker: BrokerProcess, sig: signal.Signals) -> bool:
    """Send `sig` if the broker runs; False if it does not."""
    if not broker_running(broker):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(broker.pid, sig)
    return True


def _stop_brokers(brokers: list[BrokerProcess], timeout_s: float) -> None:
    """SIGUSR1 (and SIGCONT, for stopped ones), then SIGKILL whatever still runs after timeout_s. SIGUSR1 is a
    broker's clean shutdown without the controlled one (broker.server.serve): every broker stops, so none is left
    to take over leaderships."""
    running = [b for b in brokers if _signal_broker(b, signal.SIGUSR1)]
    for broker in running:
        _signal_broker(broker, signal.SIGCONT)
    for sig in (None, signal.SIGKILL):
        if sig is not None:
            for broker in running:
                _signal_broker(broker, sig)
        deadline = time.monotonic() + timeout_s
        while (running := [b for b in running if broker_running(b)]) and time.monotonic() < deadline:
            time.sleep(_POLL_S)
    if running:
        raise ClusterError(f"brokers {', '.join(str(b.id) for b in running)} did not exit")


# ----------------------------------------------------------------------------------------- readiness


async def _metadata(broker: BrokerProcess) -> MetadataResponse:
    connection = BrokerConnection(
        broker.host, broker.port, client_id="minikafka-cluster", request_timeout_ms=_PROBE_TIMEOUT_MS
    )
    try:
        await connection.connect()
        return await connection.request(MetadataRequest(topics=[]))
    finally:
        await connection.close()


async def _readiness_problem(broker: BrokerProcess, expected: set[int]) -> str:
    """Why the broker is not ready yet ('' if it is): it must answer Metadata listing the expected brokers
    and a controller."""
    try:
        response = await _metadata(broker)
    except (KafkaConnectionError, KafkaError) as e:
        return f"broker {broker.id} does not answer: {e}"
    missing = expected - {b.node_id for b in response.brokers}
    if missing:
        return f"broker {broker.id} does not list brokers {sorted(missing)} yet"
    if response.controller_id == -1:
        return f"broker {broker.id} knows no controller yet"
    return ""


async def wait_until_ready(brokers: list[BrokerProcess], expected: set[int], timeout_s: float) -> None:
    """Poll until every broker in `brokers` is ready; ClusterError at once if one exits, or at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        for broker in brokers:
            if not broker_running(broker):
                status = exit_status(broker)
                settle = time.monotonic() + 1.0  # the shell writes the status right after the broker ends
                while status is None and time.monotonic() < settle:
                    await asyncio.sleep(_POLL_S / 10)
                    status = exit_status(broker)
                how = f" ({describe_exit(status)})" if status is not None else ""
                raise ClusterError(f"broker {broker.id} exited{how}:\n{log_tail(broker.server_log)}")
        problems = [p for p in await asyncio.gather(*(_readiness_problem(b, expected) for b in brokers)) if p]
        if not problems:
            return
        if time.monotonic() >= deadline:
            broker = next(b for b, p in zip(brokers, problems, strict=False) if p)
            raise ClusterError(
                f"the cluster was not ready within {timeout_s:.0f} s: {problems[0]}\n"
                f"last lines of {broker.server_log}:\n{log_tail(broker.server_log)}"
            )
        await asyncio.sleep(_POLL_S)


# ----------------------------------------------------------------------------------------- commands


def any_running(state: ClusterState) -> bool:
    """True if ZooKeeper or any broker of the cluster still runs."""
    return any(broker_running(b) for b in state.brokers) or zookeeper_running(state.zookeeper)


async def cluster_up(
    directory: Path,
    *,
    brokers: int = 3,
    overrides: Mapping[str, str] | None = None,
    base_port: int | None = None,
    zookeeper_port: int = 0,
    zookeeper_jvm_flags: Sequence[str] = (),
    timeout_s: float = 60.0,
    security: str = "plaintext",
) -> ClusterState:
    """Start ZooKeeper and `brokers` brokers (ids 1..N) described in `directory` and wait until every broker
    lists all of them and a controller. Data of an earlier cluster in the directory is kept. On failure,
    everything started is stopped again. ZooKeeper's JVM gets `zookeeper_jvm_flags`; a -Djute.maxbuffer=N among
    them is the brokers' zookeeper.jute.maxbuffer too, unless `overrides` set it; so are the development settings
    (`development_settings`). With a `security` other than plaintext every broker gets a secured listener too
    (client/cluster_security.py), and the directory the client settings to reach it."""
    if not 1 <= brokers <= MAX_BROKERS:
        raise ClusterError(f"a cluster has 1 to {MAX_BROKERS} brokers, not {brokers}")
    directory = directory.resolve()
    previous = load_cluster(directory) if (directory / CLUSTER_FILE).exists() else None
    if previous is not None and any_running(previous):
        raise ClusterError(f"a cluster is already running in {directory}; run `minikafka cluster down` first")
    block = choose_block(block_of(previous) if previous is not None else None)
    directory.mkdir(parents=True, exist_ok=True)
    zk_server = ZooKeeperServer(directory / "zookeeper", port=zookeeper_port, host=member_address(block, 0),
                                jvm_flags=zookeeper_jvm_flags)
    overrides = {**development_settings(brokers), **(overrides or {})}
    maxbuffer = jute_maxbuffer(zookeeper_jvm_flags)
    if maxbuffer is not None:
        overrides = {"zookeeper.jute.maxbuffer": str(maxbuffer), **overrides}
    try:
        await asyncio.to_thread(zk_server.start, detach=True)
    except ZooKeeperError as e:
        raise ClusterError(f"ZooKeeper did not start: {e}") from None
    assert zk_server.pid is not None
    zookeeper = ZooKeeperProcess(port=zk_server.port, pid=zk_server.pid, data_dir=str(zk_server.data_dir),
                                 host=zk_server.host)
    state = ClusterState(directory, zookeeper, ())
    try:
        _heal_if_possible(state)  # cuts left by an earlier cluster on these addresses
        hosts = [member_address(block, broker_id) for broker_id in range(1, brokers + 1)]
        ports = [base_port + i for i in range(2 * brokers)] if base_port else _free_ports(hosts + hosts)
        ports, secure_ports = ports[:brokers], ports[brokers:]
        scraped = metrics_ports(hosts, overrides)
        secured = prepare(directory, security, dict(enumerate(hosts, start=1)))
        if secured is not None and secured.sasl:
            await create_admin_user(zookeeper.connect, CHROOT, ADMIN_USER, secured.admin_password, SCRAM_MECHANISM)
        for broker_id, (host, port, metrics_port, secure_port) in enumerate(
                zip(hosts, ports, scraped, secure_ports, strict=True), start=1):
            broker_dir = directory / f"broker-{broker_id}"
            broker_dir.mkdir(exist_ok=True)
            config = broker_dir / "server.properties"
            log_dir = broker_dir / "data"
            settings = overrides if secured is None else {**secured.broker_settings(broker_dir), **overrides}
            config.write_text(server_properties(
                broker_id, port, log_dir, zookeeper.connect + CHROOT, settings, host=host, metrics_port=metrics_port,
                secured=None if secured is None else (secured.listener_name, secure_port)))
            config.chmod(0o600)  # it may hold a key's password
            broker = BrokerProcess(broker_id, host, port, _spawn_broker(config), str(config), str(log_dir),
                                   metrics_port, 0 if secured is None else secure_port)
            state = ClusterState(directory, zookeeper, (*state.brokers, broker))
        save_cluster(state)
        await wait_until_ready(list(state.brokers), {b.id for b in state.brokers}, timeout_s)
    except BaseException:
        await asyncio.to_thread(_stop_all, state, 10.0)
        raise
    return state


def _stop_all(state: ClusterState, timeout_s: float) -> None:
    try:
        _stop_brokers(list(state.brokers), timeout_s)
    finally:
        try:
            stop_pid(state.zookeeper.pid, timeout_s)
        except ZooKeeperError as e:
            raise ClusterError(str(e)) from None


async def cluster_down(directory: Path, *, timeout_s: float = 30.0) -> ClusterState:
    """Heal every network cut (when run as root), stop every broker (a clean shutdown, not a controlled one;
    SIGKILL after timeout_s), then ZooKeeper."""
    state = load_cluster(directory)
    await asyncio.to_thread(_heal_if_possible, state)
    await asyncio.to_thread(_stop_all, state, timeout_s)
    return state


def kill_broker(directory: Path, broker_id: int, signal_name: str = "TERM") -> BrokerProcess:
    """Send a signal (KILL, TERM, STOP or CONT) to a running broker."""
    sig = SIGNALS.get(signal_name.upper())
    if sig is None:
        raise ClusterError(f"unknown signal {signal_name!r} (use one of {', '.join(SIGNALS)})")
    broker = load_cluster(directory).broker(broker_id)
    if not _signal_broker(broker, sig):
        raise ClusterError(f"broker {broker_id} is not running (pid {broker.pid})")
    return broker


async def start_broker(directory: Path, broker_id: int, *, timeout_s: float = 60.0) -> BrokerProcess:
    """Restart a stopped broker with its server.properties and data, and wait until the cluster lists it."""
    state = load_cluster(directory)
    broker = state.broker(broker_id)
    if broker_running(broker):
        raise ClusterError(f"broker {broker_id} is already running (pid {broker.pid})")
    restarted = BrokerProcess(broker.id, broker.host, broker.port, _spawn_broker(Path(broker.config)), broker.config,
                              broker.log_dir, broker.metrics_port, broker.secure_port)
    save_cluster(state.with_broker(restarted))
    await wait_until_ready([restarted], {broker_id}, timeout_s)
    return restarted


def partition_cluster(directory: Path, side_a: str, side_b: str, *, one_way: bool = False) -> netsplit.Cut:
    """Drop every packet between two sides of the cluster (only from A to B if one_way). A side is a
    comma-separated list of broker ids and/or "zk"."""
    netsplit.require_nft()
    state = load_cluster(directory)
    cut = netsplit.make_cut(side_a, side_b, state.addresses, one_way=one_way)
    netsplit.apply_cut(state.addresses, cut)
    return cut


def heal_cluster(directory: Path) -> list[netsplit.Cut]:
    """Remove every cut of the cluster; returns those that were in force."""
    netsplit.require_nft()
    state = load_cluster(directory)
    netsplit.check_addresses(state.addresses)
    return netsplit.heal(state.addresses)


def _cuts(state: ClusterState) -> list[str] | None:
    """The cuts in force, or None when they cannot be listed (not root, or no address per member)."""
    if block_of(state) is None or not netsplit.can_change_rules():
        return None
    try:
        return [str(cut) for cut in netsplit.list_cuts(state.addresses)]
    except netsplit.NetsplitError:
        return None


async def cluster_status(directory: Path) -> dict[str, Any]:
    """{"cluster_id", "controller", "controller_epoch", "zookeeper": {"host", "port", "pid", "alive"}, "brokers":
    [{"id", "pid", "host", "port", "kafka_address", "metrics_address", "log_dir", "alive", "exit_status"}], "cuts":
    ["1 <-> 2,3,zk", ...] or None when they cannot be listed}: cluster_id is the id the brokers answer with
    (/cluster/id), null if none answers; alive means the pid runs the broker and the broker answers Metadata;
    kafka_address is where Kafka's own clients connect ("host:port": the listener serves both protocols; in a
    secured cluster its secured listener, which client.properties in the directory is for);
    metrics_address is where it serves /metrics ("host:port", null without metrics.port);
    exit_status is how a broker that no longer runs ended (128+N: killed by signal N), null while it runs or if
    unknown."""
    state = load_cluster(directory)
    answers = await asyncio.gather(*(_probe(b) for b in state.brokers))
    controllers = [a.controller_id for a in answers if a is not None and a.controller_id != -1]
    zk_alive = zookeeper_running(state.zookeeper)
    cluster_ids = [a.cluster_id for a in answers if a is not None and a.cluster_id]
    return {
        "cluster_id": cluster_ids[0] if cluster_ids else None,
        "controller": controllers[0] if controllers else None,
        "controller_epoch": await _controller_epoch(state) if zk_alive else None,
        "zookeeper": {"host": state.zookeeper.host, "port": state.zookeeper.port, "pid": state.zookeeper.pid,
                      "alive": zk_alive},
        "brokers": [
            {
                "id": b.id,
                "pid": b.pid,
                "host": b.host,
                "port": b.port,
                "kafka_address": b.kafka_address,
                "metrics_address": b.metrics_address,
                "log_dir": b.log_dir,
                "alive": answer is not None,
                "exit_status": None if broker_running(b) else exit_status(b),
            }
            for b, answer in zip(state.brokers, answers, strict=True)
        ],
        "cuts": await asyncio.to_thread(_cuts, state),
    }


async def _probe(broker: BrokerProcess) -> MetadataResponse | None:
    """The broker's Metadata answer, or None if its process is gone or it does not answer."""
    if not broker_running(broker):
        return None
    try:
        return await _metadata(broker)
    except (KafkaConnectionError, KafkaError):
        return None


async def _controller_epoch(state: ClusterState) -> int | None:
    """The integer in /controller_epoch, or None if ZooKeeper does not tell within a few seconds."""
    from zk.client import ZkClient

    client = ZkClient(state.zookeeper.connect, chroot=state.chroot)
    try:
        async with asyncio.timeout(5):
            await client.start()
            data, _ = await client.get("/controller_epoch")
        return int(data)
    except Exception:  # a status probe: any failure (no node, no session, bad data) means "unknown"
        return None
    finally:
        with contextlib.suppress(Exception):
            await client.close()
