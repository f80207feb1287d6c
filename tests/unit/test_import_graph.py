"""The project's import graph, read from the sources: the packages stand on each other without a circle, no package
has a circle among its modules, and the controller and the broker keep apart but for the broker starting its
controller. Every import counts, also those made inside functions or only for type checking."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol", "zk", "transport", "controller", "broker", "verifier", "client", "bench")
#: The one way between the controller and the broker: the broker process starts its controller.
BROKER_STARTS_CONTROLLER = "broker.server"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def imported_modules(path: Path) -> Iterator[str]:
    """The project modules a file imports; ``from package import module`` names the module, not the package."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in MODULES else node.module
                     for alias in node.names]
        else:
            continue
        yield from (name for name in names if name.split(".")[0] in PACKAGES)


IMPORTS = {module: sorted(set(imported_modules(path)) - {module}) for module, path in MODULES.items()}


def package(module: str) -> str:
    return module.split(".")[0]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def why(importer_package: str, imported_package: str) -> list[str]:
    return [f"{module} -> {target}" for module, targets in IMPORTS.items() for target in targets
            if package(module) == importer_package and package(target) == imported_package]


def test_the_graph_reads_every_package():
    assert {package(module) for module in MODULES} == set(PACKAGES)
    assert IMPORTS["broker.server"], "broker/server.py imports nothing of the project: the reader is broken"


def test_no_circle_between_packages():
    graph = {p: {package(t) for m, ts in IMPORTS.items() if package(m) == p for t in ts} - {p} for p in PACKAGES}
    found = circles(graph)
    assert found == [], "\n".join(
        f"packages in a circle: {circle}: " + "; ".join(
            line for a in circle for b in circle if b in graph[a] for line in why(a, b)[:3])
        for circle in found)


def test_no_circle_between_the_modules_of_a_package():
    graph = {module: {t for t in targets if package(t) == package(module)} for module, targets in IMPORTS.items()}
    found = circles(graph)
    assert found == [], "modules in a circle: " + "; ".join(
        " <-> ".join(circle) for circle in found)


def test_the_controller_imports_nothing_of_the_broker():
    assert why("controller", "broker") == []


def test_the_broker_reaches_the_controller_only_to_start_it():
    assert {line.split(" -> ")[0] for line in why("broker", "controller")} <= {BROKER_STARTS_CONTROLLER}


def test_no_room_of_the_controller_imports_the_controller_itself():
    importers = {module for module, targets in IMPORTS.items() if "controller.controller" in targets}
    assert importers <= {BROKER_STARTS_CONTROLLER}
