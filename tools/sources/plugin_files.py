"""Plain Hermes-style tool files in ``$HERMES_NB_HOME/tools/``, loaded as plugins and reloadable.

Two shapes, as Hermes ``main`` discovers them: ``tools/<name>.py`` and the package tool
``tools/<name>/tool.py`` (whose siblings it may import relatively). A file qualifies when its module
level calls ``registry.register(...)`` (the AST scan of ``tools.sources.discovery``). It runs with its own
view of ``tools.registry`` (``plugin_views``): the ``registry`` it imports registers through a
``PluginContext``, so its tools are ``source="plugin"`` with ``origin=<the file>``, never take a
built-in's, notebook's or MCP tool's name, and leave with ``unload_plugins()``.

Each discovery compares the files' contents with what was loaded: an edited file runs again (its old
tools removed first), a deleted or disabled file's tools are removed, an unchanged file is left alone.
The source is compiled directly (no ``__pycache__`` in the home folder, no stale bytecode after an edit
within the same second).
"""

from __future__ import annotations

import hashlib
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_nb.tools.sources.hermes_imports import set_scope_builtins
from hermes_nb.tools.sources.plugin_views import builtins_with_view

if TYPE_CHECKING:
    from hermes_nb.tools.sources.plugin_context import PluginContext

__all__ = ["TOOL_FILE_PREFIX", "ToolFile", "load_tool_file", "scan_tool_folder"]

TOOL_FILE_PREFIX = "hermes_nb_home_tools"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFile:
    """A candidate tool file: its plugin name (the stem, or the package's folder), path and content digest."""

    name: str
    path: Path
    digest: str
    registers: bool
    package: bool = False  # tools/<name>/tool.py


def _candidates(folder: Path) -> list[tuple[str, Path, bool]]:
    out = [(p.stem, p, False) for p in folder.glob("*.py") if p.is_file()]
    out += [(p.name, p / "tool.py", True) for p in folder.iterdir() if p.is_dir() and (p / "tool.py").is_file()]
    return sorted((c for c in out if not c[0].startswith((".", "_"))), key=lambda c: (c[0], c[2]))


def scan_tool_folder(folder: Path) -> tuple[list[ToolFile], dict[str, str]]:
    """The tool files of ``folder`` (sorted), and ``{name: error}`` for files that cannot be read."""
    from hermes_nb.tools.sources.discovery import scan_file

    found: list[ToolFile] = []
    errors: dict[str, str] = {}
    if not folder.is_dir():
        return found, errors
    seen: set[str] = set()
    for name, path, package in _candidates(folder):
        if name in seen:  # x.py and x/tool.py: the file wins, the package is said
            errors[f"{name}/tool.py"] = f"not loaded: {folder / name}.py has the same name"
            continue
        seen.add(name)
        try:
            raw = path.read_bytes()
            registers = scan_file(path)
        except (OSError, SyntaxError, ValueError) as exc:
            errors[name] = f"{type(exc).__name__}: {exc}"
            continue
        found.append(ToolFile(name=name, path=path, digest=hashlib.sha256(raw).hexdigest(), registers=registers,
                              package=package))
    return found, errors


def _package(name: str, path: list[str]) -> types.ModuleType:
    package = types.ModuleType(name)
    package.__path__ = path  # type: ignore[attr-defined]
    sys.modules[name] = package
    return package


def load_tool_file(tool_file: ToolFile, ctx: PluginContext, context: Callable[[], PluginContext]) -> types.ModuleType:
    """Run a tool file as ``hermes_nb_home_tools.<name>`` (a package tool: ``...<name>.tool``), its
    registrations going through ``context()`` (``ctx`` while it loads)."""
    if TOOL_FILE_PREFIX not in sys.modules:
        _package(TOOL_FILE_PREFIX, [])
    scoped = builtins_with_view(context)
    module_name = f"{TOOL_FILE_PREFIX}.{tool_file.name}"
    if tool_file.package:  # its siblings import as submodules of the package, with the same view
        for stale in [m for m in sys.modules if m.startswith(module_name + ".")]:
            del sys.modules[stale]
        _package(module_name, [str(tool_file.path.parent)])
        ctx.undos.append(set_scope_builtins(module_name, scoped))
        module_name += ".tool"
    source = tool_file.path.read_bytes()
    code = compile(source, str(tool_file.path), "exec", dont_inherit=True)
    module = types.ModuleType(module_name)
    module.__file__ = str(tool_file.path)
    if tool_file.package:
        module.__package__ = module_name.rpartition(".")[0]
    module.__dict__["__builtins__"] = scoped
    sys.modules[module_name] = module  # replaced on every load, so an edit takes effect
    try:
        exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module
