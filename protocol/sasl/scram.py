"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's ScramSaslServer, ScramSaslClient, ScramFormatter
and ScramCredentialUtils do them.

A broker never holds a password: it keeps a ScramCredential (salt, StoredKey, ServerKey, iterations), in ZooKeeper
as ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``. The exchange is client-first
(``n,,n=user,r=cnonce``), server-first (``r=cnonce+snonce,s=salt,i=iterations``), client-final
(``c=biws,r=nonce,p=proof``) and server-final (``v=signature``). Only channel binding "n" is served (no TLS channel
binding, as Kafka), and no delegation tokens (``tokenauth=true`` is refused).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from protocol.sasl import SCRAM_SHA_256, SCRAM_SHA_512, SaslAuthenticationError


@dataclass(frozen=True, slots=True)
class ScramMechanism:
    """A SCRAM mechanism: its name, hash, the least iterations Kafka accepts and its number on Kafka's wire (the
    ScramMechanism enum of Describe/AlterUserScramCredentials)."""

    name: str
    hash_name: str
    min_iterations: int
    wire_type: int

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        """Hi(password, salt, i): PBKDF2 with the mechanism's HMAC (Kafka normalises the password to UTF-8 only)."""
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode(), salt, iterations)

    def credential(self, salted_password: bytes, salt: bytes, iterations: int) -> ScramCredential:
        """What the server stores of a salted password."""
        client_key = self.hmac(salted_password, b"Client Key")
        return ScramCredential(salt, self.hash(client_key), self.hmac(salted_password, b"Server Key"), iterations)


SHA_256 = ScramMechanism(SCRAM_SHA_256, "sha256", 4096, 1)
SHA_512 = ScramMechanism(SCRAM_SHA_512, "sha512", 4096, 2)
SCRAM_MECHANISMS = {m.name: m for m in (SHA_256, SHA_512)}
SCRAM_BY_WIRE_TYPE = {m.wire_type: m for m in (SHA_256, SHA_512)}
#: The most iterations a credential may have (Kafka's ZkAdminManager refuses more).
MAX_ITERATIONS = 16384


def new_salt() -> bytes:
    """A fresh random salt (Kafka's ScramFormatter.secureRandomBytes: a random base-36 string's bytes)."""
    return secrets.token_urlsafe(24).encode()


def new_nonce() -> str:
    """A fresh random nonce of printable characters without a comma."""
    return secrets.token_urlsafe(24)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """A user's stored SCRAM credential for one mechanism."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __str__(self) -> str:
        """Kafka's stored form (ScramCredentialUtils.credentialToString)."""
        return (f"salt={_b64(self.salt)},stored_key={_b64(self.stored_key)},server_key={_b64(self.server_key)},"
                f"iterations={self.iterations}")

    @classmethod
    def parse(cls, text: str) -> ScramCredential:
        """Kafka's stored form back; ValueError if it is not one."""
        fields = _attributes(text)
        missing = {"salt", "stored_key", "server_key", "iterations"} - set(fields)
        if missing:
            raise ValueError(f"SCRAM credential without {', '.join(sorted(missing))}")
        try:
            return cls(_unb64(fields["salt"]), _unb64(fields["stored_key"]), _unb64(fields["server_key"]),
                       int(fields["iterations"]))
        except (SaslAuthenticationError, ValueError) as e:
            raise ValueError(f"invalid SCRAM credential: {e}") from None


def make_credential(mechanism: ScramMechanism, password: str, iterations: int | None = None,
                    salt: bytes | None = None) -> ScramCredential:
    """The credential of a password (a fresh salt unless one is given)."""
    salt = new_salt() if salt is None else salt
    iterations = mechanism.min_iterations if iterations is None else iterations
    return mechanism.credential(mechanism.salted_password(password, salt, iterations), salt, iterations)


class ScramServer:
    """The server side of one SCRAM exchange. `client_first` parses the client's first message and names the user;
    the caller looks the user's credential up and passes it (None: unknown) to `server_first`; `client_final`
    checks the proof and returns the server's final message. Any malformed message, unknown user or wrong proof
    raises SaslAuthenticationError; the exchange is then over."""

    def __init__(self, mechanism: ScramMechanism, nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self.username = ""
        self.complete = False
        self._server_nonce = new_nonce() if nonce is None else nonce
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._credential: ScramCredential | None = None

    def client_first(self, token: bytes) -> str:
        """Parse client-first-message; the user name it asks to authenticate as."""
        if self._client_first_bare:
            raise SaslAuthenticationError("Invalid SCRAM exchange: client-first-message received twice")
        text = _text(token)
        cbind, authzid, bare = _split_gs2(text)
        if cbind != "n":
            raise SaslAuthenticationError("Invalid SCRAM client first message: channel binding is not supported")
        attributes = _ordered_attributes(bare)
        if len(attributes) < 2 or attributes[0][0] != "n" or attributes[1][0] != "r":
            raise SaslAuthenticationError("Invalid SCRAM client first message: expected n=user,r=nonce")
        extensions = dict(attributes[2:])
        if extensions.get("tokenauth", "false").lower() == "true":
            raise SaslAuthenticationError("Authentication failed: delegation tokens are not supported")
        username = _decode_saslname(attributes[0][1])
        nonce = attributes[1][1]
        if not username or not nonce:
            raise SaslAuthenticationError("Invalid SCRAM client first message: empty user name or nonce")
        if authzid and _decode_saslname(authzid) != username:
            raise SaslAuthenticationError("Authentication failed: Client requested an authorization id that is "
                                          "different from username")
        self.username = username
        self._gs2_header = text[: len(text) - len(bare)]
        self._client_first_bare = bare
        self._client_nonce = nonce
        return username

    def server_first(self, credential: ScramCredential | None) -> bytes:
        """server-first-message for the user's credential; an unknown user fails as Kafka's does."""
        if not self._client_first_bare or self._server_first:
            raise SaslAuthenticationError("Invalid SCRAM exchange: server-first-message out of order")
        if credential is None:
            raise SaslAuthenticationError(f"Authentication failed during authentication due to invalid credentials "
                                          f"with SASL mechanism {self.mechanism.name}")
        self._credential = credential
        self._server_first = (f"r={self._client_nonce}{self._server_nonce},s={_b64(credential.salt)},"
                              f"i={credential.iterations}")
        return self._server_first.encode()

    def client_final(self, token: bytes) -> bytes:
        """Check client-final-message's nonce, channel binding and proof; server-final-message."""
        if self._credential is None or self.complete:
            raise SaslAuthenticationError("Invalid SCRAM exchange: client-final-message out of order")
        text = _text(token)
        without_proof, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise SaslAuthenticationError("Invalid SCRAM client final message: no proof")
        attributes = _ordered_attributes(without_proof)
        if len(attributes) < 2 or attributes[0][0] != "c" or attributes[1][0] != "r":
            raise SaslAuthenticationError("Invalid SCRAM client final message: expected c=...,r=...,p=...")
        if _unb64(attributes[0][1]) != self._gs2_header.encode():
            raise SaslAuthenticationError("Invalid SCRAM client final message: channel binding does not match")
        if not attributes[1][1].endswith(self._client_nonce + self._server_nonce):
            # Kafka's ScramSaslServer asks no more (librdkafka 2.0 sends its own nonce again before the server's)
            raise SaslAuthenticationError("Invalid SCRAM client final message: nonce does not match")
        proof = _unb64(proof_text)
        mechanism, credential = self.mechanism, self._credential
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = mechanism.hmac(credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise SaslAuthenticationError("Invalid SCRAM client final message: proof of the wrong length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(mechanism.hash(client_key), credential.stored_key):
            raise SaslAuthenticationError(f"Authentication failed during authentication due to invalid credentials "
                                          f"with SASL mechanism {mechanism.name}")
        self.complete = True
        return f"v={_b64(mechanism.hmac(credential.server_key, auth_message))}".encode()


class ScramClient:
    """The client side of one SCRAM exchange: `first`, then `final` with the server's first message, then `verify`
    with the server's final one (raises SaslAuthenticationError if the server does not know the password)."""

    def __init__(self, mechanism: ScramMechanism, username: str, password: str, nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self._username = username
        self._password = password
        self._nonce = new_nonce() if nonce is None else nonce
        self._client_first_bare = f"n={_encode_saslname(username)},r={self._nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._client_first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = _text(server_first)
        fields = dict(_ordered_attributes(text))
        if "e" in fields:
            raise SaslAuthenticationError(f"SCRAM server error: {fields['e']}")
        nonce, salt_text, iterations_text = fields.get("r", ""), fields.get("s"), fields.get("i", "")
        if not nonce.startswith(self._nonce) or nonce == self._nonce or salt_text is None:
            raise SaslAuthenticationError("Invalid SCRAM server first message")
        if not iterations_text.isdigit() or int(iterations_text) < self.mechanism.min_iterations:
            raise SaslAuthenticationError("Invalid SCRAM server first message: too few iterations")
        mechanism = self.mechanism
        salted = mechanism.salted_password(self._password, _unb64(salt_text), int(iterations_text))
        without_proof = f"c={_b64(b'n,,')},r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        client_key = mechanism.hmac(salted, b"Client Key")
        signature = mechanism.hmac(mechanism.hash(client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = mechanism.hmac(mechanism.hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={_b64(proof)}".encode()

    def verify(self, server_final: bytes) -> None:
        fields = dict(_ordered_attributes(_text(server_final)))
        if "e" in fields:
            raise SaslAuthenticationError(f"SCRAM server error: {fields['e']}")
        if not hmac.compare_digest(_unb64(fields.get("v", "")), self._server_signature):
            raise SaslAuthenticationError("Invalid SCRAM server final message: the server's signature is wrong")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SaslAuthenticationError("Invalid SCRAM message: bad base64") from None


def _text(token: bytes) -> str:
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslAuthenticationError("Invalid SCRAM message: not UTF-8") from None


def _split_gs2(text: str) -> tuple[str, str, str]:
    """(channel binding flag, authzid, client-first-message-bare) of a client-first-message."""
    parts = text.split(",", 2)
    if len(parts) != 3 or (parts[0] not in ("n", "y") and not parts[0].startswith("p=")):
        raise SaslAuthenticationError("Invalid SCRAM client first message: bad GS2 header")
    authzid = parts[1]
    if authzid and not authzid.startswith("a="):
        raise SaslAuthenticationError("Invalid SCRAM client first message: bad authorization id")
    return parts[0], authzid[2:], parts[2]


def _ordered_attributes(text: str) -> list[tuple[str, str]]:
    """``k=v,k=v`` -> [(k, v)]; every item must be an attribute."""
    attributes = []
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SaslAuthenticationError("Invalid SCRAM message: expected attribute=value")
        attributes.append((key, value))
    return attributes


def _attributes(text: str) -> dict[str, str]:
    try:
        return dict(_ordered_attributes(text))
    except SaslAuthenticationError as e:
        raise ValueError(str(e)) from None


def _decode_saslname(name: str) -> str:
    """RFC 5802's saslname: "=2C" is a comma, "=3D" an equals sign; any other "=" is malformed."""
    decoded = name.replace("=2C", ",").replace("=3D", "=")
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise SaslAuthenticationError("Invalid SCRAM message: bad user name encoding")
    return decoded


def _encode_saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")
