"""The package layout: no import cycles inside hermes_nb, and every core subpackage is in the wheel's list."""

from __future__ import annotations

import ast
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

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
    assert "hermes_nb.tools.schema.validation" in graph["hermes_nb.tools.calls.entry"]
    assert "hermes_nb.models.replay" in graph["hermes_nb.models.model_choice"]  # the seam, moved (issue 34)
    assert cycles(graph) == []


def test_every_core_subpackage_is_in_the_wheel_list() -> None:
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join([package, *init.parent.relative_to(root).parts])
        for package, root in ROOTS.items()
        for init in root.rglob("__init__.py")
    }
    assert on_disk == listed


#: The folders of hermes_nb in dependency order: a module may import its own layer or any later one.
#: entry → magics → agent / serve / evaluation / interop → display → the few shared modules → core.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("hermes_nb", "hermes_nb.startup"),
    ("hermes_nb.magics",),
    ("hermes_nb.agent", "hermes_nb.serve", "hermes_nb.evaluation", "hermes_nb.interop", "hermes_nb.traces"),
    ("hermes_nb.display",),
    ("hermes_nb._state", "hermes_nb._moved", "hermes_nb.selection", "hermes_nb.call_args", "hermes_nb.toolsets",
     "hermes_nb.models"),
    ("hermes_nb.tools",),
)
#: The one contract read the wrong way: the display renders the agent's typed events (and their usage record).
CONTRACTS = {("hermes_nb.display", "hermes_nb.agent.events"), ("hermes_nb.display", "hermes_nb.models")}


def layer_of(module: str) -> int:
    """The layer a module belongs to: the longest folder prefix in ``LAYERS`` that names it."""
    best, rank = "", -1
    for i, folders in enumerate(LAYERS):
        for folder in folders:
            if (module == folder or module.startswith(folder + ".")) and len(folder) > len(best):
                best, rank = folder, i
    assert rank >= 0, f"{module} is in no layer: add its folder to LAYERS"
    return rank


def wrong_way(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, imported in graph.items():
        for target in imported:
            if layer_of(target) >= layer_of(module):
                continue
            if any(module.startswith(src) and target == dst for src, dst in CONTRACTS):
                continue
            found.append(f"{module} → {target}")
    return sorted(found)


def test_layer_check_finds_a_planted_wrong_way_import() -> None:
    graph = {"hermes_nb.display.cards": {"hermes_nb.magics.tools"}, "hermes_nb.magics.tools": {"hermes_nb.tools.registry"}}
    assert wrong_way(graph) == ["hermes_nb.display.cards → hermes_nb.magics.tools"]


def test_folders_depend_one_way() -> None:
    graph = import_graph()
    assert "hermes_nb.display.live.state" in graph and "hermes_nb.magics.tools" in graph  # the tree is the new one
    assert wrong_way(graph) == []


REACH_BACK = re.compile(r"sys\.modules(?:\.get\(|\[)\s*[\"'](hermes_nb[\w.]*)")
#: Where sys.modules is written on purpose: the import aliases and loaders of tool sources.
ALIASING = {"hermes_nb.toolsets", "hermes_nb.tools.sources.hermes_imports", "hermes_nb.tools.sources.discovery",
            "hermes_nb.tools.sources.plugin_files", "hermes_nb.tools.sources.plugins"}


def test_no_stage_looks_another_up_in_sys_modules() -> None:
    """A later stage reaches an earlier one only through the registry's hooks (e.g. ``%tools call`` runs
    ``registry.before_batch()``), never by looking a module up in ``sys.modules``."""
    found = []
    for module, path in _modules().items():
        for match in REACH_BACK.finditer(path.read_text(encoding="utf-8")):
            found.append(f"{module}: sys.modules lookup of {match.group(1)}")
    assert found == []
    planted = 'mcp = sys.modules.get("hermes_nb.tools.mcp_tool")'
    assert REACH_BACK.search(planted)  # the scan sees the form %tools call used to have


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout")  # a wheel or sdist unpacked elsewhere has no index to read
    return out.stdout.splitlines()


#: The owner's layout, plus the build and tooling entries beside it; dotfiles are free.
TOP_LEVEL = {"pyproject.toml", "hermes_nb", "tools", "notebooks", "tests", "README.md", "Makefile", "bench",
             "scripts",
}


def test_top_level_holds_only_the_layout_and_no_file_is_empty() -> None:
    tracked = _tracked()
    top = {path.split("/")[0] for path in tracked if not path.startswith(".")}
    assert top - TOP_LEVEL == set(), "unexpected top-level entries"
    empty = [path for path in tracked if (REPO / path).is_file() and (REPO / path).stat().st_size == 0
             and not path.endswith("__init__.py") and not path.endswith(".gitkeep")]
    assert empty == []


def test_folders_stay_small_enough_to_read() -> None:
    modules = _modules()
    def top(folder: Path) -> list[str]:  # the modules directly in a folder (not its subpackages)
        return [m for m, p in modules.items() if p.parent == folder and p.name != "__init__.py"]

    top_nb, top_tools = top(REPO / "hermes_nb"), top(REPO / "tools")
    assert len(top_nb) <= 12, sorted(top_nb)
    assert len(top_tools) <= 24, sorted(top_tools)
    long = {m: n for m, p in modules.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500}
    assert long == {}


def test_old_module_paths_import_the_moved_modules() -> None:
    """Issue 20 moved modules, not names: ``hermes_nb.replay``, ``hermes_nb.tools.plugins``, ... are the new
    modules themselves (one object, so patching either patches both)."""
    import importlib

    from hermes_nb._moved import MOVED

    assert len(MOVED) >= 40
    for old, new in MOVED.items():
        assert old != new and not old.startswith(new + "."), f"{old} is no old path of {new}"
        assert importlib.import_module(old) is importlib.import_module(new), old
    # issue 34 moved the model seam out of the agent; the quickstart notebook documents this import
    from hermes_nb.agent.replay import ReplayModel
    from hermes_nb.models.replay import ReplayModel as moved

    assert ReplayModel is moved
    assert importlib.import_module("hermes_nb.agent.models") is importlib.import_module("hermes_nb.models")
    from hermes_nb.agent import Agent, ToolCallRecord  # noqa: F401  (the old module's names, from the package)
    from hermes_nb.display import Table  # noqa: F401
    from hermes_nb.magics import ToolMagics  # noqa: F401
