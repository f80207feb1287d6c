"""docker-compose.yml's `security` service: plaintext hands the brokers the image's server.properties unchanged;
sasl_ssl adds the CA, one keystore for every broker's name, the SASL_SSL settings and the host's client settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography import x509

from broker.config import parse_properties
from client.compose_security import SERVER_PROPERTIES, prepare, prepare_once

BASE = "log.dirs=/var/lib/minikafka/data\nlisteners=PLAINTEXT://:9092\n"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    path = tmp_path / "base.properties"
    path.write_text(BASE)
    return path


def test_plaintext_hands_the_brokers_the_images_settings(tmp_path: Path, base: Path) -> None:
    directory = tmp_path / "security"
    directory.mkdir()
    assert prepare(directory, "plaintext", base, ["broker-1"]) is None
    assert sorted(p.name for p in directory.iterdir()) == [SERVER_PROPERTIES]
    assert (directory / SERVER_PROPERTIES).read_text() == BASE


def test_sasl_ssl_writes_the_listeners_settings_one_keystore_and_the_clients_settings(tmp_path: Path,
                                                                                     base: Path) -> None:
    directory = tmp_path / "security"
    directory.mkdir()
    cluster = prepare(directory, "sasl_ssl", base, ["broker-1", "broker-2"], admin_password="pw-4f1e")
    assert cluster is not None and cluster.admin_password == "pw-4f1e"
    settings = parse_properties((directory / SERVER_PROPERTIES).read_text())
    assert settings["listeners"] == "PLAINTEXT://:9092"  # the image's, kept
    assert settings["ssl.keystore.location"] == str(directory / "broker.pem")
    assert (settings["super.users"], settings["sasl.enabled.mechanisms"]) == ("User:admin", "SCRAM-SHA-512")
    keystore = (directory / "broker.pem").read_bytes()
    assert (directory / "broker.pem").stat().st_mode & 0o077 == 0
    certificate = x509.load_pem_x509_certificates(keystore)[0]
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"localhost", "broker-1", "broker-2"} <= set(names.get_values_for_type(x509.DNSName))
    assert "127.0.0.1" in {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
    librdkafka = parse_properties((directory / "librdkafka.properties").read_text())
    assert (librdkafka["security.protocol"], librdkafka["sasl.password"]) == ("sasl_ssl", "pw-4f1e")
    assert (directory / "ca.pem").read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")


def test_another_security_is_refused(tmp_path: Path, base: Path) -> None:
    with pytest.raises(ValueError, match="plaintext or sasl_ssl"):
        prepare(tmp_path, "ssl", base, [])


def test_only_the_first_broker_to_start_writes_the_settings(tmp_path: Path, base: Path) -> None:
    directory = tmp_path / "security"
    directory.mkdir()
    prepare_once(directory, "plaintext", base, ["broker-1"], "zookeeper:2181/minikafka")
    base.write_text("changed=1\n")
    prepare_once(directory, "plaintext", base, ["broker-1"], "zookeeper:2181/minikafka")
    assert (directory / SERVER_PROPERTIES).read_text() == BASE
