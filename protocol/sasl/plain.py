"""SASL PLAIN (RFC 4616) as Kafka's PlainSaslServer: one token ``authzid NUL authcid NUL passwd``, checked against
the users a broker is configured with."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from protocol.sasl import SaslAuthenticationError


def plain_token(username: str, password: str) -> bytes:
    """The client's token (no authorization id, as Kafka's clients send it)."""
    return f"\0{username}\0{password}".encode()


def authenticate_plain(token: bytes, users: Mapping[str, str]) -> str:
    """The authenticated user name; SaslAuthenticationError for a malformed token, an unknown user or a wrong
    password (the same message for both: a client learns nothing about which users exist)."""
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslAuthenticationError("Invalid SASL/PLAIN response: not UTF-8") from None
    parts = text.split("\0")
    if len(parts) != 3:
        raise SaslAuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
    authzid, username, password = parts
    if not username:
        raise SaslAuthenticationError("Authentication failed: username not specified")
    if not password:
        raise SaslAuthenticationError("Authentication failed: password not specified")
    expected = users.get(username)
    # compare with something even for an unknown user, so that both take the same time
    if not hmac.compare_digest(password.encode(), (expected if expected is not None else "\0" + password).encode()):
        raise SaslAuthenticationError("Authentication failed: Invalid username or password")
    if authzid and authzid != username:
        raise SaslAuthenticationError("Authentication failed: Client requested an authorization id that is "
                                      "different from username")
    return username
