"""docker-compose.yml for real: the images are built, ZooKeeper and three brokers run in containers, the host
produces and consumes through the published ports with the bundled CLI while the leader's container is SIGKILLed
and started again, and the verifier service checks the stopped brokers' volumes. Nothing of the project is left
behind."""

from __future__ import annotations

import asyncio
import json

from protocol.apis.metadata import MetadataRequest
from tests.containers.podman import ComposeProject, compose_project, podman, require_containers
from tests.integration.clusterutil import cli
from tests.polling import wait_for
from transport.connection import BrokerConnection, KafkaConnectionError

TOPIC = "events"
FIRST, SECOND = 10_000, 2_000
WAIT_S = 120.0
POLL_S = 0.5
#: How long a command of the bundled CLI may take.
CLI_S = 180
BROKERS = ("broker-1", "broker-2", "broker-3")


def describe(project: ComposeProject) -> list[dict]:
    return json.loads(cli("topic", "describe", TOPIC, "--json", "--bootstrap-server", project.bootstrap,
                          timeout_s=CLI_S).stdout)


def produce(project: ComposeProject, values: list[str]) -> list[tuple[int, int]]:
    """Send with acks=all through the published ports; (partition, offset) of each value, all acknowledged."""
    result = cli("produce", TOPIC, "--acks", "all", "--json", "--bootstrap-server", project.bootstrap,
                 input="\n".join(values) + "\n", timeout_s=CLI_S)
    acks = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(acks) == len(values)
    return [(ack["partition"], ack["offset"]) for ack in acks]


def all_healthy(project: ComposeProject) -> bool | None:
    """podman runs no healthchecks by itself (no systemd here): run each service's check once."""
    services = ("zookeeper", *BROKERS)
    checks = [podman("healthcheck", "run", project.container(s), check=False).returncode for s in services]
    return True if checks == [0, 0, 0, 0] else None


def cluster_ready(project: ComposeProject) -> bool | None:
    """Every published port answers Metadata with the three brokers at their host addresses."""
    expected = [(i, "127.0.0.1", port) for i, port in enumerate(project.broker_ports, start=1)]
    for port in project.broker_ports:
        result = _metadata_brokers(port)
        if result != expected:
            return None
    return True


def _metadata_brokers(port: int) -> list[tuple[int, str, int]] | None:
    async def ask() -> list[tuple[int, str, int]] | None:
        connection = BrokerConnection("127.0.0.1", port, request_timeout_ms=5000)
        try:
            await connection.connect()
            response = await connection.request(MetadataRequest(topics=[]))
        except (KafkaConnectionError, OSError):
            return None
        finally:
            await connection.close()
        return [(b.node_id, b.host, b.port) for b in response.brokers] if response.controller_id != -1 else None

    return asyncio.run(ask())


def test_a_cluster_in_containers_keeps_every_acknowledged_record_through_a_leader_kill():
    require_containers()
    with compose_project() as project:
        # offline and one at a time, as make setup built them: every dependency layer is cached
        project.compose("--parallel", "1", "--podman-build-args=--network=none", "--profile", "verify", "build",
                        timeout=900)
        project.compose("up", "-d")
        wait_for(lambda: cluster_ready(project), "three brokers answering on 127.0.0.1 with their published ports",
                 timeout_s=WAIT_S, interval_s=POLL_S)
        wait_for(lambda: all_healthy(project), "every service's healthcheck to pass", timeout_s=WAIT_S,
                 interval_s=POLL_S)

        cli("topic", "create", TOPIC, "--partitions", "3", "--replication-factor", "3",
            "--config", "min.insync.replicas=2", "--bootstrap-server", project.bootstrap, timeout_s=CLI_S)
        values = [f"record-{i}" for i in range(FIRST + SECOND)]
        acknowledged = dict(zip(produce(project, values[:FIRST]), values[:FIRST], strict=True))

        leader = next(p["leader"] for p in describe(project) if p["partition"] == 0)
        project.compose("kill", "-s", "KILL", f"broker-{leader}")
        acknowledged |= dict(zip(produce(project, values[FIRST:]), values[FIRST:], strict=True))
        after_kill = describe(project)
        assert all(p["leader"] != leader and leader not in p["isr"] for p in after_kill), after_kill

        project.compose("start", f"broker-{leader}")
        wait_for(lambda: all(sorted(p["isr"]) == [1, 2, 3] for p in describe(project)),
                 f"broker {leader} back in every ISR", timeout_s=WAIT_S, interval_s=POLL_S)

        consumed = cli("consume", TOPIC, "--from-beginning", "--timeout-ms", "5000", "--json",
                       "--bootstrap-server", project.bootstrap, timeout_s=CLI_S).stdout.splitlines()
        records = {(r["partition"], r["offset"]): r["value"] for r in map(json.loads, consumed)}
        lost = {at: value for at, value in acknowledged.items() if records.get(at) != value}
        assert not lost, f"{len(lost)} acknowledged records missing or changed, e.g. {next(iter(lost.items()))}"
        assert set(records.values()) <= set(values)

        project.compose("stop", timeout=180)
        exits = {b: podman("inspect", "-f", "{{.State.ExitCode}}", project.container(b)).stdout.strip()
                 for b in BROKERS}
        for broker in (b for b, code in exits.items() if code != "0"):
            logs = podman("logs", project.container(broker), check=False)
            shutdown = [line for line in (logs.stdout + logs.stderr).splitlines()
                        if not any(noise in line for noise in ("kazoo", "fetcher"))]
            print(f"--- {broker}: its log without kazoo and fetcher lines", *shutdown[-60:], sep="\n")
        assert set(exits.values()) == {"0"}, f"compose stop did not stop every broker cleanly: {exits}"
        verdict = project.compose("--profile", "verify", "run", "--rm", "verifier", check=False, timeout=600)
        print(verdict.stdout, verdict.stderr, sep="\n")  # the verifier's report, in full, with a failure
        assert verdict.returncode == 0, "the verifier found a violation: see the captured output"
        assert "CONSISTENT: 3 partitions, 9 replicas" in verdict.stdout

        project.compose("--profile", "verify", "down", "-v", "-t", "5")
        for image in project.images():  # the monitoring profile's image is not built here
            if podman("image", "exists", image, check=False).returncode == 0:
                podman("rmi", image)
        assert project.leftovers() == []
