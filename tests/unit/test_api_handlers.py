"""Every api in the table both codecs read (and so every api ApiVersions advertises, on either wire) has a handler
registered in KafkaApis: nothing is advertised that the broker cannot answer."""

from __future__ import annotations

from types import SimpleNamespace

from broker.apis.config_changes import ConfigChanges
from broker.apis.kafka_apis import KafkaApis
from broker.apis.scram_credentials import UserScramCredentialStore
from protocol.apis import API_BY_REQUEST_TYPE, APIS, KAFKA_APIS
from protocol.kafka.api import advertised


def test_every_api_in_the_table_has_a_handler():
    apis = KafkaApis(0, lambda: -1, SimpleNamespace(config=None), None, None, None, None, None, None, None,  # type: ignore[arg-type]
                     ConfigChanges(None, dict), None, None, UserScramCredentialStore(None))  # type: ignore[arg-type]
    assert apis.request_types == set(API_BY_REQUEST_TYPE)


def test_the_kafka_listener_advertises_the_apis_of_the_table_it_serves():
    assert {entry["api_key"] for entry in advertised()} == set(KAFKA_APIS) <= set(APIS)
