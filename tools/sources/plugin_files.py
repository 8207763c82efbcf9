"""Plain Hermes-style tool files in ``$HERMES_NB_HOME/tools/*.py``, loaded as plugins and reloadable.

A file qualifies when its module level calls ``registry.register(...)`` (the AST scan of
``tools.discovery``). It runs with its own view of ``tools.registry``: the ``registry`` it imports
registers through a ``PluginContext``, so its tools are ``source="plugin"`` with ``origin=<the file>``,
never take a built-in's, notebook's or MCP tool's name, and leave with ``unload_plugins()``.

Each discovery compares the files' contents with what was loaded: an edited file runs again (its old
tools removed first), a deleted or disabled file's tools are removed, an unchanged file is left alone.
The source is compiled directly (no ``__pycache__`` in the home folder, no stale bytecode after an edit
within the same second).
"""

from __future__ import annotations

import hashlib
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_nb.tools.sources.hermes_imports import alias_import, compat_builtins

__all__ = ["TOOL_FILE_PREFIX", "ToolFile", "load_tool_file", "scan_tool_folder"]

TOOL_FILE_PREFIX = "hermes_nb_home_tools"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFile:
    """A candidate tool file: its plugin name (the stem), path and content digest."""

    name: str
    path: Path
    digest: str
    registers: bool


def scan_tool_folder(folder: Path) -> tuple[list[ToolFile], dict[str, str]]:
    """The ``*.py`` files of ``folder`` (sorted), and ``{name: error}`` for files that cannot be read."""
    from hermes_nb.tools.sources.discovery import scan_file

    found: list[ToolFile] = []
    errors: dict[str, str] = {}
    if not folder.is_dir():
        return found, errors
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith((".", "_")) or not path.is_file():
            continue
        try:
            raw = path.read_bytes()
            registers = scan_file(path)
        except (OSError, SyntaxError, ValueError) as exc:
            errors[path.stem] = f"{type(exc).__name__}: {exc}"
            continue
        found.append(
            ToolFile(name=path.stem, path=path, digest=hashlib.sha256(raw).hexdigest(), registers=registers)
        )
    return found, errors


class _RegistryView:
    """The ``registry`` a tool file sees: ``register`` goes through its ``PluginContext``."""

    def __init__(self, real: Any, register: Callable[..., Any]) -> None:
        self._real = real
        self.register = register

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._real, attr)


class _ModuleView(types.ModuleType):
    """A module that answers some attributes itself and forwards the rest to the real module."""

    def __init__(self, real: types.ModuleType, overrides: Mapping[str, Any]) -> None:
        super().__init__(real.__name__, real.__doc__)
        self._real = real
        self.__dict__.update(overrides)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._real, attr)


def _builtins_with_view(register: Callable[..., Any]) -> dict[str, Any]:
    """``__builtins__`` whose ``__import__`` maps Hermes's names (``hermes_imports``) and hands this file
    a registry view instead of the singleton."""
    import hermes_nb.tools as core
    import hermes_nb.tools.registry as real_module

    registry_module = _ModuleView(
        real_module, {"registry": _RegistryView(real_module.registry, register)}
    )
    core_package = _ModuleView(core, {"registry": registry_module})

    def view_import(
        name: str,
        globals: Mapping[str, Any] | None = None,
        locals: Mapping[str, Any] | None = None,
        fromlist: Sequence[str] | None = (),
        level: int = 0,
    ) -> Any:
        module = alias_import(name, globals, locals, fromlist, level)
        if module is real_module:
            return registry_module  # from tools.registry import registry
        if module is core:
            return core_package  # import tools.registry; from tools import registry
        return module

    return compat_builtins(view_import)


def load_tool_file(tool_file: ToolFile, register: Callable[..., Any]) -> types.ModuleType:
    """Run a tool file as module ``hermes_nb_home_tools.<name>``, its registrations going to ``register``."""
    module_name = f"{TOOL_FILE_PREFIX}.{tool_file.name}"
    if TOOL_FILE_PREFIX not in sys.modules:
        package = types.ModuleType(TOOL_FILE_PREFIX)
        package.__path__ = []
        sys.modules[TOOL_FILE_PREFIX] = package
    source = tool_file.path.read_bytes()
    code = compile(source, str(tool_file.path), "exec", dont_inherit=True)
    module = types.ModuleType(module_name)
    module.__file__ = str(tool_file.path)
    module.__dict__["__builtins__"] = _builtins_with_view(register)
    sys.modules[module_name] = module  # replaced on every load, so an edit takes effect
    try:
        exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module
