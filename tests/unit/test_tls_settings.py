"""Kafka's ssl.* settings -> the SSLContexts of listeners and connections, and the principal of a client
certificate, shown over real handshakes in memory."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.config_description import BrokerConfigLayers, broker_config_entries
from broker.log.config import LogConfig
from client.certificates import CertificateAuthority
from protocol.apis.configs import ConfigType
from transport.tls import TlsConfigError, client_context, listener_settings, peer_principal, server_context

PASSWORD = "keystore-secret"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("pki")
    ca = CertificateAuthority.create()
    other = CertificateAuthority.create("another CA")
    files = {"ca": ca.pem(), "broker": ca.issue("broker-1", ("127.0.0.1", "localhost"), password=PASSWORD),
             "client": ca.issue("client"), "stranger": other.issue("stranger"), "other_ca": other.pem()}
    for name, content in files.items():
        (directory / f"{name}.pem").write_bytes(content)
    return {name: directory / f"{name}.pem" for name in files}


def broker_settings(pki: dict[str, Path], **more: str) -> dict[str, str]:
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki["broker"]), "ssl.key.password": PASSWORD,
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki["ca"]), **more}


def handshake(server: ssl.SSLContext, client: ssl.SSLContext, host: str = "127.0.0.1") -> ssl.SSLObject:
    """Run a TLS handshake between two contexts in memory; the server's end, or the ssl.SSLError of either."""
    s_in, s_out, c_in, c_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    server_end = server.wrap_bio(s_in, s_out, server_side=True)
    client_end = client.wrap_bio(c_in, c_out, server_hostname=host)
    done = {id(server_end): False, id(client_end): False}
    for _ in range(10):
        for end, outgoing, incoming in ((client_end, c_out, s_in), (server_end, s_out, c_in)):
            if not done[id(end)]:
                try:
                    end.do_handshake()
                    done[id(end)] = True
                except ssl.SSLWantReadError:
                    pass
            incoming.write(outgoing.read())
        if all(done.values()):
            client_end.write(b"x")  # TLS 1.3: the server learns of a rejected client certificate here
            s_in.write(c_out.read())
            server_end.read(1)
            return server_end
    raise AssertionError("the handshake did not finish")


def test_a_client_certificate_names_the_principal_as_kafkas_default_principal_builder(pki):
    server = server_context(broker_settings(pki, **{"ssl.client.auth": "required"}))
    client = client_context({"ssl.truststore.location": str(pki["ca"]), "ssl.keystore.location": str(pki["client"])})
    assert peer_principal(handshake(server, client)) == "User:CN=client,O=minikafka"


def test_librdkafka_names_configure_the_client_too(pki):
    server = server_context(broker_settings(pki, **{"ssl.client.auth": "requested"}))
    client = client_context({"ssl.ca.location": str(pki["ca"]), "ssl.certificate.location": str(pki["client"]),
                             "ssl.key.location": str(pki["client"])})
    assert peer_principal(handshake(server, client)) == "User:CN=client,O=minikafka"


def test_without_a_client_certificate_there_is_no_principal_unless_one_is_required(pki):
    client = client_context({"ssl.truststore.location": str(pki["ca"])})
    assert peer_principal(handshake(server_context(broker_settings(pki, **{"ssl.client.auth": "requested"})),
                                    client)) is None
    with pytest.raises(ssl.SSLError):
        handshake(server_context(broker_settings(pki, **{"ssl.client.auth": "required"})), client)


def test_a_certificate_of_another_ca_is_refused_both_ways(pki):
    server = server_context(broker_settings(pki, **{"ssl.client.auth": "required"}))
    stranger = client_context({"ssl.truststore.location": str(pki["ca"]),
                               "ssl.keystore.location": str(pki["stranger"])})
    with pytest.raises(ssl.SSLError):
        handshake(server, stranger)
    with pytest.raises(ssl.SSLError):
        handshake(server_context(broker_settings(pki)), client_context({"ssl.ca.location": str(pki["other_ca"])}))


def test_endpoint_identification_checks_the_host_name_unless_it_is_emptied(pki):
    server = server_context(broker_settings(pki))
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        handshake(server, client_context({"ssl.truststore.location": str(pki["ca"])}), host="127.0.0.2")
    unchecked = client_context({"ssl.truststore.location": str(pki["ca"]),
                                "ssl.endpoint.identification.algorithm": ""})
    assert not unchecked.check_hostname
    handshake(server, unchecked, host="127.0.0.2")


def test_inline_pem_settings_as_a_properties_file_carries_them_on_one_line(pki):
    broker_pem = pki["broker"].read_text()
    key = broker_pem[:broker_pem.index("-----BEGIN CERTIFICATE")]
    chain = broker_pem[len(key):]
    server = server_context({"ssl.keystore.key": " ".join(key.split()), "ssl.key.password": PASSWORD,
                             "ssl.keystore.certificate.chain": chain.replace("\n", "\\n")})
    client = client_context({"ssl.truststore.certificates": " ".join(pki["ca"].read_text().split())})
    handshake(server, client)


def test_enabled_protocols_bound_the_versions():
    context = client_context({"ssl.enabled.protocols": "TLSv1.3"})
    assert (context.minimum_version, context.maximum_version) == (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_3)
    context = client_context({})
    assert (context.minimum_version, context.maximum_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)


def test_listener_overrides_replace_the_brokers_settings():
    props = {"ssl.client.auth": "required", "ssl.keystore.location": "/a.pem",
             "listener.name.internal.ssl.client.auth": "none", "listener.name.other.ssl.keystore.location": "/b"}
    assert listener_settings(props, "INTERNAL") == {"ssl.client.auth": "none", "ssl.keystore.location": "/a.pem"}


@pytest.mark.parametrize(("more", "message"), [
    ({"ssl.client.auth": "sometimes"}, "ssl.client.auth must be one of none, requested, required"),
    ({"ssl.enabled.protocols": "TLSv1.1"}, "ssl.enabled.protocols: TLSv1.1"),
    ({"ssl.keystore.type": "JKS"}, "ssl.keystore.type=JKS: minikafka reads PEM stores only"),
    ({"ssl.truststore.type": "PKCS12"}, "ssl.truststore.type=PKCS12"),
    ({"ssl.key.password": "wrong"}, "cannot load the keystore"),
    ({"ssl.keystore.location": "/nonexistent.pem"}, "cannot load the keystore /nonexistent.pem"),
    ({"ssl.truststore.location": "/nonexistent.pem"}, "cannot load the truststore /nonexistent.pem"),
])
def test_bad_settings_are_refused_naming_the_setting(pki, more, message):
    with pytest.raises(TlsConfigError, match=message):
        server_context(broker_settings(pki, **more))


def test_a_listener_needs_a_keystore_and_client_auth_a_truststore(pki):
    with pytest.raises(TlsConfigError, match="needs a keystore"):
        server_context({})
    with pytest.raises(TlsConfigError, match="needs a truststore"):
        server_context({"ssl.keystore.location": str(pki["broker"]), "ssl.key.password": PASSWORD,
                        "ssl.client.auth": "required"})


def test_a_broker_builds_a_context_per_tls_listener_and_one_for_its_inter_broker_connections(pki):
    props = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181",
             "listeners": "INTERNAL://127.0.0.1:0,CLIENTS://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
             "listener.security.protocol.map": "INTERNAL:SSL,CLIENTS:SSL,PLAINTEXT:PLAINTEXT",
             "inter.broker.listener.name": "INTERNAL", **broker_settings(pki),
             "listener.name.clients.ssl.client.auth": "required",
             "listener.name.internal.ssl.keystore.location": str(pki["broker"])}
    config = BrokerConfig.from_properties(props)
    assert set(config.network.tls) == {"INTERNAL", "CLIENTS"}
    assert config.network.tls["CLIENTS"].verify_mode == ssl.CERT_REQUIRED
    assert config.network.tls["INTERNAL"].verify_mode == ssl.CERT_NONE
    assert config.inter_broker_tls is not None and config.inter_broker_tls.check_hostname
    plain = BrokerConfig.from_properties({**props, "inter.broker.listener.name": "PLAINTEXT"})
    assert plain.inter_broker_tls is None
    with pytest.raises(ConfigError, match=r"listener CLIENTS: ssl\.client\.auth must be one of"):
        BrokerConfig.from_properties({**props, "listener.name.clients.ssl.client.auth": "maybe"})


def test_describe_configs_never_answers_a_secret():
    static = {"ssl.key.password": "s3cret", "listener.name.clients.ssl.keystore.key": "-----BEGIN",
              "ssl.client.auth": "required",
              "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": "x password=\"p\";"}
    layers = BrokerConfigLayers(static_log=LogConfig.from_broker_properties(static), static=static,
                                per_broker={"ssl.key.password": "dyn4mic"})
    entries = {e.name: e for e in broker_config_entries(layers, None, {}, frozenset(), include_synonyms=True)}
    assert {name for name, e in entries.items() if e.is_sensitive} == {
        "ssl.key.password", "listener.name.clients.ssl.keystore.key",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"}
    assert all(e.value is None and e.config_type == ConfigType.PASSWORD for e in entries.values() if e.is_sensitive)
    assert [synonym.value for synonym in entries["ssl.key.password"].synonyms] == [None, None]
    assert entries["ssl.client.auth"].value == "required"
