"""A client's side of a SASL exchange, as a generator of the tokens to send: each answer of the server is sent into
it; it ends once the authentication is complete, and raises SaslAuthenticationError if the server's answers are
wrong (a SCRAM server that does not know the password)."""

from __future__ import annotations

from collections.abc import Generator

from protocol.sasl import MECHANISMS, PLAIN, SaslAuthenticationError, SaslCredentials
from protocol.sasl.plain import plain_token
from protocol.sasl.scram import SCRAM_MECHANISMS, ScramClient


def client_exchange(credentials: SaslCredentials) -> Generator[bytes, bytes, None]:
    """The tokens of `credentials`' mechanism, each after the server's answer to the one before."""
    if credentials.mechanism == PLAIN:
        yield plain_token(credentials.username, credentials.password)
        return
    mechanism = SCRAM_MECHANISMS.get(credentials.mechanism)
    if mechanism is None:
        raise SaslAuthenticationError(f"unsupported SASL mechanism {credentials.mechanism!r} (one of "
                                      f"{', '.join(MECHANISMS)})")
    scram = ScramClient(mechanism, credentials.username, credentials.password)
    server_first = yield scram.first()
    server_final = yield scram.final(server_first)
    scram.verify(server_final)
