"""docker-compose.yml's secured option: each broker container starts through this module, which (the first of them,
under a lock on the volume they share) writes the server.properties the brokers start with, then runs the broker.
With MINIKAFKA_SECURITY=sasl_ssl it adds a throw-away CA, one broker certificate (for 127.0.0.1, localhost and
every broker's service name), the SASL_SSL settings of the brokers' EXTERNAL listener (`cluster up --security
sasl_ssl`'s), the host's client settings (client.properties, librdkafka.properties, ca.pem) and the admin user's
SCRAM credential in ZooKeeper, a super user whose password is MINIKAFKA_ADMIN_PASSWORD or a generated one (in the
client settings). Plaintext (the default), the server.properties is the image's, unchanged.

    python -m client.compose_security --security sasl_ssl --dir DIR --base server.properties \
        --zookeeper zookeeper:2181/minikafka --broker-host broker-1 ... \
        -- minikafka broker --config DIR/server.properties
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import secrets
import shutil
import time
from pathlib import Path

from client.certificates import CertificateAuthority, write_private
from client.cluster_security import (
    ADMIN_USER,
    BROKER_KEYSTORE,
    CA_FILE,
    CLIENT_PROPERTIES,
    LIBRDKAFKA_PROPERTIES,
    SCRAM_MECHANISM,
    ClusterSecurity,
    create_admin_user,
)
from zk.client import ZkSessionError

SERVER_PROPERTIES = "server.properties"
_ZOOKEEPER_WAIT_S = 120.0


def prepare(directory: Path, security: str, base: Path, broker_hosts: list[str],
            admin_password: str | None = None) -> ClusterSecurity | None:
    """Write `directory`'s server.properties (`base`, with the secured listener's settings for sasl_ssl) and, for
    sasl_ssl, the CA, the brokers' keystore and the client settings; the cluster's security, None for plaintext."""
    server_properties = directory / SERVER_PROPERTIES
    if security == "plaintext":
        shutil.copyfile(base, server_properties)
        return None
    if security != "sasl_ssl":
        raise ValueError(f"MINIKAFKA_SECURITY: plaintext or sasl_ssl, not {security!r}")
    cluster = ClusterSecurity("SASL_SSL", directory, secrets.token_urlsafe(16),
                              admin_password or secrets.token_urlsafe(16))
    ca = CertificateAuthority.create()
    (directory / CA_FILE).write_bytes(ca.pem())
    write_private(directory / BROKER_KEYSTORE, ca.issue("minikafka broker", ("127.0.0.1", "localhost", *broker_hosts),
                                                       password=cluster.key_password))
    settings = "".join(f"{key}={value}\n" for key, value in cluster.broker_settings(directory).items())
    write_private(server_properties, base.read_bytes() + b"\n# the SASL_SSL listener's settings\n" + settings.encode())
    write_private(directory / CLIENT_PROPERTIES, cluster.client_properties().encode())
    write_private(directory / LIBRDKAFKA_PROPERTIES, cluster.librdkafka_properties().encode())
    return cluster


async def create_admin(zookeeper: str, password: str, wait_s: float = _ZOOKEEPER_WAIT_S) -> None:
    """The admin user's SCRAM credential in ZooKeeper (`host:port/chroot`), once ZooKeeper answers."""
    connect, _, chroot = zookeeper.partition("/")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return await create_admin_user(connect, f"/{chroot}", ADMIN_USER, password, SCRAM_MECHANISM)
        except ZkSessionError:
            if time.monotonic() > deadline:
                raise


def prepare_once(directory: Path, security: str, base: Path, broker_hosts: list[str], zookeeper: str) -> None:
    """`prepare` and the admin user, by the first container to take the lock; the others find them done."""
    with (directory / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (directory / SERVER_PROPERTIES).exists():
            return
        cluster = prepare(directory, security, base, broker_hosts, os.environ.get("MINIKAFKA_ADMIN_PASSWORD"))
        if cluster is not None:
            asyncio.run(create_admin(zookeeper, cluster.admin_password))
        print(f"security {security}: {directory / SERVER_PROPERTIES} written", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--security", default="plaintext")
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--base", type=Path, required=True, help="the image's server.properties")
    parser.add_argument("--zookeeper", required=True, help="host:port/chroot")
    parser.add_argument("--broker-host", action="append", default=[], help="a broker's service name (repeatable)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run then (the broker)")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to run after --")
    try:
        prepare_once(args.dir, args.security.strip().lower(), args.base, args.broker_host, args.zookeeper)
    except ValueError as e:
        parser.error(str(e))
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
