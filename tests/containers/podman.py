"""Running containers from tests: podman as `make setup` configured it (tools/compose, build/containers/), compose
projects with unique names and free host ports, and a cleanup that leaves no container, pod, network, volume or
image of a test behind, also when the test fails."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "tools" / "compose"
CONTAINERS_CONF = ROOT / "build" / "containers" / "containers.conf"
BASE_IMAGE = "docker.io/library/debian:bookworm-slim"
IMAGES = ("localhost/minikafka", "localhost/minikafka-verifier", "localhost/minikafka-prometheus")


def podman_env(**extra: str) -> dict[str, str]:
    """The environment every podman and compose call needs (CONTAINERS_CONF), plus `extra`."""
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF), **extra}


def podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], env=podman_env(), capture_output=True, text=True, check=check,
                          timeout=timeout)


def require_containers() -> None:
    """Skip, saying what is missing, unless podman runs here as `make setup` prepares it; with CI=true fail instead:
    there the container tests must run."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (the tests run rootful podman)")
    if shutil.which("podman") is None:
        missing.append("podman")
    if not CONTAINERS_CONF.is_file():
        missing.append(f"{CONTAINERS_CONF.relative_to(ROOT)}")
    if not (ROOT / ".venv" / "bin" / "podman-compose").is_file():
        missing.append("podman-compose in .venv")
    if not missing and podman("image", "exists", BASE_IMAGE, check=False).returncode != 0:
        missing.append(f"the base image {BASE_IMAGE}")
    if missing:
        reason = f"containers cannot run here: missing {', '.join(missing)} (make setup, as root on Debian/Ubuntu)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback ports nothing listens on right now."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]


class ComposeProject:
    """docker-compose.yml under a project name of its own, with its own image tag and free host ports."""

    def __init__(self) -> None:
        self.name = f"mktest{uuid.uuid4().hex[:10]}"
        *self.broker_ports, self.zookeeper_port, self.prometheus_port = free_ports(5)
        self.env = podman_env(
            MK_IMAGE_TAG=self.name,
            MK_ZOOKEEPER_PORT=str(self.zookeeper_port),
            MK_PROMETHEUS_PORT=str(self.prometheus_port),
            **{f"MK_BROKER_PORT_{i}": str(port) for i, port in enumerate(self.broker_ports, start=1)},
        )

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self.broker_ports)

    def compose(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """`tools/compose -p NAME ARGS` (options like --profile go in `args` before the command)."""
        result = subprocess.run([str(COMPOSE), "-p", self.name, *args], env=self.env, capture_output=True, text=True,
                                timeout=timeout, cwd=ROOT)
        if check:
            assert result.returncode == 0, (f"compose {' '.join(args)}: exit {result.returncode}\n"
                                            f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return result

    def container(self, service: str) -> str:
        return f"{self.name}_{service}_1"

    def leftovers(self) -> list[str]:
        """Everything of this project podman still has: containers, its pod, network, volumes and tagged images."""
        label = f"label=io.podman.compose.project={self.name}"
        found = [f"container {c}" for c in _lines(podman("ps", "-a", "--filter", label, "--format", "{{.Names}}"))]
        found += [f"pod {p}" for p in _lines(podman("pod", "ps", "--format", "{{.Name}}")) if self.name in p]
        found += [f"network {n}" for n in _lines(podman("network", "ls", "--format", "{{.Name}}")) if self.name in n]
        found += [f"volume {v}" for v in _lines(podman("volume", "ls", "--format", "{{.Name}}")) if self.name in v]
        found += [f"image {i}" for i in self.images() if podman("image", "exists", i, check=False).returncode == 0]
        return found

    def images(self) -> Sequence[str]:
        return [f"{image}:{self.name}" for image in IMAGES]

    def remove_everything(self) -> None:
        """`down -v`, then force-remove whatever is left and the images tagged for this project."""
        self.compose("--profile", "verify", "--profile", "monitoring", "down", "-v", "-t", "5", check=False)
        label = f"label=io.podman.compose.project={self.name}"
        for container in _lines(podman("ps", "-a", "-q", "--filter", label)):
            podman("rm", "-f", "-v", container, check=False)
        for kind in ("pod", "network", "volume"):
            listing = ["pod", "ps"] if kind == "pod" else [kind, "ls"]
            for name in _lines(podman(*listing, "--format", "{{.Name}}")):
                if self.name in name:
                    podman(kind, "rm", "-f", name, check=False)
        for image in self.images():
            podman("rmi", image, check=False)


def _lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.strip()]


@contextlib.contextmanager
def compose_project() -> Iterator[ComposeProject]:
    """A ComposeProject whose containers, pod, network, volumes and images are removed afterwards, whatever
    happened."""
    project = ComposeProject()
    try:
        yield project
    finally:
        project.remove_everything()
