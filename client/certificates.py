"""A throw-away certificate authority for a local secured cluster: the CA, and certificates it signs for brokers
(their host names and addresses as subject alternative names) and clients (the subject names the principal).
Each key and its certificate chain are written as one PEM file, as Kafka's `ssl.keystore.type=PEM` reads them."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=365)
_ORGANIZATION = "minikafka"


@dataclass(frozen=True)
class CertificateAuthority:
    """A CA's key and self-signed certificate."""

    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate

    @classmethod
    def create(cls, name: str = "minikafka CA") -> CertificateAuthority:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = _name(name)
        certificate = (_builder(subject, subject, key.public_key())
                       .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                       .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                    content_commitment=False, key_encipherment=False,
                                                    data_encipherment=False, key_agreement=False,
                                                    encipher_only=False, decipher_only=False), critical=True)
                       .sign(key, hashes.SHA256()))
        return cls(key, certificate)

    def pem(self) -> bytes:
        """The CA's certificate (a truststore)."""
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def issue(self, common_name: str, hosts: tuple[str, ...] = (), password: str | None = None) -> bytes:
        """A new key and its certificate signed by this CA, as one PEM (key first, then the chain). With `hosts`
        (names or IP addresses) it is a server's certificate for them, else a client's; with `password` the key
        is encrypted (PKCS#8, as Kafka's ssl.key.password expects)."""
        key = ec.generate_private_key(ec.SECP256R1())
        usage = ExtendedKeyUsageOID.SERVER_AUTH if hosts else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (_builder(_name(common_name), self.certificate.subject, key.public_key())
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        if hosts:
            builder = builder.add_extension(x509.SubjectAlternativeName([_general_name(h) for h in hosts]),
                                            critical=False)
        certificate = builder.sign(self.key, hashes.SHA256())
        encryption = (serialization.NoEncryption() if password is None
                      else serialization.BestAvailableEncryption(password.encode()))
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
        return key_pem + certificate.public_bytes(serialization.Encoding.PEM) + self.pem()


def write_private(path: Path, content: bytes) -> Path:
    """Write a file only its owner may read (a key)."""
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_bytes(content)
    return path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, _ORGANIZATION),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + _VALIDITY))


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)
