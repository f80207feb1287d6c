"""`make setup` on a bare machine: a clean debian:bookworm-slim container with only the README's prerequisites and
a copy of this checkout. The first `make setup` must install everything, a second one must change nothing, and a
cluster then runs inside. The container has no network: its .deb files, package lists and wheels come from the
cache `make setup` filled on the host (build/fresh-machine/): pip reads the wheels through PIP_FIND_LINKS and Maven
its repository offline (a settings.xml), so the install path is the README's own."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.containers.podman import BASE_IMAGE, ROOT, podman, podman_env, require_containers

FRESH = ROOT / "build" / "fresh-machine"
STEPS = ("python", "java", "spark-classes", "zookeeper", "test-tools", "kafka", "spark-kafka", "nftables", "browser",
         "containers", "franz-go")

SCRIPT = """
set -eu
apt-get install -y --no-install-recommends git make python3 python3-venv > /tmp/prerequisites.log 2>&1 \\
  || { tail -20 /tmp/prerequisites.log; exit 1; }
cd /src
echo '== first make setup'
make setup
echo '== second make setup'
make setup
echo '== a cluster'
mk=.venv/bin/minikafka
$mk cluster up --brokers 3
$mk topic create smoke --partitions 3 --replication-factor 3 --config min.insync.replicas=2
seq 1 500 | $mk produce smoke --acks all
test "$($mk consume smoke --from-beginning --timeout-ms 3000 | sort -n | uniq | wc -l)" = 500
$mk cluster down
echo '== done'
"""


def copy_of_the_checkout(destination: Path) -> None:
    """Every file git tracks or would track (nothing it ignores: no .venv, no build/)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)


def section(output: str, title: str) -> str:
    return output.split(f"== {title}\n", 1)[1].split("\n== ", 1)[0]


def test_make_setup_installs_everything_on_a_bare_machine_once_and_a_cluster_runs(tmp_path: Path):
    require_containers()
    if not (FRESH / "digest").is_file():
        pytest.fail(f"{FRESH.relative_to(ROOT)} is missing: run make setup")
    checkout = tmp_path / "checkout"
    copy_of_the_checkout(checkout)
    name = f"mkfresh{uuid.uuid4().hex[:10]}"
    command = [
        "podman", "run", "--rm", "--name", name, "--network=none",
        "-v", f"{checkout}:/src",
        # overlays: the container's apt writes land in a throw-away layer, the cache stays as it is
        "-v", f"{FRESH / 'apt-archives'}:/var/cache/apt/archives:O",
        "-v", f"{FRESH / 'apt-lists'}:/var/lib/apt/lists:O",
        "-v", f"{FRESH / 'wheels'}:/wheels:ro",
        "-v", f"{FRESH / 'm2'}:/root/.m2/repository:O",
        "-v", f"{FRESH / 'maven-settings.xml'}:/root/.m2/settings.xml:ro",
        "-e", "PIP_NO_INDEX=1", "-e", "PIP_FIND_LINKS=/wheels",
        BASE_IMAGE, "bash", "-c", SCRIPT,
    ]
    try:
        result = subprocess.run(command, env=podman_env(), capture_output=True, text=True, timeout=900)
    finally:
        podman("rm", "-f", name, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]

    first = section(output, "first make setup")
    assert "setup: python: making .venv from requirements/dev.lock" in first
    assert "setup: java: installing default-jre-headless" in first
    assert "setup: spark-classes: making the class archive" in first
    assert "setup: zookeeper: installing libzookeeper-java" in first
    assert "setup: test-tools: installing kcat maven" in first
    assert "setup: kafka: fetching the jars of tools/kafka/pom.xml" in first
    assert "setup: spark-kafka: fetching the jars of tools/spark-kafka/pom.xml" in first
    assert "setup: nftables: installing nftables" in first
    assert "setup: browser: installing chromium" in first
    assert "setup: containers: this is a podman container" in first
    assert "setup: franz-go: no Go toolchain" in first  # the README's prerequisites have no Go

    second = section(output, "second make setup")
    lines = [line for line in second.splitlines() if line.startswith("setup: ")]
    assert [line.split(":")[1].strip() for line in lines] == list(STEPS), second
    assert all(": ok (" in line for line in lines[:9]), second  # nothing installed the second time
    assert "== done" in output
