"""TLS from Kafka's ssl.* settings: the SSLContext of a broker's listener (server side) and of a connection to a
broker (client side: a broker's inter-broker connections, minikafka's client), and the principal a client
certificate names.

Keystores and truststores are PEM only, as Kafka's `ssl.keystore.type=PEM` / `ssl.truststore.type=PEM`: a file
(`ssl.keystore.location` holding the private key and the certificate chain, `ssl.truststore.location` the trusted
certificates) or inline (`ssl.keystore.key` + `ssl.keystore.certificate.chain`, `ssl.truststore.certificates`).
A client also takes librdkafka's names (`ssl.ca.location`, `ssl.certificate.location`, `ssl.key.location`,
`enable.ssl.certificate.verification`). A bad setting is a TlsConfigError naming it.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Mapping

from cryptography import x509

#: Kafka's ssl.client.auth -> what the server asks of the client's certificate.
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_PROTOCOL_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
DEFAULT_ENABLED_PROTOCOLS = "TLSv1.2,TLSv1.3"
_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)


class TlsConfigError(ValueError):
    """An ssl.* setting that cannot be served (the message names it)."""


def listener_settings(props: Mapping[str, str], listener_name: str) -> dict[str, str]:
    """The ssl.* settings of a listener: the broker's, each replaced by its `listener.name.<name>.ssl.*`
    override (the name lower-cased, as Kafka writes it)."""
    prefix = f"listener.name.{listener_name.lower()}."
    settings = {key: value for key, value in props.items() if key.startswith("ssl.")}
    settings.update({key[len(prefix):]: value for key, value in props.items()
                     if key.startswith(prefix + "ssl.")})
    return settings


def server_context(settings: Mapping[str, str]) -> ssl.SSLContext:
    """A listener's context: its keystore (required), truststore, ssl.client.auth and enabled protocols."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _protocols(context, settings)
    if not _load_keystore(context, settings):
        raise TlsConfigError("a TLS listener needs a keystore: ssl.keystore.location, or ssl.keystore.key and "
                             "ssl.keystore.certificate.chain")
    auth = settings.get("ssl.client.auth", "none").strip().lower()
    if auth not in CLIENT_AUTH:
        raise TlsConfigError(f"ssl.client.auth must be one of {', '.join(CLIENT_AUTH)}, got {auth!r}")
    context.verify_mode = CLIENT_AUTH[auth]
    if not _load_truststore(context, settings) and auth != "none":
        raise TlsConfigError(f"ssl.client.auth={auth} needs a truststore (ssl.truststore.location or "
                             "ssl.truststore.certificates) to verify client certificates")
    return context


def client_context(settings: Mapping[str, str]) -> ssl.SSLContext:
    """A connection's context: the truststore (else the system's trusted certificates), a keystore for client
    authentication if one is given, and ssl.endpoint.identification.algorithm (https, the default: the broker's
    certificate must name the host connected to; empty: no host name check)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _protocols(context, settings)
    _load_keystore(context, settings)
    if not _load_truststore(context, settings):
        context.load_default_certs()
    algorithm = settings.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if algorithm not in ("https", "none", ""):
        raise TlsConfigError(f"ssl.endpoint.identification.algorithm must be https or empty, got {algorithm!r}")
    context.check_hostname = algorithm == "https"
    verify = settings.get("enable.ssl.certificate.verification", "true").strip().lower()
    if verify not in ("true", "false"):
        raise TlsConfigError(f"enable.ssl.certificate.verification must be true or false, got {verify!r}")
    if verify == "false":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def peer_principal(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> str | None:
    """The principal of a TLS connection, as Kafka's default principal builder names it: "User:" and the client
    certificate's subject in RFC 2253 form ("User:CN=client,O=minikafka"); None without a certificate."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return None
    return "User:" + x509.load_der_x509_certificate(der).subject.rfc4514_string()


def _protocols(context: ssl.SSLContext, settings: Mapping[str, str]) -> None:
    names = [n.strip() for n in settings.get("ssl.enabled.protocols", DEFAULT_ENABLED_PROTOCOLS).split(",")
             if n.strip()]
    unknown = [n for n in names if n not in _PROTOCOL_VERSIONS]
    if unknown or not names:
        raise TlsConfigError(f"ssl.enabled.protocols: {', '.join(unknown) or 'none given'}; minikafka enables "
                             f"{' and '.join(_PROTOCOL_VERSIONS)}")
    versions = sorted(_PROTOCOL_VERSIONS[n] for n in names)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]


def _store_type(settings: Mapping[str, str], key: str) -> None:
    kind = settings.get(key, "PEM").strip().upper()
    if kind != "PEM":
        raise TlsConfigError(f"{key}={kind}: minikafka reads PEM stores only (set {key}=PEM)")


def _load_keystore(context: ssl.SSLContext, settings: Mapping[str, str]) -> bool:
    """Load the keystore if one is given (Kafka's or librdkafka's names); False if none is."""
    _store_type(settings, "ssl.keystore.type")
    password = settings.get("ssl.key.password") or None
    location = settings.get("ssl.keystore.location", "").strip()
    chain, key = settings.get("ssl.keystore.certificate.chain", ""), settings.get("ssl.keystore.key", "")
    certificate = settings.get("ssl.certificate.location", "").strip()
    try:
        if location:
            context.load_cert_chain(location, password=password)
        elif chain.strip() or key.strip():
            if not (chain.strip() and key.strip()):
                raise TlsConfigError("ssl.keystore.certificate.chain and ssl.keystore.key go together")
            _load_inline_chain(context, chain, key, password)
        elif certificate:
            context.load_cert_chain(certificate, settings.get("ssl.key.location", "").strip() or None,
                                    password=password)
        else:
            return False
    except (OSError, ssl.SSLError, ValueError) as e:
        if isinstance(e, TlsConfigError):
            raise
        source = location or certificate or "ssl.keystore.certificate.chain/ssl.keystore.key"
        hint = " (is ssl.key.password right?)" if isinstance(e, ssl.SSLError) else ""
        raise TlsConfigError(f"cannot load the keystore {source}: {_reason(e)}{hint}") from None
    return True


def _load_inline_chain(context: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    """Python's ssl loads a key and chain from files only: through a private temporary file, removed at once."""
    descriptor, path = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(descriptor, "w") as pem:
            pem.write(_pem(key) + _pem(chain))
        context.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)


def _load_truststore(context: ssl.SSLContext, settings: Mapping[str, str]) -> bool:
    """Load the trusted certificates if given (Kafka's or librdkafka's names); False if none are."""
    _store_type(settings, "ssl.truststore.type")
    location = (settings.get("ssl.truststore.location", "") or settings.get("ssl.ca.location", "")).strip()
    inline = settings.get("ssl.truststore.certificates", "")
    try:
        if location:
            context.load_verify_locations(cafile=location)
        elif inline.strip():
            context.load_verify_locations(cadata=_pem(inline))
        else:
            return False
    except (OSError, ssl.SSLError, ValueError) as e:
        raise TlsConfigError(f"cannot load the truststore {location or 'ssl.truststore.certificates'}: "
                             f"{_reason(e)}") from None
    return True


def _pem(text: str) -> str:
    """Inline PEM as a properties file carries it (on one line, or with escaped line ends) in PEM's own layout."""
    blocks = _PEM_BLOCK.findall(text.replace("\\n", "\n"))
    if not blocks:
        raise TlsConfigError("inline PEM: no -----BEGIN ...----- block")
    out = []
    for label, body in blocks:
        body = "".join(body.split())
        lines = [body[i:i + 64] for i in range(0, len(body), 64)]
        out.append("\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"]))
    return "\n".join(out) + "\n"


def _reason(error: BaseException) -> str:
    return getattr(error, "strerror", None) or getattr(error, "reason", None) or str(error)
