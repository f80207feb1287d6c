"""Start and stop a standalone Apache ZooKeeper server bound to loopback (tests and `minikafka cluster up`)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
# Optional: without an SLF4J binding ZooKeeper logs nothing, and its log is what explains a failed start.
SLF4J_SIMPLE_JAR = Path("/usr/share/java/slf4j-simple.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
JVM_FLAGS = ("-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
LOG_FILE = "zookeeper.log"
CONFIG_FILE = "zoo.cfg"


def jute_maxbuffer(jvm_flags: Sequence[str]) -> int | None:
    """The jute.maxbuffer these JVM flags give a server (the last -Djute.maxbuffer=N), None if they give none."""
    values = [flag.partition("=")[2] for flag in jvm_flags if flag.startswith("-Djute.maxbuffer=")]
    return int(values[-1], 0) if values else None


class ZooKeeperError(RuntimeError):
    """ZooKeeper could not be found, started or stopped."""


def zookeeper_available() -> bool:
    """True if the ZooKeeper jar and a java executable are installed."""
    return ZOOKEEPER_JAR.is_file() and shutil.which("java") is not None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def four_letter_word(host: str, port: int, word: str, timeout_s: float = 1.0) -> str:
    """ZooKeeper's answer to a four-letter command (srvr, ruok, stat, mntr); raises OSError if unreachable."""
    with socket.create_connection((host, port), timeout=timeout_s) as s:
        s.sendall(word.encode())
        chunks = []
        while chunk := s.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def listening(host: str, port: int) -> bool:
    """Whether something accepts TCP connections on host:port now."""
    try:
        socket.create_connection((host, port), timeout=1.0).close()
    except OSError:
        return False
    return True


def _running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def stop_pid(pid: int, timeout_s: float = 10.0) -> bool:
    """Stop a ZooKeeper server started detached by another process (SIGTERM, then SIGKILL).

    Only signals `pid` if its command line is a ZooKeeper server; returns False if it was not running."""
    if not _running(pid):
        return False
    if MAIN_CLASS.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes():
        raise ZooKeeperError(f"process {pid} is not a ZooKeeper server")
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not _running(pid):
                return True
            time.sleep(0.05)
    raise ZooKeeperError(f"ZooKeeper process {pid} did not exit")


class ZooKeeperServer:
    """A standalone ZooKeeper server process with its own data directory.

    `port=0` picks a free port at start. `jvm_flags` go to the JVM after the defaults (e.g. -Djute.maxbuffer=N, the
    largest request the server accepts). Synchronous (subprocess), usable from tests and the CLI.
    """

    def __init__(self, data_dir: Path, port: int = 0, tick_time_ms: int = 500, host: str = "127.0.0.1",
                 jvm_flags: Sequence[str] = ()) -> None:
        self.data_dir = Path(data_dir)
        self.port = port
        self.tick_time_ms = tick_time_ms
        self.host = host
        self.jvm_flags = tuple(jvm_flags)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def connect_string(self) -> str:
        """host:port for clients (no chroot)."""
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self._process.pid if self._process is not None else None

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_FILE

    def start(self, detach: bool = False, timeout_s: float = 30.0) -> None:
        """Launch the server and return once it serves clients.

        detach=True starts it in its own session so it outlives the calling process. On failure the
        process is killed and ZooKeeperError carries the tail of its log."""
        if self._process is not None:
            raise ZooKeeperError("ZooKeeper is already started")
        if not ZOOKEEPER_JAR.is_file():
            raise ZooKeeperError(f"ZooKeeper is not installed ({ZOOKEEPER_JAR} is missing): run make setup")
        java = shutil.which("java")
        if java is None:
            raise ZooKeeperError("java is not on PATH (ZooKeeper needs Java 11 or later): run make setup")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.port == 0:
            self.port = free_port(self.host)
        elif listening(self.host, self.port):  # else its answers would pass for ours
            raise ZooKeeperError(f"{self.connect_string} is in use already")
        config = self._write_config()
        classpath = [str(ZOOKEEPER_JAR)] + ([str(SLF4J_SIMPLE_JAR)] if SLF4J_SIMPLE_JAR.is_file() else [])
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [java, *JVM_FLAGS, *self.jvm_flags, "-cp", ":".join(classpath), MAIN_CLASS, str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.data_dir,
                start_new_session=detach,
            )
        try:
            self._wait_until_serving(timeout_s)
        except ZooKeeperError:
            self.stop()
            raise

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the server: SIGTERM, then SIGKILL if it does not exit within timeout_s."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout_s)

    def _write_config(self) -> Path:
        settings = {
            "tickTime": self.tick_time_ms,
            "dataDir": self.data_dir.resolve(),
            "clientPort": self.port,
            "clientPortAddress": self.host,
            "admin.enableServer": "false",
            "4lw.commands.whitelist": "srvr,ruok,stat,mntr",
            # The default maximum (20 ticks) would cut Kafka's default 18 s session with a short tick.
            "maxSessionTimeout": max(60_000, 20 * self.tick_time_ms),
        }
        path = self.data_dir / CONFIG_FILE
        path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        return path

    def _wait_until_serving(self, timeout_s: float) -> None:
        assert self._process is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ZooKeeperError(
                    f"ZooKeeper exited with status {self._process.returncode} while starting:\n{self._log_tail()}"
                )
            try:
                if "Mode:" in four_letter_word(self.host, self.port, "srvr"):
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise ZooKeeperError(
            f"ZooKeeper did not serve on {self.connect_string} within {timeout_s} s:\n{self._log_tail()}"
        )

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
