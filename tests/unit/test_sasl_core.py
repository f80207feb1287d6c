"""The pure SASL core: SCRAM-SHA-256/512 server and client (RFC 7677's test vector), Kafka's stored credential
format, PLAIN, the JAAS option string; malformed tokens fail the authentication cleanly (Hypothesis)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.sasl import SaslAuthenticationError, SaslCredentials
from protocol.sasl.client import client_exchange
from protocol.sasl.jaas import parse_jaas_config
from protocol.sasl.plain import authenticate_plain, plain_token
from protocol.sasl.scram import (
    SCRAM_MECHANISMS,
    SHA_256,
    SHA_512,
    ScramClient,
    ScramCredential,
    ScramServer,
    make_credential,
)

# RFC 7677, section 3
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_scram_sha_256_server_answers_rfc_7677_vector() -> None:
    server = ScramServer(SHA_256, nonce=SERVER_NONCE)
    assert server.client_first(CLIENT_FIRST) == "user"
    assert server.server_first(make_credential(SHA_256, "pencil", 4096, SALT)) == SERVER_FIRST
    assert server.client_final(CLIENT_FINAL) == SERVER_FINAL
    assert server.complete


def test_scram_sha_256_client_answers_rfc_7677_vector() -> None:
    client = ScramClient(SHA_256, "user", "pencil", nonce=CLIENT_NONCE)
    assert client.first() == CLIENT_FIRST
    assert client.final(SERVER_FIRST) == CLIENT_FINAL
    client.verify(SERVER_FINAL)
    with pytest.raises(SaslAuthenticationError):
        client.verify(b"v=" + base64.b64encode(b"\0" * 32))


def _client_final(nonce: str, password: bytes = b"pencil") -> bytes:
    """RFC 7677's client-final-message with `nonce` in place of the server's, its proof computed for it."""
    without_proof = f"c=biws,r={nonce}"
    salted = hashlib.pbkdf2_hmac("sha256", password, SALT, 4096)
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    auth_message = b",".join([CLIENT_FIRST[3:], SERVER_FIRST, without_proof.encode()])
    signature = hmac.digest(hashlib.sha256(client_key).digest(), auth_message, "sha256")
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


def test_scram_server_takes_a_final_nonce_ending_with_its_own_as_kafka_does() -> None:
    for nonce, accepted in ((CLIENT_NONCE + CLIENT_NONCE + SERVER_NONCE, True),  # librdkafka 2.0's
                            (CLIENT_NONCE + SERVER_NONCE + "x", False), (SERVER_NONCE, False)):
        server = ScramServer(SHA_256, nonce=SERVER_NONCE)
        server.client_first(CLIENT_FIRST)
        server.server_first(make_credential(SHA_256, "pencil", 4096, SALT))
        if accepted:
            assert server.client_final(_client_final(nonce)).startswith(b"v=") and server.complete
        else:
            with pytest.raises(SaslAuthenticationError, match="nonce does not match"):
                server.client_final(_client_final(nonce))


@pytest.mark.parametrize("mechanism", [SHA_256, SHA_512])
def test_scram_exchange_succeeds_with_the_password_and_fails_without(mechanism) -> None:
    credential = make_credential(mechanism, "s3cret", 8192)
    for password, ok in (("s3cret", True), ("wrong", False)):
        client, server = ScramClient(mechanism, "al,i=ce", password), ScramServer(mechanism)
        assert server.client_first(client.first()) == "al,i=ce"
        final = client.final(server.server_first(credential))
        if ok:
            client.verify(server.client_final(final))
        else:
            with pytest.raises(SaslAuthenticationError, match="invalid credentials") as failure:
                server.client_final(final)
            assert "wrong" not in str(failure.value)


def test_scram_unknown_user_fails_at_the_server_first_message() -> None:
    server = ScramServer(SHA_512)
    server.client_first(b"n,,n=nobody,r=abc")
    with pytest.raises(SaslAuthenticationError):
        server.server_first(None)


@pytest.mark.parametrize("token", [b"p=tls-unique,,n=u,r=x", b"n,,r=x,n=u",
                                   b"n,a=other,n=u,r=x", b"n,,n=u,r=x,tokenauth=true",
                                   b"n,,n=a=b,r=x", b"\xff\xfe", b"n,,", b""])
def test_scram_server_refuses_bad_client_first_messages(token: bytes) -> None:
    with pytest.raises(SaslAuthenticationError):
        ScramServer(SHA_256).client_first(token)


def test_scram_credential_round_trips_kafkas_stored_form() -> None:
    credential = make_credential(SHA_512, "pw", 4096, b"salty")
    text = str(credential)
    assert text.startswith("salt=c2FsdHk=,stored_key=") and text.endswith(",iterations=4096")
    assert ScramCredential.parse(text) == credential
    with pytest.raises(ValueError):
        ScramCredential.parse("salt=c2FsdHk=,iterations=4096")


@settings(max_examples=300, deadline=None)
@given(first=st.binary(max_size=200), final=st.binary(max_size=300))
def test_scram_server_fails_cleanly_on_any_tokens(first: bytes, final: bytes) -> None:
    server = ScramServer(SHA_256)
    try:
        server.client_first(first)
        server.server_first(make_credential(SHA_256, "pw", 4096, b"s"))
        server.client_final(final)
    except SaslAuthenticationError:
        return
    pytest.fail("random tokens authenticated")


@settings(max_examples=200, deadline=None)
@given(final=st.text(max_size=200))
def test_scram_server_fails_cleanly_on_text_client_finals(final: str) -> None:
    server = ScramServer(SHA_256, nonce="snonce")
    server.client_first(b"n,,n=user,r=cnonce")
    server.server_first(make_credential(SHA_256, "pw", 4096, b"s"))
    with pytest.raises(SaslAuthenticationError):
        server.client_final(("c=biws,r=cnoncesnonce," + final).encode())


def test_plain_authenticates_known_users_only() -> None:
    users = {"alice": "alice-pw"}
    assert authenticate_plain(plain_token("alice", "alice-pw"), users) == "alice"
    assert authenticate_plain(b"alice\0alice\0alice-pw", users) == "alice"
    for token in (plain_token("alice", "nope"), plain_token("bob", "alice-pw"), b"bob\0alice\0alice-pw",
                  b"\0alice", b"\0\0", b"\xff\0a\0b"):
        with pytest.raises(SaslAuthenticationError) as failure:
            authenticate_plain(token, users)
        assert "alice-pw" not in str(failure.value) and "nope" not in str(failure.value)


@settings(max_examples=300, deadline=None)
@given(token=st.binary(max_size=100))
def test_plain_fails_cleanly_on_any_token(token: bytes) -> None:
    with contextlib.suppress(SaslAuthenticationError):
        assert authenticate_plain(token, {"u": "p"}) == "u"


def test_jaas_config_gives_options_and_broker_users() -> None:
    config = parse_jaas_config('org.apache.kafka.common.security.scram.ScramLoginModule required\n'
                               ' username="admin" password="a \\"b\\" c" user_bob=bob-pw ;')
    assert config.options == {"username": "admin", "password": 'a "b" c', "user_bob": "bob-pw"}
    assert config.users == {"bob": "bob-pw"}
    assert "bob-pw" not in repr(config)
    for bad in ("", "Module", "Module required username=x", "Module maybe;", 'M required a="x"; b=c'):
        with pytest.raises(ValueError):
            parse_jaas_config(bad)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_client_exchange_authenticates_against_the_server(mechanism: str) -> None:
    exchange = client_exchange(SaslCredentials(mechanism, "alice", "pw"))
    token = next(exchange)
    if mechanism == "PLAIN":
        assert authenticate_plain(token, {"alice": "pw"}) == "alice"
        with pytest.raises(StopIteration):
            exchange.send(b"")
        return
    scram = SCRAM_MECHANISMS[mechanism]
    server = ScramServer(scram)
    server.client_first(token)
    final = exchange.send(server.server_first(make_credential(scram, "pw")))
    with pytest.raises(StopIteration):
        exchange.send(server.client_final(final))
    assert server.complete and server.username == "alice"
