"""client.cluster without ZooKeeper or brokers: server.properties, cluster.json, and the signalling of recorded
pids (stand-in processes whose command lines look like brokers')."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from broker.config import BrokerConfig, parse_overrides, parse_properties
from client.cluster import (
    CLUSTER_FILE,
    BrokerProcess,
    ClusterError,
    ClusterState,
    ZooKeeperProcess,
    broker_command,
    broker_running,
    cluster_down,
    kill_broker,
    load_cluster,
    member_address,
    metrics_ports,
    process_running,
    save_cluster,
    server_properties,
)
from protocol.endpoint import EndPoint
from tests.polling import wait_for
from tests.processes import process_state

DEAD_PID = 2**22 + 11  # above the default pid_max: never a running process


def test_server_properties_are_what_the_broker_reads(tmp_path):
    text = server_properties(2, 9093, tmp_path / "data", "127.0.0.1:2181/minikafka", {"min.insync.replicas": "2"})
    props = parse_properties(text)
    assert props["broker.id"] == "2"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9093"
    assert props["min.insync.replicas"] == "2"
    config = BrokerConfig.from_properties(props)
    assert config.broker_id == 2
    assert config.listeners.advertised_listeners == (EndPoint("PLAINTEXT", "127.0.0.1", 9093),)
    assert config.source_address == "127.0.0.1"
    assert config.log_dirs == [tmp_path / "data"]
    assert (config.zookeeper_connect, config.zookeeper_chroot) == ("127.0.0.1:2181", "/minikafka")


def test_a_member_address_is_both_the_listener_and_the_source_of_connections(tmp_path):
    props = parse_properties(server_properties(3, 9092, tmp_path, "127.9.8.1:2181/minikafka", host="127.9.8.4"))
    config = BrokerConfig.from_properties(props)
    assert config.listeners.advertised_listeners == (EndPoint("PLAINTEXT", "127.9.8.4", 9092),)
    assert config.source_address == "127.9.8.4"
    assert member_address((9, 8), 0) == "127.9.8.1" and member_address((9, 8), 3) == "127.9.8.4"


def test_overrides_replace_the_generated_settings(tmp_path):
    props = parse_properties(server_properties(1, 9092, tmp_path, "zk:1/minikafka", {"log.dirs": "/elsewhere"}))
    assert props["log.dirs"] == "/elsewhere"


def test_parse_overrides():
    assert parse_overrides(["a=1", " b = x=y ", "c="]) == {"a": "1", "b": "x=y", "c": ""}
    for bad in ("novalue", "=1"):
        with pytest.raises(ValueError, match="KEY=VALUE"):
            parse_overrides([bad])


def _state(directory: Path, *brokers: BrokerProcess, zk_pid: int = DEAD_PID) -> ClusterState:
    return ClusterState(directory, ZooKeeperProcess(port=2181, pid=zk_pid, data_dir=str(directory / "zk")), brokers)


def test_cluster_json_round_trip_and_shape(tmp_path):
    state = _state(
        tmp_path,
        BrokerProcess(1, "127.0.0.1", 9092, 100, str(tmp_path / "broker-1/server.properties"), str(tmp_path / "d1")),
        BrokerProcess(2, "127.0.0.1", 9093, 101, str(tmp_path / "broker-2/server.properties"), str(tmp_path / "d2"),
                      metrics_port=9193, secure_port=9293),
    )
    save_cluster(state)
    assert load_cluster(tmp_path) == state
    data = json.loads((tmp_path / CLUSTER_FILE).read_text())
    assert data["zookeeper"] == {"port": 2181, "pid": DEAD_PID, "data_dir": str(tmp_path / "zk"),
                                 "host": "127.0.0.1", "connect": "127.0.0.1:2181"}
    config, log_dir = str(tmp_path / "broker-1/server.properties"), str(tmp_path / "d1")
    assert data["brokers"][0] == {"id": 1, "host": "127.0.0.1", "port": 9092, "pid": 100, "config": config,
                                  "log_dir": log_dir, "metrics_port": 0, "secure_port": 0}
    assert (state.broker(1).metrics_address, state.broker(2).metrics_address) == (None, "127.0.0.1:9193")
    assert state.bootstrap_servers == "127.0.0.1:9092,127.0.0.1:9093"
    assert state.kafka_bootstrap_servers == "127.0.0.1:9092,127.0.0.1:9293"
    assert state.broker(2).server_log == tmp_path / "broker-2/server.log"
    with pytest.raises(ClusterError, match="no broker 3"):
        state.broker(3)
    assert not list(tmp_path.glob("*.tmp"))


def test_a_missing_or_damaged_cluster_file_is_a_clear_error(tmp_path):
    with pytest.raises(ClusterError, match="cluster up"):
        load_cluster(tmp_path)
    (tmp_path / CLUSTER_FILE).write_text('{"brokers": []}')
    with pytest.raises(ClusterError, match="damaged"):
        load_cluster(tmp_path)


def test_broker_command_runs_the_cli_module(tmp_path):
    assert broker_command(tmp_path / "server.properties") == [
        sys.executable, "-m", "client.cli", "broker", "--config", str(tmp_path / "server.properties")
    ]


def test_process_running_checks_the_command_line():
    assert process_running(os.getpid())
    assert process_running(os.getpid(), "python")
    assert not process_running(os.getpid(), "no-such-marker-in-cmdline")
    assert not process_running(DEAD_PID)


def test_an_exited_child_is_not_running():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    wait_for(lambda: not process_running(child.pid), f"the exited child {child.pid} not to count as running",
             timeout_s=10, interval_s=0.01)


# A process whose command line looks like the broker's for a given config file: `python -c CODE client.cli CONFIG`.
SLEEPER = "import signal, sys, time\n{setup}\nprint('ready', flush=True)\ntime.sleep(60)"


def _fake_broker(tmp_path: Path, broker_id: int, setup: str = "") -> tuple[BrokerProcess, subprocess.Popen]:
    """A sleeping process whose command line names a broker config; returns once `setup` has run."""
    config = tmp_path / f"broker-{broker_id}" / "server.properties"
    process = subprocess.Popen([sys.executable, "-c", SLEEPER.format(setup=setup), "client.cli", str(config)],
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    process.stdout.close()  # it prints nothing more
    return BrokerProcess(broker_id, "127.0.0.1", 1, process.pid, str(config), "d"), process


def test_a_broker_is_recognised_only_by_its_own_config(tmp_path):
    broker, process = _fake_broker(tmp_path, 1)
    try:
        assert broker_running(broker)
        other = BrokerProcess(1, "127.0.0.1", 1, process.pid, str(tmp_path / "other.properties"), "d")
        assert not broker_running(other)
    finally:
        process.kill()
        process.wait()
    assert not broker_running(broker)


def test_kill_sends_the_signal_to_the_recorded_pid(tmp_path):
    broker, process = _fake_broker(tmp_path, 1)
    save_cluster(_state(tmp_path, broker))
    try:
        kill_broker(tmp_path, 1, "stop")
        wait_for(lambda: process_state(process.pid) == "T", f"process {process.pid} to be stopped", timeout_s=10,
                 interval_s=0.01)
        kill_broker(tmp_path, 1, "CONT")
        kill_broker(tmp_path, 1, "KILL")
        assert process.wait(10) == -signal.SIGKILL
        with pytest.raises(ClusterError, match="not running"):
            kill_broker(tmp_path, 1, "TERM")
        with pytest.raises(ClusterError, match="unknown signal"):
            kill_broker(tmp_path, 1, "HUP")
    finally:
        process.kill()
        process.wait()


async def test_cluster_down_stops_stopped_and_stubborn_brokers(tmp_path):
    """cluster down sends SIGUSR1 (a clean shutdown without the controlled one), continues stopped brokers, and
    kills what is still running after its timeout."""
    polite, polite_process = _fake_broker(tmp_path, 1)
    stubborn, stubborn_process = _fake_broker(tmp_path, 2, "signal.signal(signal.SIGUSR1, signal.SIG_IGN)")
    stopped, stopped_process = _fake_broker(tmp_path, 3)
    processes = [polite_process, stubborn_process, stopped_process]
    try:
        os.kill(stopped_process.pid, signal.SIGSTOP)
        save_cluster(_state(tmp_path, polite, stubborn, stopped))
        await cluster_down(tmp_path, timeout_s=1)
        assert polite_process.wait(10) == -signal.SIGUSR1
        assert stubborn_process.wait(10) == -signal.SIGKILL
        assert stopped_process.wait(10) == -signal.SIGUSR1
    finally:
        for process in processes:
            process.kill()
            process.wait()


def test_cluster_up_gives_each_broker_a_free_metrics_port_unless_metrics_port_is_set():
    hosts = ["127.0.0.1", "127.0.0.2"]
    assert all(port > 0 for port in metrics_ports(hosts, {}))
    assert metrics_ports(hosts, {"metrics.port": "0"}) == [0, 0]  # no metrics
    with pytest.raises(ClusterError, match=r"metrics\.port"):
        metrics_ports(hosts, {"metrics.port": "nine"})
