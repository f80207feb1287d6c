"""The JAAS option string of Kafka's `sasl.jaas.config` (a client's, and a broker's
`listener.name.<listener>.<mechanism>.sasl.jaas.config`)::

    org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="secret"
        user_admin="secret" user_alice="alice-secret";

One login module, its control flag, then ``key=value`` options (values quoted or bare), ended by a semicolon.
A broker's PlainLoginModule lists its users as ``user_<name>="<password>"``; `username`/`password` are the
credentials a client (or a broker, to other brokers) authenticates with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:(?P<key>[A-Za-z0-9_.\-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s";]+))'
                    r'|(?P<end>;))')


@dataclass(frozen=True, slots=True)
class JaasConfig:
    """One login module's class and options."""

    login_module: str
    options: dict[str, str]

    @property
    def users(self) -> dict[str, str]:
        """A broker's PLAIN users: the ``user_<name>`` options."""
        return {key[len("user_"):]: value for key, value in self.options.items() if key.startswith("user_")}

    def __repr__(self) -> str:
        """Never the options: they hold passwords."""
        return f"JaasConfig({self.login_module!r}, options={sorted(self.options)})"


def parse_jaas_config(text: str) -> JaasConfig:
    """Parse a `sasl.jaas.config` value; ValueError (naming no option's value) if it is not one."""
    head = text.strip().split(None, 2)
    if len(head) < 2 or head[1].rstrip(";") not in _FLAGS:
        raise ValueError("sasl.jaas.config: expected '<LoginModule> required key=\"value\" ...;'")
    rest = head[2] if len(head) == 3 else ""
    if head[1].endswith(";"):
        rest = ";" + rest
    options: dict[str, str] = {}
    pos, ended = 0, False
    while pos < len(rest.rstrip()):
        match = _TOKEN.match(rest, pos)
        if match is None or ended:
            raise ValueError(f"sasl.jaas.config: cannot parse the options after character {pos}")
        if match["end"]:
            ended = True
        else:
            quoted = match["quoted"]
            options[match["key"]] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else match["bare"]
        pos = match.end()
    if not ended:
        raise ValueError("sasl.jaas.config: the login module must end with ';'")
    return JaasConfig(head[0], options)
