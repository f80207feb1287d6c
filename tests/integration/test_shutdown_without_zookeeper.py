"""A broker whose ZooKeeper is gone for good still shuts down cleanly and promptly: once its controlled shutdown is
over, an ISR write that ZooKeeper will never answer fails at once instead of holding the shutdown for
zookeeper.connection.timeout.ms, and the broker ends with exit status 0, its checkpoints and its clean-shutdown
marker written (as when `docker compose stop` stops ZooKeeper and the brokers at once, with a grace period shorter
than the connection timeout plus the controlled shutdown's retries)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from broker.log.checkpoint import CLEAN_SHUTDOWN_MARKER
from client.cluster import BrokerProcess, ClusterState, broker_running, exit_status, kill_broker, load_cluster
from tests.integration.clusterutil import cluster_fixture, create_topic, describe_topic, server_log, wait_process_state
from tests.polling import eventually

TOPIC = "orphaned"
cluster = cluster_fixture(brokers=3, configs={"zookeeper.session.timeout.ms": "4000",
                                             "replica.lag.time.max.ms": "2000",
                                             "controller.socket.timeout.ms": "3000",
                                             "controlled.shutdown.retry.backoff.ms": "500",
                                             "zookeeper.connection.timeout.ms": "120000"})


async def test_a_leader_stops_cleanly_while_its_isr_write_waits_for_a_zookeeper_that_is_gone(cluster: ClusterState):
    await create_topic(cluster, TOPIC, partitions=1, replication_factor=3)
    leader = (await eventually(lambda: _leader(cluster), f"{TOPIC}-0 to have a leader and a full ISR"))
    follower = next(b.id for b in cluster.brokers if b.id != leader)

    os.kill(cluster.zookeeper.pid, signal.SIGKILL)
    await wait_process_state(cluster.zookeeper.pid, lambda state: state in ("", "Z"), "ZooKeeper gone")
    await wait_process_state(kill_broker(cluster.directory, follower, "KILL").pid, lambda s: s == "", "gone")
    stopping = cluster.broker(leader)
    await eventually(lambda: _logged(stopping, f"writing ISR {[1, 2, 3]} -> "),
                     f"broker {leader} to write a shrunk ISR", timeout_s=30)

    kill_broker(cluster.directory, leader, "TERM")
    # well before the connection timeout of 120 s: the controlled shutdown's 3 attempts take about 10 s
    status = await eventually(lambda: _ended(cluster, leader), f"broker {leader} to end", timeout_s=60)
    assert status == 0, server_log(stopping, 60)
    assert await _logged(stopping, "no waiting for one while shutting down"), server_log(stopping, 60)
    log_dir = Path(stopping.log_dir)
    assert (log_dir / CLEAN_SHUTDOWN_MARKER).exists()
    for checkpoint in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        assert f"{TOPIC} 0 " in (log_dir / checkpoint).read_text(), checkpoint


async def _leader(cluster: ClusterState) -> int | None:
    info = (await describe_topic(cluster, TOPIC)).get(0)
    return info.leader if info is not None and len(info.isr) == 3 else None


async def _logged(broker: BrokerProcess, text: str) -> bool | None:
    return True if text in Path(broker.server_log).read_text() else None


async def _ended(cluster: ClusterState, broker_id: int) -> int | None:
    """The broker's exit status once its process is gone and the status is recorded."""
    broker = load_cluster(cluster.directory).broker(broker_id)
    return None if broker_running(broker) else exit_status(broker)
