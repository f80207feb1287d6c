"""Authentication (KIP-152): SaslHandshake (17) picks a mechanism, SaslAuthenticate (36) carries its tokens.

A connection on a SASL listener exchanges these before any other request but ApiVersions (the broker's network
layer answers them itself, broker/network/authenticator.py); anywhere else they answer ILLEGAL_SASL_STATE. On
Kafka's wire: SaslHandshake v0-1 (after v0 the tokens travel raw, each a length-prefixed frame outside Kafka's
framing; librdkafka takes v0's presence as SASL support), SaslAuthenticate v0-2 (v1 adds the session lifetime, v2 is
flexible)."""

from __future__ import annotations

from dataclasses import field

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int16, Int64, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec


@message
class SaslHandshakeRequest:
    """The SASL mechanism the client wants to authenticate with."""

    mechanism: str


@message
class SaslHandshakeResponse:
    """NONE, or UNSUPPORTED_SASL_MECHANISM; either way the mechanisms the listener has enabled."""

    error_code: Int16
    mechanisms: list[str] = field(default_factory=list)


@message
class SaslAuthenticateRequest:
    """One token of the mechanism's exchange, client to server."""

    auth_bytes: bytes


@message
class SaslAuthenticateResponse:
    """The server's token, or why the authentication failed; the lifetime of the session (0: unbounded)."""

    error_code: Int16
    error_message: str | None = None
    auth_bytes: bytes = b""
    session_lifetime_ms: Int64 = 0


def _handshake_error(_request: SaslHandshakeRequest, code: ErrorCode, _message: str | None) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=code)


def _authenticate_error(_request: SaslAuthenticateRequest, code: ErrorCode, message: str | None
                        ) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(error_code=code, error_message=message)


def _kafka_authenticate_response(body: SaslAuthenticateResponse, _version: int) -> Message:
    return {"error_code": body.error_code, "error_message": body.error_message, "auth_bytes": body.auth_bytes,
            "session_lifetime_ms": body.session_lifetime_ms}


SASL_HANDSHAKE = Api(ApiKey.SASL_HANDSHAKE, "SaslHandshake", SaslHandshakeRequest, SaslHandshakeResponse,
                     _handshake_error,
                     kafka=spec_codec("SaslHandshake",
                                      lambda message, _version: SaslHandshakeRequest(mechanism=message["mechanism"]),
                                      lambda body, _version: {"error_code": body.error_code,
                                                              "mechanisms": body.mechanisms}))
SASL_AUTHENTICATE = Api(ApiKey.SASL_AUTHENTICATE, "SaslAuthenticate", SaslAuthenticateRequest,
                        SaslAuthenticateResponse, _authenticate_error,
                        kafka=spec_codec("SaslAuthenticate",
                                         lambda message, _version: SaslAuthenticateRequest(
                                             auth_bytes=bytes(message["auth_bytes"])),
                                         _kafka_authenticate_response))
