"""docker-compose.yml parses, holds what the README promises (services, the verify profile, host ports and their
variables, the listener settings), and its broker settings are ones the broker itself accepts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from broker.config import BrokerConfig, environment_settings, parse_properties
from client.compose_security import SERVER_PROPERTIES, prepare

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
BROKERS = {1: "broker-1", 2: "broker-2", 3: "broker-3"}
DEFAULT_PORTS = {1: 9092, 2: 9093, 3: 9094}
README = (ROOT / "README.md").read_text()
_VARIABLE = re.compile(r"\$\{(\w+):-([^}]*)\}")


def with_defaults(text: str) -> str:
    """`${VAR:-default}` as compose expands it when VAR is unset."""
    return _VARIABLE.sub(lambda m: m.group(2), text)


def containers_section() -> str:
    return README.split("## Run it in containers", 1)[1].split("\n## ", 1)[0]


def test_the_services_and_the_verify_and_monitoring_profiles():
    assert set(SERVICES) == {"zookeeper", *BROKERS.values(), "verifier", "prometheus"}
    assert SERVICES["verifier"]["profiles"] == ["verify"]
    assert SERVICES["prometheus"]["profiles"] == ["monitoring"]
    assert all("profiles" not in s for name, s in SERVICES.items() if name not in ("verifier", "prometheus"))


@pytest.mark.parametrize("name", ["zookeeper", *BROKERS.values(), "verifier", "prometheus"])
def test_every_service_runs_under_init_restarts_only_when_asked_and_uses_a_local_image(name: str):
    service = SERVICES[name]
    assert service["init"] is True
    assert service["restart"] == "no"
    assert with_defaults(service["image"]) in ("localhost/minikafka:latest", "localhost/minikafka-verifier:latest",
                                               "localhost/minikafka-prometheus:latest")


@pytest.mark.parametrize("name", ["zookeeper", *BROKERS.values()])
def test_healthchecks_use_the_cmd_shell_form(name: str):
    test = SERVICES[name]["healthcheck"]["test"]
    assert test[0] == "CMD-SHELL" and len(test) == 2


@pytest.mark.parametrize("name", BROKERS.values())
def test_a_broker_has_time_for_a_controlled_shutdown_that_gets_no_answer_before_it_is_killed(name: str):
    """Every try of the controlled shutdown may wait out controller.socket.timeout.ms and then the back-off; a broker
    killed before its shutdown ends leaves no checkpoints."""
    grace = SERVICES[name]["stop_grace_period"]
    assert grace.endswith("s")
    defaults = BrokerConfig.from_properties({"broker.id": "1", "zookeeper.connect": "zookeeper:2181"})
    worst_ms = defaults.controlled_shutdown_max_retries * (defaults.controller_socket_timeout_ms
                                                           + defaults.controlled_shutdown_retry_backoff_ms)
    assert int(grace[:-1]) * 1000 > worst_ms


def test_the_images_are_built_from_the_dockerfile_whose_only_image_is_bookworm_slim():
    built = {name: s["build"]["target"] for name, s in SERVICES.items() if "build" in s}
    assert built == {"zookeeper": "broker", "verifier": "verifier", "prometheus": "prometheus"}
    assert all(SERVICES[b]["pull_policy"] == "never" for b in BROKERS.values())  # they run zookeeper's image
    dockerfile = (ROOT / "Dockerfile").read_text()
    bases = re.findall(r"^FROM (\S+)", dockerfile, re.MULTILINE)
    stages = set(re.findall(r"^FROM \S+ AS (\S+)", dockerfile, re.MULTILINE))
    assert {b for b in bases if b not in stages} == {"debian:bookworm-slim"}
    assert set(built.values()) <= stages
    assert COMPOSE["secrets"]["pip_ca"]["file"] == "${PIP_CA_BUNDLE:-/dev/null}"


def test_host_ports_are_published_on_loopback_only_and_can_be_moved_with_variables():
    for broker_id, name in BROKERS.items():
        variable = f"${{MK_BROKER_PORT_{broker_id}:-{DEFAULT_PORTS[broker_id]}}}"
        assert SERVICES[name]["ports"] == [f"127.0.0.1:{variable}:9092"]
    assert SERVICES["zookeeper"]["ports"] == ["127.0.0.1:${MK_ZOOKEEPER_PORT:-2181}:2181"]
    assert SERVICES["prometheus"]["ports"] == ["127.0.0.1:${MK_PROMETHEUS_PORT:-9090}:9090"]
    assert "ports" not in SERVICES["verifier"]


@pytest.mark.parametrize("broker_id", sorted(BROKERS))
def test_each_broker_has_its_id_its_volume_and_internal_and_external_listeners_the_broker_accepts(broker_id: int):
    service = SERVICES[BROKERS[broker_id]]
    assert service["volumes"] == [f"broker-{broker_id}-data:/var/lib/minikafka/data",
                                  "security:/var/lib/minikafka/security"]
    environment = {key: with_defaults(str(value)) for key, value in service["environment"].items()}
    props = parse_properties((ROOT / "docker" / "server.properties").read_text())
    props.update(environment_settings(environment))
    config = BrokerConfig.from_properties(props)
    assert config.broker_id == broker_id
    assert [str(e) for e in config.listeners.listeners] == ["INTERNAL://0.0.0.0:29092", "EXTERNAL://0.0.0.0:9092"]
    assert [str(e) for e in config.listeners.advertised_listeners] == [
        f"INTERNAL://broker-{broker_id}:29092", f"EXTERNAL://127.0.0.1:{DEFAULT_PORTS[broker_id]}"]
    assert config.listeners.inter_broker_listener_name == "INTERNAL"
    assert config.log_dirs == [Path("/var/lib/minikafka/data")]
    assert (config.zookeeper_connect, config.zookeeper_chroot) == ("zookeeper:2181", "/minikafka")
    assert f"${{MK_BROKER_PORT_{broker_id}:-{DEFAULT_PORTS[broker_id]}}}" in service["environment"][
        "MINIKAFKA_CFG_ADVERTISED_LISTENERS"]


def test_the_secured_option_gives_each_broker_a_sasl_ssl_external_listener_it_accepts(tmp_path: Path):
    service = SERVICES["broker-1"]
    command = [with_defaults(part) for part in service["command"]]
    assert command[command.index("--") + 1:] == [
        "minikafka", "broker", "--config", "/var/lib/minikafka/security/server.properties"]
    prepare(tmp_path, "sasl_ssl", ROOT / "docker" / "server.properties", ["broker-1"], "pw")
    props = parse_properties((tmp_path / SERVER_PROPERTIES).read_text())
    environment = {key: _VARIABLE.sub(lambda m: "sasl_ssl" if m.group(1) == "MINIKAFKA_SECURITY" else m.group(2),
                                      str(value)) for key, value in service["environment"].items()}
    props.update(environment_settings(environment))
    config = BrokerConfig.from_properties(props)
    assert {e.listener_name: e.security_protocol for e in config.listeners.listeners} == {
        "INTERNAL": "PLAINTEXT", "EXTERNAL": "SASL_SSL"}
    assert "${MINIKAFKA_SECURITY:-plaintext}" in service["command"]


def test_the_verifier_reads_the_three_broker_volumes_read_only():
    verifier = SERVICES["verifier"]
    assert verifier["volumes"] == [f"broker-{i}-data:/data/broker-{i}:ro" for i in sorted(BROKERS)]
    assert verifier["command"] == ["minikafka", "verify", "/data/broker-1", "/data/broker-2", "/data/broker-3"]
    assert set(COMPOSE["volumes"]) == {"zookeeper-data", "security", *(f"broker-{i}-data" for i in BROKERS)}


@pytest.mark.parametrize("command", [
    "docker compose up -d",
    "docker compose kill -s KILL broker-2",
    "docker compose start broker-2",
    "docker compose stop",
    "docker compose --profile verify run --rm verifier",
    "docker compose down -v",
    "--bootstrap-server 127.0.0.1:9092",
])
def test_the_readme_shows_the_container_session(command: str):
    assert command in containers_section()


@pytest.mark.parametrize("name", [
    "MK_BROKER_PORT_1", "MK_BROKER_PORT_2", "MK_BROKER_PORT_3", "MK_ZOOKEEPER_PORT", "MINIKAFKA_CFG_",
    "zookeeper", "broker-1", "verifier", "verify", "PIP_CA_BUNDLE",
])
def test_the_readme_names_the_variables_services_and_profile(name: str):
    assert name in containers_section()
    assert name in (ROOT / "docker-compose.yml").read_text()


def test_the_build_context_leaves_out_everything_git_ignores():
    """Data directories of local clusters and soaks, venvs and caches never go into an image (a soak still writing
    its segments would even break the build)."""
    def entries(name: str) -> set[str]:
        lines = (ROOT / name).read_text().splitlines()
        return {line.strip().rstrip("/").removeprefix("**/") for line in lines if line.strip() and line[0] != "#"}

    assert entries(".gitignore") <= entries(".dockerignore")
