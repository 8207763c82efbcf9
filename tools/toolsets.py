"""Toolsets: named groups of tools, static (this table) or dynamic (whatever the registry holds)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, TypedDict

from hermes_nb.tools.errors import UnknownToolsetError

__all__ = [
    "TOOLSETS",
    "ToolsetSpec",
    "create_custom_toolset",
    "get_all_toolsets",
    "get_toolset_info",
    "resolve_toolset",
    "resolve_toolsets",
    "validate_toolset",
]


class ToolsetSpec(TypedDict):
    description: str
    tools: list[str]
    includes: list[str]


#: Hermes-style table. Tools named here that are not registered are simply absent from definitions.
TOOLSETS: dict[str, ToolsetSpec] = {
    "file": {
        "description": "Read, write, patch and search files in the workspace",
        "tools": ["read_file", "write_file", "patch", "search_files"],
        "includes": [],
    },
    "terminal": {
        "description": "Run shell commands (dangerous ones need approval)",
        "tools": ["terminal"],
        "includes": [],
    },
    "code": {
        "description": "Run Python in the live kernel (needs approval)",
        "tools": ["python"],
        "includes": [],
    },
    "clarify": {
        "description": "Ask the person a question",
        "tools": ["clarify"],
        "includes": [],
    },
    "readonly": {
        "description": "Tools that only look: read and search files",
        "tools": ["read_file", "search_files"],
        "includes": [],
    },
    "hermes-core": {
        "description": "Everything built in: files, terminal, code and clarify",
        "tools": [],
        "includes": ["file", "terminal", "code", "clarify"],
    },
}

_ALL = {"all", "*"}
_lock = threading.Lock()


def _registry() -> Any:
    from hermes_nb.tools.registry import registry

    return registry


def get_all_toolsets() -> dict[str, ToolsetSpec]:
    """The static table plus every toolset that exists only in the registry (notebook, plugin, MCP)."""
    out: dict[str, ToolsetSpec] = {k: _copy(v) for k, v in TOOLSETS.items()}
    for name, tools in _registry().get_toolsets().items():
        spec = out.setdefault(name, {"description": "", "tools": [], "includes": []})
        spec["tools"] = sorted(set(spec["tools"]) | set(tools))
    return out


def get_toolset_info(name: str) -> ToolsetSpec:
    """One toolset's spec; UnknownToolsetError listing the known names."""
    all_sets = get_all_toolsets()
    if name not in all_sets:
        raise _unknown(name, all_sets)
    return all_sets[name]


def validate_toolset(name: str) -> bool:
    """True when ``name`` is ``all``/``*``, in the table, or a toolset the registry holds."""
    return name in _ALL or name in TOOLSETS or name in _registry().get_toolsets()


def resolve_toolset(name: str, _seen: set[str] | None = None) -> list[str]:
    """All tool names in a toolset, following ``includes`` (cycles are cut), sorted."""
    reg = _registry()
    if name in _ALL:
        return reg.get_all_tool_names()
    all_sets = get_all_toolsets()
    if name not in all_sets:
        raise _unknown(name, all_sets)
    return sorted(_resolve(name, all_sets, _seen if _seen is not None else set()))


def resolve_toolsets(names: Iterable[str]) -> list[str]:
    """The union of several toolsets."""
    out: set[str] = set()
    for name in names:
        out.update(resolve_toolset(name))
    return sorted(out)


def _resolve(name: str, all_sets: dict[str, ToolsetSpec], seen: set[str]) -> set[str]:
    if name in seen:
        return set()
    seen.add(name)
    spec = all_sets.get(name)
    if spec is None:
        return set()
    tools = set(spec["tools"])
    for inc in spec["includes"]:
        if inc in _ALL:
            tools.update(_registry().get_all_tool_names())
        else:
            tools |= _resolve(inc, all_sets, seen)
    return tools


def create_custom_toolset(
    name: str, description: str = "", tools: Iterable[str] = (), includes: Iterable[str] = ()
) -> ToolsetSpec:
    """Add (or replace) a toolset in the table. Included toolsets must exist."""
    if not name or not isinstance(name, str):
        raise ValueError("toolset name must be a non-empty string")
    includes = list(includes)
    for inc in includes:
        if not validate_toolset(inc) and inc != name:
            raise _unknown(inc, get_all_toolsets())
    spec: ToolsetSpec = {"description": description, "tools": list(tools), "includes": includes}
    with _lock:
        TOOLSETS[name] = spec
    return _copy(spec)


def remove_custom_toolset(name: str) -> None:
    with _lock:
        TOOLSETS.pop(name, None)


def _copy(spec: ToolsetSpec) -> ToolsetSpec:
    return {"description": spec["description"], "tools": list(spec["tools"]), "includes": list(spec["includes"])}


def _unknown(name: str, all_sets: dict[str, ToolsetSpec]) -> UnknownToolsetError:
    known = ", ".join(sorted(all_sets)) or "(none)"
    return UnknownToolsetError(f"unknown toolset {name!r}; known toolsets: {known}, all")
