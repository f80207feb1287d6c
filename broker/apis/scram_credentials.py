"""Users' SCRAM credentials: DescribeUserScramCredentials and AlterUserScramCredentials with Kafka's rules
(ZkAdminManager), over ZooKeeper's /config/users (zk/user_scram.py), and the credential lookup of SCRAM
authentications. Every broker caches the credentials it has read and drops them at each new /config/changes
notification (a user's credentials changed, by any broker or by Kafka's tools); a user without credentials is not
cached."""

from __future__ import annotations

import logging
from collections import Counter

from broker.apis.handler import Handled
from broker.network import Request, Response
from protocol.apis.scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
    CredentialInfo,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    UserScramCredentials,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.sasl import SaslAuthenticationError
from protocol.sasl.scram import MAX_ITERATIONS, SCRAM_BY_WIRE_TYPE, SCRAM_MECHANISMS, ScramCredential
from zk import znodes
from zk.client import Watch, ZkClient, ZkError
from zk.topic_config import config_change_sequence
from zk.user_scram import alter_scram_credentials, list_scram_users, read_scram_credentials

log = logging.getLogger(__name__)


class UserScramCredentialStore:
    """Describes, alters and looks up users' SCRAM credentials in ZooKeeper; caches them once started."""

    def __init__(self, zk: ZkClient) -> None:
        self._zk = zk
        self._cache: dict[str, dict[str, ScramCredential]] = {}
        self._generation = 0  # bumped at each invalidation: a read begun before it is not cached
        self._last_change = -1  # the newest /config/changes notification seen
        self._watch: Watch | None = None

    async def start(self) -> None:
        """Watch /config/changes: from now on credentials read are cached until the next notification."""
        await self._zk.ensure_path(znodes.CONFIG_CHANGES_PATH)
        sequences = [config_change_sequence(c) for c in await self._zk.get_children(znodes.CONFIG_CHANGES_PATH)]
        self._last_change = max((s for s in sequences if s is not None), default=-1)
        self._watch = await self._zk.watch_children(znodes.CONFIG_CHANGES_PATH, self._on_changes)

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        self._cache.clear()

    def _on_changes(self, children: list[str]) -> None:
        newest = max((s for c in children if (s := config_change_sequence(c)) is not None), default=-1)
        if newest > self._last_change:
            self._last_change = newest
            self._generation += 1
            self._cache.clear()

    async def scram_credential(self, mechanism: str, user: str) -> ScramCredential | None:
        credentials = self._cache.get(user)
        if credentials is None:
            generation = self._generation
            try:
                credentials = await read_scram_credentials(self._zk, user)
            except ZkError as e:
                log.warning("cannot read the SCRAM credentials of a user: %s", e)
                raise SaslAuthenticationError("Authentication failed: credentials unavailable") from None
            if credentials and self._watch is not None and generation == self._generation:
                self._cache[user] = credentials
        return credentials.get(mechanism)

    async def handle_describe(self, body: DescribeUserScramCredentialsRequest, _request: Request) -> Handled:
        try:
            users = await list_scram_users(self._zk)
        except ZkError as e:
            return Response(DescribeUserScramCredentialsResponse(error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
                                                                 error_message=str(e)))
        if not body.users:  # None or empty: every user with a credential
            return Response(DescribeUserScramCredentialsResponse(
                error_code=ErrorCode.NONE, results=[_described(name, users[name]) for name in sorted(users)]))
        counts = Counter(body.users)
        results = []
        for name in counts:
            if counts[name] > 1:
                results.append(UserScramCredentials(user=name, error_code=ErrorCode.DUPLICATE_RESOURCE, error_message=
                                                    "Cannot describe SCRAM credentials for the same user twice in a "
                                                    "single request"))
            elif name not in users:
                results.append(UserScramCredentials(user=name, error_code=ErrorCode.RESOURCE_NOT_FOUND, error_message=
                                                    "Attempt to describe a user credential that does not exist"))
            else:
                results.append(_described(name, users[name]))
        return Response(DescribeUserScramCredentialsResponse(error_code=ErrorCode.NONE, results=results))

    async def handle_alter(self, body: AlterUserScramCredentialsRequest, _request: Request) -> Handled:
        alterations = [(d.name, d.mechanism) for d in body.deletions] + [(u.name, u.mechanism) for u in body.upsertions]
        twice = {key[0] for key, count in Counter(alterations).items() if count > 1}
        errors: dict[str, tuple[ErrorCode, str]] = {}
        for name in twice:
            errors[name] = (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same "
                                                          "request")
        for name, mechanism in alterations:
            if not name:
                errors.setdefault(name, (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"))
            elif mechanism not in SCRAM_BY_WIRE_TYPE:
                errors.setdefault(name, (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"))
        for upsertion in body.upsertions:
            scram = SCRAM_BY_WIRE_TYPE.get(upsertion.mechanism)
            if scram is not None and upsertion.iterations < scram.min_iterations:
                errors.setdefault(upsertion.name, (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"))
            elif upsertion.iterations > MAX_ITERATIONS:
                errors.setdefault(upsertion.name, (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"))
        results = []
        for name in dict.fromkeys(name for name, _ in alterations):
            if name not in errors:
                errors[name] = await self._alter(name, body)
            code, message = errors[name]
            results.append(AlterUserScramCredentialsResult(user=name, error_code=code, error_message=message or None))
        return Response(AlterUserScramCredentialsResponse(results=results))

    async def _alter(self, name: str, body: AlterUserScramCredentialsRequest) -> tuple[ErrorCode, str]:
        deletes = {SCRAM_BY_WIRE_TYPE[d.mechanism].name for d in body.deletions if d.name == name}
        upserts = {}
        for u in body.upsertions:
            if u.name == name:
                scram = SCRAM_BY_WIRE_TYPE[u.mechanism]
                upserts[scram.name] = scram.credential(u.salted_password, u.salt, u.iterations)
        try:
            if deletes:
                current = await read_scram_credentials(self._zk, name)
                if not deletes <= set(current):
                    return ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
            await alter_scram_credentials(self._zk, name, upserts, deletes)
        except (ZkError, KafkaError) as e:
            return ErrorCode.UNKNOWN_SERVER_ERROR, str(e)
        log.info("SCRAM credentials of user %s: set %s, deleted %s", name, sorted(upserts) or "none",
                 sorted(deletes) or "none")
        return ErrorCode.NONE, ""


def _described(name: str, credentials: dict[str, ScramCredential]) -> UserScramCredentials:
    return UserScramCredentials(user=name, credential_infos=[
        CredentialInfo(mechanism=SCRAM_MECHANISMS[mechanism].wire_type, iterations=credential.iterations)
        for mechanism, credential in sorted(credentials.items())])
