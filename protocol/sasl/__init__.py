"""SASL as Kafka speaks it (KIP-152): the PLAIN and SCRAM-SHA-256/512 mechanisms' client and server state machines,
Kafka's stored SCRAM credential format and the JAAS option strings brokers and clients are configured with. Pure: no
I/O; a broker's network layer and a client's connection drive these with the tokens of SaslAuthenticate."""

from __future__ import annotations

from dataclasses import dataclass, field

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
GSSAPI = "GSSAPI"
#: The mechanisms minikafka serves, in the order a broker enables them by default.
MECHANISMS = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512)
#: The largest SASL token read from a client (Kafka's SaslServerAuthenticator: sasl max receive size 512 KiB).
MAX_TOKEN_BYTES = 524288


class SaslAuthenticationError(Exception):
    """An authentication that failed. Its message goes to the client and to logs, so it never holds a password, a
    token or a proof."""


@dataclass(frozen=True, slots=True)
class SaslCredentials:
    """What a client (or a broker, to other brokers) authenticates with: a mechanism, a user and a password."""

    mechanism: str
    username: str
    password: str = field(repr=False)
