"""Users' SCRAM credentials in ZooKeeper, as Kafka stores them: /config/users/<sanitized name> holds
``{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=4096"}}`` (the
mechanism's name -> ScramCredential's stored form; never the password), and each change creates a
/config/changes/config_change_ notification naming ``users/<sanitized name>``. The name is sanitized as Kafka's
Sanitizer does (URL encoding, a space as %20, * as %2A)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import quote, unquote

from protocol.sasl.scram import SCRAM_MECHANISMS, ScramCredential
from zk import znodes
from zk.client import ZkClient
from zk.topic_config import alter_entity_config

USER_ENTITY = "users"


def sanitize(user: str) -> str:
    """The user's name as a znode name (Kafka's Sanitizer.sanitize)."""
    return quote(user, safe="")


def user_config_path(user: str) -> str:
    return f"{znodes.CONFIG_USERS_PATH}/{sanitize(user)}"


async def read_scram_credentials(zk: ZkClient, user: str) -> dict[str, ScramCredential]:
    """The user's credentials by mechanism name ({} for a user without any); a value that is not a credential
    is skipped as Kafka's cache skips it."""
    got = await zk.get_or_none(user_config_path(user))
    return _credentials(znodes.decode_topic_config(got[0])) if got is not None else {}


async def list_scram_users(zk: ZkClient) -> dict[str, dict[str, ScramCredential]]:
    """Every user with a SCRAM credential, by name, with their credentials."""
    names = await zk.get_children(znodes.CONFIG_USERS_PATH) if await zk.exists(znodes.CONFIG_USERS_PATH) else []
    paths = [f"{znodes.CONFIG_USERS_PATH}/{name}" for name in names]
    users = {}
    for name, got in zip(names, await zk.get_many(paths), strict=True):
        credentials = _credentials(znodes.decode_topic_config(got[0])) if got is not None else {}
        if credentials:
            users[unquote(name)] = credentials
    return users


async def alter_scram_credentials(zk: ZkClient, user: str, upserts: Mapping[str, ScramCredential],
                                  deletes: Iterable[str] = ()) -> None:
    """Set and remove the user's credentials (by mechanism name) in one conditional write with its notification."""
    await alter_entity_config(zk, USER_ENTITY, sanitize(user),
                              {mechanism: str(credential) for mechanism, credential in upserts.items()}, deletes)


def _credentials(config: Mapping[str, str]) -> dict[str, ScramCredential]:
    credentials = {}
    for mechanism, text in config.items():
        if mechanism in SCRAM_MECHANISMS:
            try:
                credentials[mechanism] = ScramCredential.parse(text)
            except ValueError:
                continue
    return credentials
