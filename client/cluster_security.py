"""`cluster up --security`: a local cluster whose brokers have a secured listener beside their plaintext one
(which the brokers and `cluster` keep using among themselves unless told otherwise), and the settings clients
need to reach it.

For `ssl` and `sasl_ssl` a throw-away CA signs each broker's certificate (for its address) and, for `ssl`, a
client certificate (the listener requires one: ssl.client.auth=required). The brokers' keys are encrypted with a
generated password; the client's is not (Java's PEM keystore cannot decrypt the PBES2 keys the library writes),
and is readable by its owner only. In the cluster directory::

    ca.pem                 the CA's certificate (the clients' truststore)
    client.pem             the client's key and certificate chain (ssl)
    client.properties      Kafka's client settings, as Kafka's tools take them with --command-config
    librdkafka.properties  the same for librdkafka (kcat -F): it refuses Java's truststore and JAAS settings
    broker-<id>/broker.pem the broker's key and certificate chain

For `sasl_plaintext` and `sasl_ssl` the settings name an admin user (a super user) and its SCRAM-SHA-512
credentials, created in ZooKeeper before the brokers start (`create_admin_user`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from client.certificates import CertificateAuthority, write_private
from protocol.sasl.scram import SCRAM_MECHANISMS, make_credential
from zk.client import ZkClient
from zk.user_scram import alter_scram_credentials

SECURITY_CHOICES = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")
CLIENT_PROPERTIES = "client.properties"
LIBRDKAFKA_PROPERTIES = "librdkafka.properties"
CA_FILE = "ca.pem"
CLIENT_KEYSTORE = "client.pem"
BROKER_KEYSTORE = "broker.pem"
ADMIN_USER = "admin"
SCRAM_MECHANISM = "SCRAM-SHA-512"
_SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"


@dataclass(frozen=True)
class ClusterSecurity:
    """A secured cluster's protocol (Kafka's name: SSL, SASL_PLAINTEXT or SASL_SSL), its secrets and where its
    files are."""

    protocol: str
    directory: Path
    key_password: str
    admin_password: str

    @property
    def listener_name(self) -> str:
        """The secured listener's name (Kafka's default map names each protocol's listener after it)."""
        return self.protocol

    @property
    def tls(self) -> bool:
        return self.protocol.endswith("SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL")

    def broker_settings(self, broker_dir: Path) -> dict[str, str]:
        """The server.properties settings of the secured listener (besides its entry in `listeners`)."""
        settings: dict[str, str] = {}
        if self.tls:
            settings |= {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(broker_dir / BROKER_KEYSTORE),
                         "ssl.key.password": self.key_password, "ssl.truststore.type": "PEM",
                         "ssl.truststore.location": str(self.directory / CA_FILE),
                         "ssl.client.auth": "none" if self.sasl else "required"}
        if self.sasl:  # the brokers log in as the admin user where the secured listener is the inter-broker one
            settings |= {"sasl.enabled.mechanisms": SCRAM_MECHANISM, "super.users": f"User:{ADMIN_USER}",
                         "sasl.mechanism.inter.broker.protocol": SCRAM_MECHANISM,
                         f"listener.name.{self.listener_name.lower()}.{SCRAM_MECHANISM.lower()}.sasl.jaas.config":
                             self._admin_login()}
        return settings

    def _admin_login(self) -> str:
        return f'{_SCRAM_LOGIN} required username="{ADMIN_USER}" password="{self.admin_password}";'


    def client_properties(self) -> str:
        """client.properties: Kafka's (Java) client settings."""
        lines = [f"security.protocol={self.protocol}"]
        if self.tls:
            lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={self.directory / CA_FILE}"]
            if not self.sasl:
                lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={self.directory / CLIENT_KEYSTORE}"]
        if self.sasl:
            lines += [f"sasl.mechanism={SCRAM_MECHANISM}", f"sasl.jaas.config={self._admin_login()}"]
        return _properties("Kafka's client settings (--command-config)", lines)

    def librdkafka_properties(self) -> str:
        """librdkafka.properties: the same settings with librdkafka's names."""
        lines = [f"security.protocol={self.protocol.lower()}"]
        if self.tls:
            lines.append(f"ssl.ca.location={self.directory / CA_FILE}")
            if not self.sasl:
                keystore = self.directory / CLIENT_KEYSTORE
                lines += [f"ssl.certificate.location={keystore}", f"ssl.key.location={keystore}"]
        if self.sasl:
            lines += [f"sasl.mechanism={SCRAM_MECHANISM}", f"sasl.username={ADMIN_USER}",
                      f"sasl.password={self.admin_password}"]
        return _properties("librdkafka's client settings (kcat -F)", lines)


def prepare(directory: Path, security: str, broker_hosts: dict[int, str]) -> ClusterSecurity | None:
    """Make the CA, the keystores and the client settings of a `security` cluster in `directory` (None for
    plaintext, whose directory then has no client settings left from an earlier cluster)."""
    for name in (CLIENT_PROPERTIES, LIBRDKAFKA_PROPERTIES):
        (directory / name).unlink(missing_ok=True)
    if security == "plaintext":
        return None
    cluster = ClusterSecurity(security.upper(), directory, secrets.token_urlsafe(16), secrets.token_urlsafe(16))
    if cluster.tls:
        ca = CertificateAuthority.create()
        (directory / CA_FILE).write_bytes(ca.pem())
        for broker_id, host in broker_hosts.items():
            broker_dir = directory / f"broker-{broker_id}"
            broker_dir.mkdir(exist_ok=True)
            write_private(broker_dir / BROKER_KEYSTORE,
                          ca.issue(f"broker-{broker_id}", (host, "localhost"), password=cluster.key_password))
        if not cluster.sasl:
            write_private(directory / CLIENT_KEYSTORE, ca.issue(ADMIN_USER))
    write_private(directory / CLIENT_PROPERTIES, cluster.client_properties().encode())
    write_private(directory / LIBRDKAFKA_PROPERTIES, cluster.librdkafka_properties().encode())
    return cluster


async def create_admin_user(zookeeper_connect: str, chroot: str, user: str, password: str, mechanism: str) -> None:
    """Create the admin user (a super user) of `cluster up --security sasl_*` with SCRAM credentials under
    /config/users in ZooKeeper before the brokers start, as Kafka's `kafka-configs --zookeeper` bootstraps a user:
    only the salted credential is stored, never the password."""
    zk = ZkClient(zookeeper_connect, chroot=chroot)
    await zk.start()
    try:
        await alter_scram_credentials(zk, user, {mechanism: make_credential(SCRAM_MECHANISMS[mechanism], password)})
    finally:
        await zk.close()


def _properties(title: str, lines: list[str]) -> str:
    return "\n".join([f"# {title}, written by `minikafka cluster up`", *lines]) + "\n"
