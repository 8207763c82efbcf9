"""The package layout: no import cycles inside hermes_nb, and every core subpackage is in the wheel's list."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Installed package name → folder in the repository (setuptools package-dir).
ROOTS = {"hermes_nb": REPO / "hermes_nb", "hermes_nb.tools": REPO / "tools"}


def _modules() -> dict[str, Path]:
    out = {}
    for package, root in ROOTS.items():
        for path in root.rglob("*.py"):
            parts = [p for p in path.relative_to(root).with_suffix("").parts if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """Module → the modules of ours it imports anywhere in its source (function-level imports too)."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            for name in names:
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                if name and name != module and not module.startswith(name + "."):
                    graph[module].add(name)  # a module importing its own parent package is not an edge
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
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


def test_cycle_finder_finds_a_planted_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles_in_our_packages() -> None:
    graph = import_graph()
    # the graph really holds the edges that used to close cycles (registry↔schema, models↔replay)
    # (the registry reaches the schema package through function-level imports: those are edges too)
    assert "hermes_nb.tools.schema.lint" in graph["hermes_nb.tools.registry"]
    assert "hermes_nb.tools.schema.validation" in graph["hermes_nb.tools.entry"]
    assert "hermes_nb.models" in graph["hermes_nb.replay"]
    assert cycles(graph) == []


def test_every_core_subpackage_is_in_the_wheel_list() -> None:
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join([package, *init.parent.relative_to(root).parts])
        for package, root in ROOTS.items()
        for init in root.rglob("__init__.py")
    }
    assert on_disk == listed
