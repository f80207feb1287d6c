"""The pure core (wire and disk formats, the replication, truncation and election rules, znode formats) imports no
asyncio, sockets, threads, subprocesses or ZooKeeper client, nor any module of the project that does; and ZooKeeper
is reached through one module only (and the request it adds to kazoo's)."""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT_PACKAGES = ("protocol", "zk", "transport", "broker", "controller", "client", "verifier", "bench")
PURE_PACKAGES = ["protocol", "broker/coordinator/group", "client/assignors"]
PURE_MODULES = [
    "broker/coordinator/config.py",
    "broker/listeners.py",
    "broker/isr_changes.py",
    "broker/log/cleaner/config.py",
    "broker/log/cleaner/offset_map.py",
    "broker/log/cleaner/rules.py",
    "broker/log/config.py",
    "broker/metrics/counters.py",
    "broker/log/producer_state.py",
    "broker/log/results.py",
    "broker/log/validator.py",
    "broker/replication/fetch_session.py",
    "broker/replication/partition.py",
    "broker/replication/partition_log.py",
    "broker/replication/truncation.py",
    "client/group/descriptions.py",
    "client/group/heartbeat.py",
    "client/group/lag.py",
    "client/group/offset_reset.py",
    "client/group/offsets.py",
    "controller/assignment.py",
    "controller/election.py",
    "client/console/model.py",
    "client/chaos/record.py",
    "client/chaos/report.py",
    "zk/znodes.py",
    "zk/ops.py",
    "broker/authorizer/rules.py",
]
FORBIDDEN = {"asyncio", "socket", "selectors", "kazoo", "uvloop", "threading", "subprocess", "multiprocessing",
             "concurrent"}
ZOOKEEPER_BRIDGE = {"zk/client.py", "zk/multiread.py"}


def pure_modules() -> list[Path]:
    packaged = [p for package in PURE_PACKAGES for p in (ROOT / package).rglob("*.py")]
    return sorted([*packaged, *(ROOT / module for module in PURE_MODULES)])


def imported_names(path: Path) -> set[str]:
    """The modules ``path`` imports, as dotted names (relative imports resolved; ``from a import b`` names both
    ``a`` and ``a.b``, which may be a module)."""
    package = path.relative_to(ROOT).parent.parts
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parent = package[:len(package) - node.level + 1] if node.level else ()
            base = ".".join([*parent, *([node.module] if node.module else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def imported_roots(path: Path) -> set[str]:
    return {name.split(".")[0] for name in imported_names(path)}


def project_file(name: str) -> Path | None:
    """The project's source file of module ``name`` (a package's __init__.py); None if it is not the project's."""
    if name.split(".")[0] not in PROJECT_PACKAGES:
        return None
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def project_imports(path: Path) -> list[Path]:
    """The project's files that importing ``path`` runs: each module it imports and their packages' __init__."""
    files = set()
    for name in imported_names(path):
        parts = name.split(".")
        files.update(found for depth in range(1, len(parts) + 1)
                     if (found := project_file(".".join(parts[:depth]))) is not None)
    return sorted(files)


def impure_import_chain(path: Path) -> list[str] | None:
    """The shortest chain of project imports from ``path`` to a module that imports a forbidden one, and what
    that one imports; None if there is none."""
    came_from: dict[Path, Path | None] = {path: None}
    todo = deque([path])
    while todo:
        current = todo.popleft()
        forbidden = imported_roots(current) & FORBIDDEN
        if forbidden:
            chain = []
            at: Path | None = current
            while at is not None:
                chain.append(str(at.relative_to(ROOT)))
                at = came_from[at]
            return [*reversed(chain), f"imports {sorted(forbidden)}"]
        for found in project_imports(current):
            if found not in came_from:
                came_from[found] = current
                todo.append(found)
    return None


def test_there_are_pure_modules_to_check():
    assert len(pure_modules()) >= 10


@pytest.mark.parametrize("path", pure_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_pure_module_imports_no_io_framework(path: Path):
    assert imported_roots(path) & FORBIDDEN == set()


@pytest.mark.parametrize("path", pure_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_pure_module_imports_no_impure_project_module(path: Path):
    assert impure_import_chain(path) is None


def test_the_import_chains_are_followed():
    assert impure_import_chain(ROOT / "broker/log/segment.py") == [
        "broker/log/segment.py", "broker/log/epoch_cache.py", "imports ['threading']"]


def test_only_the_bridge_imports_kazoo():
    sources = [p for package in PROJECT_PACKAGES for p in (ROOT / package).rglob("*.py")]
    importers = {str(p.relative_to(ROOT)) for p in sources if "kazoo" in imported_roots(p)}
    assert importers == ZOOKEEPER_BRIDGE
