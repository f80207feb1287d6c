"""Users' SCRAM credentials (KIP-554): DescribeUserScramCredentials (50) lists each user's mechanisms and
iterations, AlterUserScramCredentials (51) upserts (from a salt and a password salted by the client) and deletes
them. Kafka's `kafka-configs --entity-type users` and `minikafka users` use them. On Kafka's wire: v0 (flexible)."""

from __future__ import annotations

from dataclasses import field

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int8, Int16, Int32, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec


@message
class DescribeUserScramCredentialsRequest:
    """The users to describe; None: every user with a credential."""

    users: list[str] | None = None


@message
class CredentialInfo:
    """One mechanism a user has a credential for (its ScramMechanism number) and its iterations."""

    mechanism: Int8
    iterations: Int32


@message
class UserScramCredentials:
    """One user's credentials, or why not (RESOURCE_NOT_FOUND: no credential)."""

    user: str
    error_code: Int16 = 0
    error_message: str | None = None
    credential_infos: list[CredentialInfo] = field(default_factory=list)


@message
class DescribeUserScramCredentialsResponse:
    """The users' credentials, or the error of the request as a whole."""

    error_code: Int16
    error_message: str | None = None
    results: list[UserScramCredentials] = field(default_factory=list)


@message
class ScramCredentialDeletion:
    """Delete a user's credential for one mechanism."""

    name: str
    mechanism: Int8


@message
class ScramCredentialUpsertion:
    """Set a user's credential for one mechanism: the salt and the password salted with it (Hi), never the
    password."""

    name: str
    mechanism: Int8
    iterations: Int32
    salt: bytes
    salted_password: bytes


@message
class AlterUserScramCredentialsRequest:
    """Deletions and upsertions, each user's answered together."""

    deletions: list[ScramCredentialDeletion] = field(default_factory=list)
    upsertions: list[ScramCredentialUpsertion] = field(default_factory=list)


@message
class AlterUserScramCredentialsResult:
    """One user's outcome."""

    user: str
    error_code: Int16
    error_message: str | None = None


@message
class AlterUserScramCredentialsResponse:
    """Each user's outcome."""

    results: list[AlterUserScramCredentialsResult] = field(default_factory=list)


def _describe_error(_request: DescribeUserScramCredentialsRequest, code: ErrorCode, message: str | None
                    ) -> DescribeUserScramCredentialsResponse:
    return DescribeUserScramCredentialsResponse(error_code=code, error_message=message)


def _alter_error(request: AlterUserScramCredentialsRequest, code: ErrorCode, message: str | None
                 ) -> AlterUserScramCredentialsResponse:
    users = dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions])
    return AlterUserScramCredentialsResponse(results=[
        AlterUserScramCredentialsResult(user=user, error_code=code, error_message=message) for user in users])


def _kafka_describe_request(message: Message, _version: int) -> DescribeUserScramCredentialsRequest:
    users = message["users"]
    return DescribeUserScramCredentialsRequest(users=None if users is None else [u["name"] for u in users])


def _kafka_describe_response(body: DescribeUserScramCredentialsResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "error_code": body.error_code, "error_message": body.error_message,
            "results": [{"user": r.user, "error_code": r.error_code, "error_message": r.error_message,
                         "credential_infos": [{"mechanism": c.mechanism, "iterations": c.iterations}
                                              for c in r.credential_infos]} for r in body.results]}


def _kafka_alter_request(message: Message, _version: int) -> AlterUserScramCredentialsRequest:
    return AlterUserScramCredentialsRequest(
        deletions=[ScramCredentialDeletion(name=d["name"], mechanism=d["mechanism"]) for d in message["deletions"]],
        upsertions=[ScramCredentialUpsertion(name=u["name"], mechanism=u["mechanism"], iterations=u["iterations"],
                                             salt=bytes(u["salt"]), salted_password=bytes(u["salted_password"]))
                    for u in message["upsertions"]])


def _kafka_alter_response(body: AlterUserScramCredentialsResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "results": [{"user": r.user, "error_code": r.error_code,
                                                "error_message": r.error_message} for r in body.results]}


DESCRIBE_USER_SCRAM_CREDENTIALS = Api(
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "DescribeUserScramCredentials", DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse, _describe_error,
    kafka=spec_codec("DescribeUserScramCredentials", _kafka_describe_request, _kafka_describe_response))
ALTER_USER_SCRAM_CREDENTIALS = Api(
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentials", AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse, _alter_error,
    kafka=spec_codec("AlterUserScramCredentials", _kafka_alter_request, _kafka_alter_response))
