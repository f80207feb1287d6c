"""Kafka's listener settings: listeners, advertised.listeners, listener.security.protocol.map and
inter.broker.listener.name, with Kafka's defaults and its refusals."""

from __future__ import annotations

import pytest

from broker.listeners import ListenerConfig, parse_protocol_map
from protocol.endpoint import EndPoint, ListenerConfigError, parse_endpoint

COMPOSE_STYLE = {
    "listeners": "INTERNAL://0.0.0.0:29092,EXTERNAL://0.0.0.0:9092",
    "advertised.listeners": "INTERNAL://broker-1:29092,EXTERNAL://127.0.0.1:19092",
    "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
}


def test_the_default_is_one_plaintext_listener_on_9092_used_for_everything():
    config = ListenerConfig.from_properties({})
    assert config.listeners == config.advertised_listeners == (EndPoint("PLAINTEXT", "127.0.0.1", 9092),)
    assert config.inter_broker_listener_name == "PLAINTEXT"


def test_internal_and_external_listeners_as_kafkas_compose_stacks_set_them():
    config = ListenerConfig.from_properties(COMPOSE_STYLE)
    assert config.listeners == (EndPoint("INTERNAL", "0.0.0.0", 29092), EndPoint("EXTERNAL", "0.0.0.0", 9092))
    assert config.advertised_listeners == (EndPoint("INTERNAL", "broker-1", 29092),
                                           EndPoint("EXTERNAL", "127.0.0.1", 19092))
    assert config.inter_broker_listener_name == "INTERNAL"


def test_listener_names_are_normalised_to_upper_case():
    config = ListenerConfig.from_properties({"listeners": "internal://127.0.0.1:1,client://127.0.0.1:2",
                                             "listener.security.protocol.map": "Internal:plaintext,CLIENT:PLAINTEXT",
                                             "inter.broker.listener.name": "internal"})
    assert [e.listener_name for e in config.listeners] == ["INTERNAL", "CLIENT"]
    assert config.inter_broker_listener_name == "INTERNAL"


def test_security_inter_broker_protocol_names_the_listener_of_that_protocol():
    config = ListenerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:1",
                                             "security.inter.broker.protocol": "PLAINTEXT"})
    assert config.inter_broker_listener_name == "PLAINTEXT"


def test_an_empty_host_binds_every_interface_and_registers_the_machine_name():
    config = ListenerConfig.from_properties({"listeners": "PLAINTEXT://:0"})
    assert config.listeners == (EndPoint("PLAINTEXT", "", 0),)
    assert config.advertised_endpoints({"PLAINTEXT": ("0.0.0.0", 40123)}, "node-7") == (
        EndPoint("PLAINTEXT", "node-7", 40123),)


def test_port_zero_is_registered_with_the_bound_port_and_other_ports_as_given():
    config = ListenerConfig.from_properties({
        "listeners": "A://127.0.0.1:0,B://127.0.0.1:0",
        "advertised.listeners": "A://127.0.0.1:0,B://proxy.example:7000",
        "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT",
        "inter.broker.listener.name": "A"})
    bound = {"A": ("127.0.0.1", 40001), "B": ("127.0.0.1", 40002)}
    assert config.advertised_endpoints(bound, "unused") == (EndPoint("A", "127.0.0.1", 40001),
                                                            EndPoint("B", "proxy.example", 7000))


def test_an_advertised_subset_registers_only_those_listeners():
    config = ListenerConfig.from_properties({**COMPOSE_STYLE, "advertised.listeners": "INTERNAL://broker-1:29092"})
    assert [e.listener_name for e in config.advertised_listeners] == ["INTERNAL"]


def test_tls_listeners_are_served_with_their_protocol():
    config = ListenerConfig.from_properties({
        "listeners": "INTERNAL://127.0.0.1:1,CLIENTS://127.0.0.1:2,SASL_SSL://127.0.0.1:3",
        "listener.security.protocol.map": "INTERNAL:SSL,CLIENTS:SSL,SASL_SSL:SASL_SSL",
        "inter.broker.listener.name": "INTERNAL"})
    assert [e.security_protocol for e in config.listeners] == ["SSL", "SSL", "SASL_SSL"]
    assert config.inter_broker_listener_name == "INTERNAL"


def test_ipv6_hosts_are_bracketed():
    endpoint = parse_endpoint("PLAINTEXT://[::1]:9092", {"PLAINTEXT": "PLAINTEXT"})
    assert endpoint == EndPoint("PLAINTEXT", "::1", 9092)
    assert str(endpoint) == "PLAINTEXT://[::1]:9092"


@pytest.mark.parametrize(("props", "message"), [
    ({"listeners": "nonsense"}, "listeners: expected NAME://host:port"),
    ({"listeners": "PLAINTEXT://127.0.0.1:70000"}, "port in 0..65535"),
    ({"listeners": " , "}, "listeners names no listener"),
    ({"listeners": "INTERNAL://127.0.0.1:1"}, "no security protocol defined for listener INTERNAL"),
    ({"listeners": "PLAINTEXT://127.0.0.1:1,plaintext://127.0.0.1:2"}, "PLAINTEXT is repeated"),
    ({**COMPOSE_STYLE, "listeners": "INTERNAL://0.0.0.0:9092,EXTERNAL://127.0.0.1:9092"}, "a different port"),
    ({**COMPOSE_STYLE, "advertised.listeners": "INTERNAL://broker-1:29092,OTHER://h:1",
      "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,OTHER:PLAINTEXT"},
     "OTHER is not in listeners"),
    ({**COMPOSE_STYLE, "advertised.listeners": ""}, "nonroutable meta-address 0.0.0.0"),
    ({**COMPOSE_STYLE, "inter.broker.listener.name": "REPLICATION"}, "REPLICATION is not one of INTERNAL, EXTERNAL"),
    ({**COMPOSE_STYLE, "advertised.listeners": "EXTERNAL://127.0.0.1:19092"}, "INTERNAL is not one of EXTERNAL"),
    ({**COMPOSE_STYLE, "security.inter.broker.protocol": "PLAINTEXT"}, "only one of inter.broker.listener.name"),
    ({"listeners": "INTERNAL://127.0.0.1:1", "listener.security.protocol.map": "INTERNAL:PLAINTEXT"},
     "PLAINTEXT is not one of INTERNAL"),
    ({"security.inter.broker.protocol": "CARRIER_PIGEON"}, "unknown security protocol"),
    ({"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,PLAINTEXT:SSL"}, "PLAINTEXT is mapped twice"),
    ({"listener.security.protocol.map": "PLAINTEXT"}, "expected NAME:PROTOCOL"),
    ({"listener.security.protocol.map": "PLAINTEXT:TLS"}, "unknown security protocol 'TLS'"),
])
def test_settings_kafka_refuses_are_refused_with_the_setting_named(props, message):
    with pytest.raises(ListenerConfigError, match=message):
        ListenerConfig.from_properties(props)


def test_the_protocol_map_is_read_with_upper_case_names():
    assert parse_protocol_map("internal:plaintext, external : PLAINTEXT") == {
        "INTERNAL": "PLAINTEXT", "EXTERNAL": "PLAINTEXT"}
