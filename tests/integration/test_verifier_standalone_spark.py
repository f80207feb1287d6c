"""The verifier unchanged under spark-submit on a standalone Spark cluster: a master and one worker started from
the installed pyspark on 127.0.0.1 (free ports), `spark-submit --master spark://...  verifier/submit.py ...`, the
same JSON report as on local[*], and the exit status of `minikafka verify`. Master and worker are stopped by pid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyspark
import pytest

from tests.polling import wait_for
from tests.verifierutil import flip_byte, log_dir, write_replica
from verifier import verify
from verifier.session import CONF_DIR
from zk.server import free_port

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).parent
START_TIMEOUT_S = 90.0


def _environment(tmp_path: Path) -> dict[str, str]:
    """For the daemons: Spark's default logging (their log says when they are ready), whatever the test session's
    own Spark set."""
    inherited = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONF_DIR", "PYSPARK_SUBMIT_ARGS")}
    return {**inherited, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(SPARK_HOME),
            "PYSPARK_PYTHON": sys.executable, "SPARK_DAEMON_MEMORY": "256m", "SPARK_LOG_DIR": str(tmp_path),
            "SPARK_WORKER_DIR": str(tmp_path / "work")}


@contextmanager
def _daemon(name: str, arguments: list[str], env: dict[str, str], log: Path, ready: str) -> Iterator[None]:
    """Run a Spark daemon through spark-class until the block ends; wait until its log shows `ready`."""
    with open(log, "ab") as out:
        process = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), name, *arguments], env=env,
                                   stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        def started() -> bool:
            if ready in log.read_text(errors="replace"):
                return True
            if process.poll() is not None:
                pytest.fail(f"{name} did not start ({process.poll()}):\n{log.read_text(errors='replace')[-3000:]}")
            return False

        wait_for(started, lambda: f"{name} to start:\n{log.read_text(errors='replace')[-3000:]}",
                 timeout_s=START_TIMEOUT_S, interval_s=0.2)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], Path]]:
    """(master URL, environment, worker directory) of a running standalone master with one worker."""
    env = _environment(tmp_path)
    port = free_port()
    master = ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port())]
    worker = ["--host", "127.0.0.1", "--webui-port", str(free_port()), "--cores", "2", "--memory", "1g",
              "--work-dir", env["SPARK_WORKER_DIR"], f"spark://127.0.0.1:{port}"]
    master_log, worker_log = tmp_path / "master.log", tmp_path / "worker.log"
    with _daemon("org.apache.spark.deploy.master.Master", master, env, master_log, "I have been elected leader"), \
            _daemon("org.apache.spark.deploy.worker.Worker", worker, env, worker_log, "Successfully registered"):
        yield f"spark://127.0.0.1:{port}", env, Path(env["SPARK_WORKER_DIR"])


def test_spark_submit_on_a_standalone_cluster_gives_the_local_report(standalone, spark: Any, tmp_path: Path):
    url, env, work = standalone
    one, two = log_dir(tmp_path / "data", 1), log_dir(tmp_path / "data", 2)
    for directory in (one, two):
        write_replica(directory, "events", 0, [(0, [b"a", b"b"]), (1, [b"c"]), (1, [b"d", b"e"])])
        write_replica(directory, "orders", 1, [(0, [b"x"] * 50)] * 20, segment_bytes=4096)
    flip_byte(two / "events-0" / f"{0:020d}.log", 80)
    local = verify([one, two], spark=spark).to_json()
    assert not local["consistent"]

    result = subprocess.run(
        [str(SPARK_HOME / "bin" / "spark-submit"), "--master", url, "--driver-memory", "512m",
         "--conf", "spark.ui.enabled=false", "--conf", "spark.executor.memory=512m",
         "--conf", f"spark.pyspark.python={sys.executable}",
         str(PROJECT_ROOT / "verifier" / "submit.py"), str(one), str(two), "--json"],
        env={**env, "SPARK_CONF_DIR": str(CONF_DIR)}, capture_output=True, text=True, timeout=300, cwd=PROJECT_ROOT)
    assert result.returncode == 1, result.stderr[-3000:]
    assert json.loads(result.stdout) == local
    # It ran on the cluster: the worker started executors for the application.
    applications = list(work.glob("app-*"))
    assert len(applications) == 1 and list(applications[0].glob("*/stderr")), sorted(work.rglob("*"))
