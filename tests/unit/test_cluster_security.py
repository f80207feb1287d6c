"""What `cluster up --security` writes: certificates, the brokers' settings, and client settings each client
family accepts (Kafka's names for Java and minikafka, librdkafka's for librdkafka)."""

from __future__ import annotations

import ssl

import confluent_kafka
import pytest

from broker.config import ConfigError, parse_properties
from client.client_configs import producer_config, read_config_file, security_config
from client.cluster_security import CLIENT_PROPERTIES, LIBRDKAFKA_PROPERTIES, prepare
from transport.tls import server_context


@pytest.mark.parametrize("security", ["ssl", "sasl_ssl", "sasl_plaintext"])
def test_client_settings_are_accepted_by_librdkafka_and_minikafkas_client(tmp_path, security):
    secured = prepare(tmp_path, security, {1: "127.0.0.2"})
    assert secured is not None and secured.protocol == security.upper()
    rdkafka = parse_properties((tmp_path / LIBRDKAFKA_PROPERTIES).read_text())
    confluent_kafka.Producer({"bootstrap.servers": "127.0.0.1:1", **rdkafka})  # refuses a name it does not know
    java = read_config_file(tmp_path / CLIENT_PROPERTIES)
    assert java["security.protocol"] == security.upper()
    assert ("sasl.jaas.config" in java) == security.startswith("sasl")
    tls = security_config(java).get("tls")
    assert (tls is not None) == security.endswith("ssl")
    assert oct((tmp_path / CLIENT_PROPERTIES).stat().st_mode & 0o777) == "0o600"


def test_an_ssl_cluster_requires_client_certificates_its_ca_signed(tmp_path):
    secured = prepare(tmp_path, "ssl", {1: "127.0.0.2", 2: "127.0.0.3"})
    assert secured is not None
    settings = secured.broker_settings(tmp_path / "broker-2")
    context = server_context(settings)  # the broker's encrypted key opens with the password it is given
    assert context.verify_mode == ssl.CERT_REQUIRED
    client = security_config(read_config_file(tmp_path / CLIENT_PROPERTIES))["tls"]
    assert client.check_hostname and client.verify_mode == ssl.CERT_REQUIRED


def test_a_plaintext_cluster_leaves_no_client_settings_of_an_earlier_one(tmp_path):
    prepare(tmp_path, "ssl", {1: "127.0.0.2"})
    assert prepare(tmp_path, "plaintext", {1: "127.0.0.2"}) is None
    assert not (tmp_path / CLIENT_PROPERTIES).exists() and not (tmp_path / LIBRDKAFKA_PROPERTIES).exists()


def test_client_security_settings_map_to_a_tls_context_or_a_clear_error(tmp_path):
    assert producer_config({"security.protocol": "PLAINTEXT"}).kwargs == {}
    config = producer_config({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "", "acks": "1"})
    assert isinstance(config.kwargs["tls"], ssl.SSLContext) and not config.kwargs["tls"].check_hostname
    assert config.warnings == ()
    with pytest.raises(ConfigError, match=r"security\.protocol"):
        producer_config({"security.protocol": "TLS"})
    with pytest.raises(ConfigError, match="cannot load the truststore"):
        producer_config({"security.protocol": "SSL", "ssl.truststore.location": str(tmp_path / "missing.pem")})
