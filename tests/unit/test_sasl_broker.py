"""The broker's SASL settings (Kafka's names; GSSAPI and re-authentication refused) and a connection's
authenticator: the handshake's mechanisms, PLAIN and SCRAM exchanges, and every failure a clean answer."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable

import pytest

from broker.apis.scram_credentials import UserScramCredentialStore
from broker.config import BrokerConfig, ConfigError
from broker.network.authenticator import SaslAuthenticator
from protocol.apis.sasl import SaslAuthenticateRequest, SaslHandshakeRequest
from protocol.errors import ErrorCode
from protocol.sasl import MAX_TOKEN_BYTES, SaslCredentials
from protocol.sasl.client import client_exchange
from protocol.sasl.scram import SHA_512, ScramCredential, make_credential
from zk import znodes
from zk.client import Watch
from zk.user_scram import user_config_path

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="pw" '
        'user_admin="pw" user_bob="bob-pw";')
BASE = {"zookeeper.connect": "127.0.0.1:2181", "broker.id": "1",
        "listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS}


def test_a_sasl_listener_gets_kafkas_mechanisms_and_its_plain_users() -> None:
    sasl = BrokerConfig.from_properties(BASE).sasl
    listener = sasl.listeners["SASL_PLAINTEXT"]
    assert listener.mechanisms == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    assert dict(listener.plain_users) == {"admin": "pw", "bob": "bob-pw"}
    assert "PLAINTEXT" not in sasl.listeners and sasl.inter_broker is None
    inter = BrokerConfig.from_properties({**BASE, "inter.broker.listener.name": "SASL_PLAINTEXT"}).sasl
    assert inter.inter_broker == SaslCredentials("PLAIN", "admin", "pw")
    assert "pw" not in repr(inter)


@pytest.mark.parametrize(("extra", "message"), [
    ({"sasl.enabled.mechanisms": "GSSAPI,PLAIN"}, "GSSAPI (Kerberos) is not supported"),
    ({"sasl.enabled.mechanisms": "OAUTHBEARER"}, "OAUTHBEARER given"),
    ({"connections.max.reauth.ms": "60000"}, "re-authentication (KIP-368) is not supported"),
    ({"inter.broker.listener.name": "SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"},
     "scram-sha-512.sasl.jaas.config must give the broker's username and password"),
    ({"listener.name.sasl_plaintext.plain.sasl.jaas.config": 'M required user_a="secret-x"'}, "must end with ';'"),
])
def test_settings_minikafka_cannot_serve_are_refused_at_start_up(extra: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as refused:
        BrokerConfig.from_properties({**BASE, **extra})
    assert "secret-x" not in str(refused.value)


class Credentials:
    def __init__(self, users: dict[str, ScramCredential]) -> None:
        self.users = users

    async def scram_credential(self, mechanism: str, user: str) -> ScramCredential | None:
        assert mechanism == "SCRAM-SHA-512"
        return self.users.get(user)


def _authenticator() -> SaslAuthenticator:
    return SaslAuthenticator(("PLAIN", "SCRAM-SHA-512"), {"bob": "bob-pw"},
                             Credentials({"alice": make_credential(SHA_512, "alice-pw")}))


async def _exchange(authenticator: SaslAuthenticator, credentials: SaslCredentials) -> list[int]:
    codes = [(await authenticator.handle(SaslHandshakeRequest(mechanism=credentials.mechanism))).body.error_code]
    exchange = client_exchange(credentials)
    token = next(exchange)
    while codes[-1] == ErrorCode.NONE:
        answer = (await authenticator.handle(SaslAuthenticateRequest(auth_bytes=token))).body
        codes.append(answer.error_code)
        if answer.error_code == ErrorCode.NONE:
            try:
                token = exchange.send(answer.auth_bytes)  # the client checks the server's last answer too
            except StopIteration:
                break
    return codes


@pytest.mark.parametrize(("credentials", "user"), [(SaslCredentials("PLAIN", "bob", "bob-pw"), "bob"),
                                                   (SaslCredentials("SCRAM-SHA-512", "alice", "alice-pw"), "alice")])
def test_the_authenticator_completes_plain_and_scram_exchanges(credentials: SaslCredentials, user: str) -> None:
    authenticator = _authenticator()
    assert set(asyncio.run(_exchange(authenticator, credentials))) == {ErrorCode.NONE}
    assert authenticator.complete and authenticator.username == user


@pytest.mark.parametrize(("credentials", "codes"), [
    (SaslCredentials("PLAIN", "bob", "nope"), [0, ErrorCode.SASL_AUTHENTICATION_FAILED]),
    (SaslCredentials("SCRAM-SHA-512", "alice", "nope"), [0, 0, ErrorCode.SASL_AUTHENTICATION_FAILED]),
    (SaslCredentials("SCRAM-SHA-512", "nobody", "x"), [0, ErrorCode.SASL_AUTHENTICATION_FAILED]),
    (SaslCredentials("SCRAM-SHA-256", "alice", "alice-pw"), [ErrorCode.UNSUPPORTED_SASL_MECHANISM]),
])
def test_the_authenticator_fails_wrong_credentials_and_unenabled_mechanisms(credentials: SaslCredentials,
                                                                           codes: list[int]) -> None:
    authenticator = _authenticator()
    assert asyncio.run(_exchange(authenticator, credentials)) == codes
    assert authenticator.failed and "nope" not in authenticator.failure


def test_out_of_order_and_oversized_requests_fail_the_authentication() -> None:
    early = _authenticator()
    answer = asyncio.run(early.handle(SaslAuthenticateRequest(auth_bytes=b"x"))).body
    assert answer.error_code == ErrorCode.ILLEGAL_SASL_STATE and early.failed
    oversized = _authenticator()
    asyncio.run(oversized.handle(SaslHandshakeRequest(mechanism="PLAIN")))
    answer = asyncio.run(oversized.handle(SaslAuthenticateRequest(auth_bytes=b"\0" * (MAX_TOKEN_BYTES + 1)))).body
    assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and oversized.failed


@pytest.mark.parametrize(("credentials", "user"), [(SaslCredentials("PLAIN", "bob", "bob-pw"), "bob"),
                                                   (SaslCredentials("SCRAM-SHA-512", "alice", "alice-pw"), "alice")])
def test_after_a_handshake_v0_the_tokens_travel_raw(credentials: SaslCredentials, user: str) -> None:
    async def exchange(authenticator: SaslAuthenticator) -> None:
        handshake = await authenticator.handle(SaslHandshakeRequest(mechanism=credentials.mechanism), raw_tokens=True)
        assert handshake.body.error_code == ErrorCode.NONE and authenticator.raw_tokens
        tokens = client_exchange(credentials)
        token = next(tokens)
        while not authenticator.complete:
            answer = await authenticator.handle_raw_token(token)
            assert answer is not None
            with contextlib.suppress(StopIteration):
                token = tokens.send(answer)

    authenticator = _authenticator()
    asyncio.run(exchange(authenticator))
    assert authenticator.username == user


def test_a_wrong_raw_token_fails_without_an_answer_and_saslauthenticate_after_v0_is_refused() -> None:
    wrong = _authenticator()
    asyncio.run(wrong.handle(SaslHandshakeRequest(mechanism="PLAIN"), raw_tokens=True))
    assert asyncio.run(wrong.handle_raw_token(b"\0bob\0nope")) is None and wrong.failed
    framed = _authenticator()
    asyncio.run(framed.handle(SaslHandshakeRequest(mechanism="PLAIN"), raw_tokens=True))
    answer = asyncio.run(framed.handle(SaslAuthenticateRequest(auth_bytes=b"\0bob\0bob-pw"))).body
    assert answer.error_code == ErrorCode.ILLEGAL_SASL_STATE and framed.failed


class FakeZk:
    """The ZooKeeper reads of the credential store: /config/users/<name> and the children of /config/changes."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.reads = 0
        self.on_children: Callable[[list[str]], None] | None = None

    async def get_or_none(self, path: str) -> tuple[bytes, None] | None:
        self.reads += 1
        return (self.data[path], None) if path in self.data else None

    async def ensure_path(self, _path: str) -> None:
        return None

    async def get_children(self, _path: str) -> list[str]:
        return ["config_change_0000000003"]

    async def watch_children(self, _path: str, callback: Callable[[list[str]], None]) -> Watch:
        self.on_children = callback
        return Watch(_path)


def test_the_credential_store_caches_until_a_config_change_notification() -> None:
    zk = FakeZk()
    zk.data[user_config_path("alice")] = znodes.encode_topic_config(
        {"SCRAM-SHA-512": str(make_credential(SHA_512, "pw", 4096, b"salt"))})
    store = UserScramCredentialStore(zk)  # type: ignore[arg-type]

    async def scenario() -> None:
        await store.start()
        first = await store.scram_credential("SCRAM-SHA-512", "alice")
        assert first is not None and first.salt == b"salt"
        assert await store.scram_credential("SCRAM-SHA-512", "alice") == first and zk.reads == 1
        assert await store.scram_credential("SCRAM-SHA-256", "alice") is None and zk.reads == 1
        assert zk.on_children is not None
        zk.on_children(["config_change_0000000003"])  # nothing new: still cached
        assert await store.scram_credential("SCRAM-SHA-512", "alice") == first and zk.reads == 1
        del zk.data[user_config_path("alice")]
        zk.on_children(["config_change_0000000003", "config_change_0000000004"])
        assert await store.scram_credential("SCRAM-SHA-512", "alice") is None and zk.reads == 2
        assert await store.scram_credential("SCRAM-SHA-512", "alice") is None and zk.reads == 3  # unknown: uncached

    asyncio.run(scenario())
