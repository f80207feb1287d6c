"""A SASL listener's authentication of one connection (Kafka's SaslServerAuthenticator): SaslHandshake picks an
enabled mechanism, then SaslAuthenticate requests carry the mechanism's tokens until it succeeds or fails (after
Kafka's SaslHandshake v0, the tokens travel raw instead, each a length-prefixed frame, `handle_raw_token`). The
connection (broker/network/connection.py) answers these itself, lets ApiVersions through, and closes on anything
else before authentication completes, on a failure once its answer is written, and on the authentication timeout.
Failures are logged by the connection with the mechanism's message, which never holds a password or token."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Protocol

from broker.network.request import Response
from protocol.apis.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from protocol.errors import ErrorCode
from protocol.sasl import MAX_TOKEN_BYTES, PLAIN, SaslAuthenticationError
from protocol.sasl.plain import authenticate_plain
from protocol.sasl.scram import SCRAM_MECHANISMS, ScramCredential, ScramServer

#: The requests a connection answers itself while it authenticates.
AUTHENTICATION_REQUESTS = (SaslHandshakeRequest, SaslAuthenticateRequest)


class ScramCredentialSource(Protocol):
    """Where users' SCRAM credentials are found (ZooKeeper's /config/users)."""

    async def scram_credential(self, mechanism: str, user: str) -> ScramCredential | None: ...


class _State(enum.Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    FAILED = "failed"


class SaslAuthenticator:
    """The authentication state of one connection: `handle` answers each SaslHandshake and SaslAuthenticate
    request; `complete` once it succeeded (`username` is then who), `failure` says why once it failed."""

    def __init__(self, mechanisms: tuple[str, ...], plain_users: Mapping[str, str],
                 credentials: ScramCredentialSource) -> None:
        self.mechanisms = mechanisms
        self._plain_users = plain_users
        self._credentials = credentials
        self._state = _State.HANDSHAKE
        self._mechanism = ""
        self._scram: ScramServer | None = None
        self.username = ""
        self.failure = ""
        #: the handshake was Kafka's v0: the tokens that follow travel raw, outside Kafka's framing
        self.raw_tokens = False

    @property
    def complete(self) -> bool:
        return self._state is _State.COMPLETE

    @property
    def failed(self) -> bool:
        return self._state is _State.FAILED

    async def handle(self, body: object, raw_tokens: bool = False) -> Response:
        """The answer to an authentication request (see AUTHENTICATION_REQUESTS); `raw_tokens`: a handshake that
        is Kafka's v0, after which the tokens travel raw."""
        if isinstance(body, SaslHandshakeRequest):
            answer = self._handshake(body)
            self.raw_tokens = raw_tokens and answer.error_code == ErrorCode.NONE
            return Response(answer)
        assert isinstance(body, SaslAuthenticateRequest)
        if self.raw_tokens:
            self._fail("SaslAuthenticate request after a SaslHandshake v0")
            return Response(SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE,
                                                     error_message=self.failure))
        return Response(await self._authenticate(body))

    async def handle_raw_token(self, token: bytes) -> bytes | None:
        """The answer to a raw token (after a SaslHandshake v0): the server's token, sent raw too, or None once the
        authentication failed (Kafka then closes the connection without an answer)."""
        answer = await self._authenticate(SaslAuthenticateRequest(auth_bytes=token))
        return None if self.failed else answer.auth_bytes

    def _handshake(self, body: SaslHandshakeRequest) -> SaslHandshakeResponse:
        enabled = list(self.mechanisms)
        if self._state is not _State.HANDSHAKE:
            self._fail("SaslHandshake request in state " + self._state.value)
            return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=enabled)
        if body.mechanism not in self.mechanisms:
            self._fail(f"unsupported SASL mechanism {body.mechanism[:64]!r}")
            return SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled)
        self._mechanism = body.mechanism
        self._state = _State.AUTHENTICATE
        return SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=enabled)

    async def _authenticate(self, body: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
        if self._state is not _State.AUTHENTICATE:
            message = f"Unexpected SaslAuthenticate request in state {self._state.value}"
            self._fail(message)
            return SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=message)
        token = body.auth_bytes
        try:
            if len(token) > MAX_TOKEN_BYTES:
                raise SaslAuthenticationError(f"SASL token of {len(token)} bytes exceeds {MAX_TOKEN_BYTES}")
            answer = await self._evaluate(token)
        except SaslAuthenticationError as e:
            self._fail(str(e))
            return SaslAuthenticateResponse(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=str(e))
        return SaslAuthenticateResponse(error_code=ErrorCode.NONE, auth_bytes=answer)

    async def _evaluate(self, token: bytes) -> bytes:
        if self._mechanism == PLAIN:
            self.username = authenticate_plain(token, self._plain_users)
            self._state = _State.COMPLETE
            return b""
        if self._scram is None:
            self._scram = scram = ScramServer(SCRAM_MECHANISMS[self._mechanism])
            user = scram.client_first(token)
            return scram.server_first(await self._credentials.scram_credential(self._mechanism, user))
        answer = self._scram.client_final(token)
        self.username = self._scram.username
        self._state = _State.COMPLETE
        return answer

    def _fail(self, reason: str) -> None:
        self._state = _State.FAILED
        self.failure = reason
