"""The verifier's own Spark session is started with the settings it is tuned for (its Python workers on Unix domain
sockets, the generated code kept, the driver JVM with the throughput collector and only the JIT's quick compiler, and
mapping the class archive `make setup` made), a verification leaves no socket behind, the JVM's own warnings never
reach the verifier's output, and a session Spark cannot start, or a driver JVM that dies, ends the verification with
one line saying why."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from subprocess import CompletedProcess

from protocol.history import OK, HistoryWriter, Outcome
from tests.integration.clusterutil import CLI_TIMEOUT_S, PROJECT_ROOT, cli
from tests.verifierutil import log_dir, write_replica
from verifier.class_archive import archive_is_mapped
from verifier.session import (
    CODEGEN_CACHE_ENTRIES,
    CONF_DIR,
    DRIVER_JAVA_OPTIONS,
    SOCKET_NAME_BYTES,
    SOCKET_PATH_BYTES,
    class_archive,
    socket_directory,
)


def _short_directory() -> tempfile.TemporaryDirectory[str]:
    """A temporary directory with a short path (in /tmp): a socket's path holds at most SOCKET_PATH_BYTES."""
    return tempfile.TemporaryDirectory(prefix="mk-", dir="/tmp")


def test_the_verifiers_session_runs_with_the_settings_it_is_tuned_for(spark):
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.python.unix.domain.socket.enabled") == "true"
    assert Path(conf.get("spark.python.unix.domain.socket.dir")).is_dir()
    assert conf.get("spark.sql.codegen.cache.maxEntries") == str(CODEGEN_CACHE_ENTRIES)
    jvm_arguments = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                         .getInputArguments())
    assert set(DRIVER_JAVA_OPTIONS.split()) <= set(jvm_arguments), jvm_arguments


def test_the_driver_jvm_maps_the_class_archive_that_setup_made(spark):
    assert class_archive().is_file(), f"no {class_archive()}: make setup makes it"
    assert archive_is_mapped()


def _verify_a_partition_from_the_command_line(tmp_path: Path, env: dict[str, str],
                                              *options: str) -> CompletedProcess[str]:
    """`minikafka verify --json` (a process of its own, with ``env`` added, and ``options``) of a log directory of
    one partition."""
    directory = log_dir(tmp_path, 1)
    write_replica(directory, "t", 0, [(0, [b"a", b"b"])])
    return cli("verify", str(directory), "--json", *options, check=False, env=env)


def test_a_warning_of_the_jvm_goes_to_the_spark_log_not_to_the_verifiers_output(spark, tmp_path: Path):
    # A directory of files on the JVM's class path: the JVM warns that it cannot use the class archive.
    run = _verify_a_partition_from_the_command_line(tmp_path, {"SPARK_CONF_DIR": str(CONF_DIR)})
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["consistent"] is True
    assert "warning" not in run.stderr.lower()


def _sockets(directory: Path) -> set[Path]:
    """The Unix sockets in the directory and in the directories in it."""
    return {path for pattern in ("*.sock", "*/*.sock") for path in directory.glob(pattern) if path.is_socket()}


def test_a_verification_from_the_command_line_leaves_no_socket_behind(spark, tmp_path: Path):
    # Where Spark puts the workers' sockets unless told otherwise.
    jvm_temp = Path(spark.sparkContext._jvm.java.lang.System.getProperty("java.io.tmpdir"))
    with _short_directory() as temp:
        before = _sockets(jvm_temp)
        run = _verify_a_partition_from_the_command_line(tmp_path, {"TMPDIR": temp})
        assert run.returncode == 0, run.stderr
        assert '"consistent": true' in run.stdout
        assert _sockets(Path(temp)) == set() and list(Path(temp).glob("minikafka-spark-*")) == []
        assert _sockets(jvm_temp) - before == set()


def test_where_the_temporary_directorys_path_is_too_long_for_a_socket_the_workers_keep_to_tcp(tmp_path: Path,
                                                                                                 monkeypatch):
    deep = tmp_path / ("d" * max(1, SOCKET_PATH_BYTES - len(str(tmp_path)) - SOCKET_NAME_BYTES))
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    assert socket_directory() is None
    assert list(deep.iterdir()) == []
    with _short_directory() as short:
        monkeypatch.setattr(tempfile, "tempdir", short)
        sockets = socket_directory()
        assert sockets is not None and sockets.parent == Path(short) and sockets.is_dir()


def test_a_verification_spark_cannot_run_exits_2_with_one_line_saying_why(tmp_path: Path):
    run = _verify_a_partition_from_the_command_line(tmp_path, {}, "--master", "no-such-master")

    assert run.returncode == 2, run.stderr
    [line] = run.stderr.strip().splitlines()
    assert line.startswith("error: the verification failed in Spark: Master must "), line  # Spark's reason
    log = Path(line.rsplit("(Spark's log: ", 1)[1].rstrip(")"))
    assert "Master must" in log.read_text()


def _driver_jvm_of(process: subprocess.Popen[str]) -> int:
    """The pid of the Spark driver JVM that ``process`` started (its child)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue  # a process that ended meanwhile
        if parent == process.pid and b"SparkSubmit" in command:
            return int(stat.parent.name)
    raise AssertionError(f"process {process.pid} has no Spark driver JVM")


def test_a_driver_jvm_killed_during_a_verification_ends_it_with_one_line_and_no_traceback(tmp_path: Path):
    directory = log_dir(tmp_path, 1)
    write_replica(directory, "t", 0, [(0, [b"a", b"b"])])
    history = tmp_path / "history.jsonl"
    with HistoryWriter(history) as writer:
        writer.write(Outcome("t", 0, 0, None, b"a", OK))
    verification = subprocess.Popen([sys.executable, "-m", "client.cli", "verify", str(directory), "--history",
                                     str(history)], cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
    try:
        assert verification.stderr is not None
        # The batches were read (a Python task sent its updates to PySpark's accumulator server); the history's
        # check, Spark jobs of its own, has just begun.
        line = ""
        for line in verification.stderr:
            if line.startswith(("checking ", "error: ")):
                break
        assert line.startswith("checking 1 history records"), line
        os.kill(_driver_jvm_of(verification), signal.SIGKILL)
        verification.wait(timeout=CLI_TIMEOUT_S)
        rest = verification.stderr.read()
    finally:
        verification.kill()

    assert verification.returncode == 2, rest
    [error] = rest.strip().splitlines()  # no traceback of PySpark's accumulator server's before it
    assert error.startswith("error: the verification failed in Spark: its driver JVM ended (killed by SIGKILL) "
                            "(Spark's log: "), error
