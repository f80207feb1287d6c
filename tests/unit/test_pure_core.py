"""The pure core (wire and disk formats, the log) imports no asyncio, sockets or ZooKeeper client."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PURE_PACKAGES = ["protocol", "broker/log"]
FORBIDDEN = {"asyncio", "socket", "selectors", "kazoo", "uvloop"}


def pure_modules() -> list[Path]:
    return sorted(p for package in PURE_PACKAGES for p in (ROOT / package).glob("*.py"))


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
