"""The pure core (wire and disk formats, the log, the replication and election rules) imports no asyncio, sockets
or ZooKeeper client; and ZooKeeper is reached through one module only (and the request it adds to kazoo's)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PURE_PACKAGES = ["protocol", "broker/log", "broker/coordinator/group"]
PURE_MODULES = [
    "broker/listeners.py",
    "broker/isr_changes.py",
    "zk/znodes.py",
    "broker/replication/partition.py",
    "broker/replication/truncation.py",
    "controller/assignment.py",
    "controller/election.py",
    "zk/ops.py",
]
FORBIDDEN = {"asyncio", "socket", "selectors", "kazoo", "uvloop"}
ZOOKEEPER_BRIDGE = {"zk/client.py", "zk/multiread.py"}


def pure_modules() -> list[Path]:
    packaged = [p for package in PURE_PACKAGES for p in (ROOT / package).glob("*.py")]
    return sorted([*packaged, *(ROOT / module for module in PURE_MODULES)])


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_there_are_pure_modules_to_check():
    assert len(pure_modules()) >= 10


@pytest.mark.parametrize("path", pure_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_pure_module_imports_no_io_framework(path: Path):
    assert imported_roots(path) & FORBIDDEN == set()


def test_only_the_bridge_imports_kazoo():
    packages = ("protocol", "zk", "transport", "broker", "controller", "client", "verifier", "bench")
    sources = [p for package in packages for p in (ROOT / package).rglob("*.py")]
    importers = {str(p.relative_to(ROOT)) for p in sources if "kazoo" in imported_roots(p)}
    assert importers == ZOOKEEPER_BRIDGE
