"""Network partitions between the members of a local cluster: nftables drop rules on lo.

Every member of a cluster started by `minikafka cluster up` (ZooKeeper and each broker) has its own loopback
address, and brokers bind every connection they open to theirs, so each link between two members is a pair of
addresses on lo. A cut drops the packets between two sides with rules in an nftables table of the cluster's own
(``inet mk_<A>_<B>`` for the cluster on 127.A.B.0/24); healing deletes the table. Each rule carries the cut it
belongs to as its comment (``1 <-> 2,3,zk``, or ``1 -> zk`` for a one-way cut), so the rules in force are the
only record of the cuts.

Changing (or listing) nftables rules needs root; without it the commands fail with a clear error and change
nothing. Only addresses in 127.0.0.0/8 are ever written into a rule.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

ZOOKEEPER_MEMBER = "zk"
LOOPBACK = ipaddress.ip_network("127.0.0.0/8")
_CHAIN = "input"
_TWO_WAY, _ONE_WAY = " <-> ", " -> "


class NetsplitError(RuntimeError):
    """A cut could not be made, listed or healed; the message says why. Nothing was changed."""


class NoPermissionError(NetsplitError):
    """This process may not change nftables rules (not root, or root without CAP_NET_ADMIN, as in a container)."""


@dataclass(frozen=True, slots=True)
class Cut:
    """Packets from every member of `side_a` to every member of `side_b` are dropped (and back, unless
    one_way). Members are broker ids as strings, or "zk"."""

    side_a: tuple[str, ...]
    side_b: tuple[str, ...]
    one_way: bool = False

    def __str__(self) -> str:
        return ",".join(self.side_a) + (_ONE_WAY if self.one_way else _TWO_WAY) + ",".join(self.side_b)

    def to_json(self) -> dict[str, object]:
        return {"side_a": list(self.side_a), "side_b": list(self.side_b), "one_way": self.one_way}

    @classmethod
    def parse(cls, text: str) -> Cut | None:
        """The cut a rule comment names, or None if the comment is not one of ours."""
        for separator, one_way in ((_TWO_WAY, False), (_ONE_WAY, True)):
            a, found, b = text.partition(separator)
            if found and a and b:
                return cls(tuple(a.split(",")), tuple(b.split(",")), one_way)
        return None


# ----------------------------------------------------------------------------------------- pure rules


def parse_side(text: str, members: Iterable[str]) -> tuple[str, ...]:
    """A side as given on the command line ("1,2,zk") checked against the cluster's members."""
    known = list(members)
    names = [name.strip().lower() for name in text.split(",")]
    if not text.strip() or any(not name for name in names):
        raise NetsplitError(f"a side is a comma-separated list of broker ids and/or {ZOOKEEPER_MEMBER}, got {text!r}")
    unknown = [name for name in names if name not in known]
    if unknown:
        raise NetsplitError(f"no member {', '.join(unknown)} in this cluster (members: {', '.join(known)})")
    return tuple(dict.fromkeys(names))


def make_cut(side_a: str, side_b: str, members: Iterable[str], *, one_way: bool = False) -> Cut:
    """The cut between two sides given as text; a member on both sides is refused."""
    known = list(members)
    a, b = parse_side(side_a, known), parse_side(side_b, known)
    both = [name for name in a if name in b]
    if both:
        raise NetsplitError(f"{', '.join(both)} cannot be on both sides of a cut")
    return Cut(a, b, one_way)


def table_name(addresses: Mapping[str, str]) -> str:
    """The cluster's own nftables table, named after its address block (127.A.B.0/24 -> mk_A_B)."""
    blocks = {tuple(address.split(".")[1:3]) for address in addresses.values()}
    if len(blocks) != 1:
        raise NetsplitError(f"the cluster's members are not in one 127.A.B.0/24 block: {dict(addresses)}")
    a, b = blocks.pop()
    return f"mk_{a}_{b}"


def check_addresses(addresses: Mapping[str, str]) -> None:
    """Every member must have its own address in 127.0.0.0/8 (and none may be 127.0.0.1, the clients')."""
    for member, address in addresses.items():
        try:
            parsed = ipaddress.ip_address(address)
        except ValueError:
            raise NetsplitError(f"member {member} has no IP address ({address!r})") from None
        if parsed not in LOOPBACK:
            raise NetsplitError(f"member {member} is at {address}, outside 127.0.0.0/8: it is never cut")
    shared = sorted({a for a in addresses.values() if list(addresses.values()).count(a) > 1 or a == "127.0.0.1"})
    if shared:
        raise NetsplitError(
            f"members share the address {', '.join(shared)}: this cluster was started without an address per "
            "member and cannot be partitioned; start it again with `minikafka cluster up`"
        )


def cut_script(table: str, cut: Cut, addresses: Mapping[str, str]) -> str:
    """The nft script that adds `cut` to the cluster's table (created if missing): one atomic transaction."""
    check_addresses(addresses)

    def address_set(side: tuple[str, ...]) -> str:
        return "{ " + ", ".join(addresses[member] for member in side) + " }"

    directions = [(cut.side_a, cut.side_b)] if cut.one_way else [(cut.side_a, cut.side_b), (cut.side_b, cut.side_a)]
    lines = [
        f"add table inet {table}",
        f"add chain inet {table} {_CHAIN} {{ type filter hook input priority 0; policy accept; }}",
    ]
    lines += [
        f'add rule inet {table} {_CHAIN} iifname "lo" ip saddr {address_set(source)} '
        f'ip daddr {address_set(destination)} drop comment "{cut}"'
        for source, destination in directions
    ]
    return "\n".join(lines) + "\n"


def cuts_in_listing(listing: Mapping[str, object]) -> list[Cut]:
    """The cuts named by the rules of `nft -j list table ...` output, in the order they were made."""
    cuts: list[Cut] = []
    for item in listing.get("nftables", []):  # type: ignore[union-attr]
        rule = item.get("rule") if isinstance(item, dict) else None
        cut = Cut.parse(str(rule.get("comment", ""))) if isinstance(rule, dict) else None
        if cut is not None and cut not in cuts:
            cuts.append(cut)
    return cuts


# ----------------------------------------------------------------------------------------- nft


def _nft_path() -> str | None:
    return shutil.which("nft") or next((p for p in ("/usr/sbin/nft", "/sbin/nft") if os.access(p, os.X_OK)), None)


def require_nft() -> str:
    """The nft executable; NetsplitError unless this process is root and nft is installed."""
    if os.geteuid() != 0:
        raise NoPermissionError("network partitions are nftables rules, which only root can change or list: run "
                                "this command as root (e.g. with sudo); nothing was changed")
    nft = _nft_path()
    if nft is None:
        raise NetsplitError("nft is not installed (Debian's nftables package; `make setup` installs it); "
                            "nothing was changed")
    return nft


def _nft(*args: str, script: str | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([require_nft(), *args], input=script, capture_output=True, text=True, timeout=30)
    if result.returncode != 0 and "Operation not permitted" in result.stderr:
        raise NoPermissionError("this root may not change nftables rules (no CAP_NET_ADMIN: a container?); "
                                "nothing was changed")
    return result


def _missing_table(result: subprocess.CompletedProcess[str]) -> bool:
    return result.returncode != 0 and "No such file or directory" in result.stderr


def apply_cut(addresses: Mapping[str, str], cut: Cut) -> None:
    """Add the cut's drop rules to the cluster's table."""
    table = table_name(addresses)
    result = _nft("-f", "-", script=cut_script(table, cut, addresses))
    if result.returncode != 0:
        raise NetsplitError(f"nft refused the cut {cut}: {result.stderr.strip()}")


def list_cuts(addresses: Mapping[str, str]) -> list[Cut]:
    """The cuts in force (none if the cluster has no table)."""
    result = _nft("-j", "list", "table", "inet", table_name(addresses))
    if _missing_table(result):
        return []
    if result.returncode != 0:
        raise NetsplitError(f"cannot list the cluster's nftables rules: {result.stderr.strip()}")
    return cuts_in_listing(json.loads(result.stdout))


def heal(addresses: Mapping[str, str]) -> list[Cut]:
    """Remove every cut of the cluster (delete its table); returns the cuts that were in force."""
    cuts = list_cuts(addresses)
    result = _nft("delete", "table", "inet", table_name(addresses))
    if result.returncode != 0 and not _missing_table(result):
        raise NetsplitError(f"cannot delete the cluster's nftables table: {result.stderr.strip()}")
    return cuts


def can_change_rules() -> bool:
    """True if this process may run nft (root, and nft installed)."""
    return os.geteuid() == 0 and _nft_path() is not None
