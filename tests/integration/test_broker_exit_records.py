"""A broker never ends silently: `cluster status` says how a broker's process ended, a fatal signal leaves every
thread's stack in server.log, and an error that stops a broker is logged before it exits: log dirs of another broker
or of another cluster (Kafka's InconsistentClusterIdException) in one line."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable
from pathlib import Path

from client.cluster import ClusterState, broker_running, load_cluster
from tests.integration.clusterutil import cli, cluster_fixture, cluster_id_in_zookeeper, status_json
from tests.polling import eventually

cluster = cluster_fixture(brokers=2, configs={"zookeeper.session.timeout.ms": "3000",
                                             "controlled.shutdown.enable": "false"})


def _status(cluster: ClusterState, broker_id: int) -> dict:
    return next(b for b in status_json(cluster.directory)["brokers"] if b["id"] == broker_id)


async def _ended(cluster: ClusterState, broker_id: int) -> dict:
    async def probe() -> dict | None:
        broker = load_cluster(cluster.directory).broker(broker_id)
        entry = _status(cluster, broker_id)
        return entry if not broker_running(broker) and entry["exit_status"] is not None else None

    return await eventually(probe, f"broker {broker_id} to end with a recorded exit status")


def _restart(cluster: ClusterState, broker_id: int) -> None:
    cli("cluster", "start", str(broker_id), "--dir", str(cluster.directory))
    assert _status(cluster, broker_id)["exit_status"] is None


async def test_a_killed_broker_is_reported_with_its_signal(cluster):
    cli("cluster", "kill", "2", "--signal", "KILL", "--dir", str(cluster.directory))
    entry = await _ended(cluster, 2)
    assert entry["exit_status"] == 128 + signal.SIGKILL and not entry["alive"]
    text = cli("cluster", "status", "--dir", str(cluster.directory)).stdout
    assert "broker 2:" in text and "down (killed by SIGKILL)" in text
    _restart(cluster, 2)


async def test_a_fatal_signal_leaves_the_stacks_in_the_server_log(cluster):
    broker = load_cluster(cluster.directory).broker(2)
    os.kill(broker.pid, signal.SIGSEGV)
    entry = await _ended(cluster, 2)
    assert entry["exit_status"] == 128 + signal.SIGSEGV
    log = broker.server_log.read_text(errors="replace")
    assert "Fatal Python error: Segmentation fault" in log
    assert "Current thread" in log or "Thread 0x" in log
    _restart(cluster, 2)


async def _start_refused(cluster: ClusterState, edit: Callable[[str], str]) -> str:
    """Stop broker 2, edit its meta.properties, check that `cluster start` fails with exit status 1 and return the
    broker's server.log; the file is restored and the broker restarted after."""
    broker = load_cluster(cluster.directory).broker(2)
    cli("cluster", "kill", "2", "--signal", "TERM", "--dir", str(cluster.directory))
    await _ended(cluster, 2)
    meta = Path(broker.log_dir) / "meta.properties"
    original = meta.read_text()
    meta.write_text(edit(original))
    try:
        result = cli("cluster", "start", "2", "--dir", str(cluster.directory), check=False)
        assert result.returncode != 0
        assert "broker 2 exited (exited with status 1)" in result.stderr
        assert _status(cluster, 2)["exit_status"] == 1
        return broker.server_log.read_text(errors="replace")
    finally:
        meta.write_text(original)
        _restart(cluster, 2)


async def test_a_broker_that_cannot_start_logs_why_and_exits_with_status_1(cluster):
    log = await _start_refused(cluster, lambda meta: meta.replace("broker.id=2", "broker.id=99"))
    assert "broker 2 cannot start: log dir" in log and "belongs to broker.id 99" in log


async def test_a_broker_whose_log_dir_names_another_cluster_refuses_to_start(cluster):
    ours = re.compile(r"^cluster\.id=(.+)$", re.MULTILINE)
    cluster_id = await cluster_id_in_zookeeper(cluster)
    log = await _start_refused(cluster, lambda meta: ours.sub("cluster.id=kGwRvbWGSsO6m3ZxaPbnCw", meta))
    assert (f"broker 2 cannot start: The Cluster ID {cluster_id} doesn't match stored clusterId "
            "kGwRvbWGSsO6m3ZxaPbnCw in meta.properties") in log
