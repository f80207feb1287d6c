"""docker-compose.yml's `monitoring` profile for real: Prometheus (Debian's, in an image built from bookworm-slim)
scrapes the three brokers' /metrics; its UnderReplicatedPartitions alert fires while a broker's container is
stopped and clears once it is started again, and the active-controller alert stays quiet throughout (all read
through Prometheus' HTTP API on its published port)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.containers.podman import ComposeProject, compose_project, require_containers
from tests.containers.test_compose_cluster import CLI_S, POLL_S, WAIT_S, cluster_ready
from tests.integration.clusterutil import cli
from tests.polling import wait_for

TOPIC = "watched"
MONITORING = ("--profile", "monitoring")


def prometheus(project: ComposeProject, path: str) -> Any:
    """The `data` of an answer of Prometheus' HTTP API, or None while it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{project.prometheus_port}{path}", timeout=5) as response:
            answer = json.loads(response.read())
    except OSError:
        return None
    return answer["data"] if answer.get("status") == "success" else None


def firing(project: ComposeProject) -> set[str] | None:
    alerts = prometheus(project, "/api/v1/alerts")
    return None if alerts is None else {a["labels"]["alertname"] for a in alerts["alerts"] if a["state"] == "firing"}


def every_broker_scraped(project: ComposeProject) -> bool | None:
    up = prometheus(project, "/api/v1/query?query=up")
    return True if up is not None and sorted(float(r["value"][1]) for r in up["result"]) == [1.0, 1.0, 1.0] else None


def under_replicated(project: ComposeProject) -> float | None:
    result = prometheus(project, "/api/v1/query?query=sum(kafka_server_replicamanager_underreplicatedpartitions)")
    return float(result["result"][0]["value"][1]) if result and result["result"] else None


def test_prometheus_alerts_while_a_broker_container_is_stopped_and_clears_after_it_returns():
    require_containers()
    with compose_project() as project:
        project.compose("--parallel", "1", "--podman-build-args=--network=none", *MONITORING, "build", timeout=900)
        project.compose(*MONITORING, "up", "-d")
        wait_for(lambda: cluster_ready(project), "three brokers answering", timeout_s=WAIT_S, interval_s=POLL_S)
        cli("topic", "create", TOPIC, "--partitions", "3", "--replication-factor", "3",
            "--bootstrap-server", project.bootstrap, timeout_s=CLI_S)
        wait_for(lambda: every_broker_scraped(project), "Prometheus scraping the three brokers", timeout_s=WAIT_S,
                 interval_s=POLL_S)
        wait_for(lambda: (under_replicated(project) == 0 and firing(project) == set()) or None,
                 "no partition under-replicated and no alert firing", timeout_s=WAIT_S, interval_s=POLL_S)

        project.compose("stop", "-t", "60", "broker-2", timeout=180)
        fired = wait_for(lambda: firing(project) or None, "an alert to fire with broker-2 stopped",
                         timeout_s=WAIT_S, interval_s=POLL_S)
        assert fired == {"UnderReplicatedPartitions"}, fired  # still exactly one active controller

        project.compose("start", "broker-2")
        wait_for(lambda: firing(project) == set() or None, "the alert to clear with broker-2 back",
                 timeout_s=WAIT_S, interval_s=POLL_S)
        assert under_replicated(project) == 0
