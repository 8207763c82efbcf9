"""Toolsets: named groups of tools, static (this table) or dynamic (whatever the registry holds).

Hermes's names and shapes (``get_toolset``, ``resolve_toolset(..., include_registry=...)``,
``resolve_multiple_toolsets``, ``get_toolset_info``, aliases from ``registry.register_toolset_alias``),
with one difference on purpose: resolving a toolset nobody knows is an ``UnknownToolsetError`` naming
the known ones, not an empty list, because a typo must not silently give the model no tools.
"""

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
    "get_toolset",
    "get_toolset_info",
    "get_toolset_names",
    "remove_custom_toolset",
    "resolve_multiple_toolsets",
    "resolve_toolset",
    "resolve_toolsets",
    "validate_toolset",
]


class ToolsetSpec(TypedDict):
    description: str
    tools: list[str]
    includes: list[str]


class ToolsetInfo(TypedDict):
    """Hermes's ``get_toolset_info`` shape."""

    name: str
    description: str
    direct_tools: list[str]
    includes: list[str]
    resolved_tools: list[str]
    tool_count: int
    is_composite: bool


#: Hermes-style table. Tools named here that are not registered are simply absent from definitions.
TOOLSETS: dict[str, ToolsetSpec] = {
    "file": {
        "description": "Read, write, patch and search files in the workspace",
        "tools": ["read_file", "write_file", "patch", "search_files"],
        "includes": [],
    },
    "terminal": {
        "description": "Run shell commands (dangerous ones need approval), and background jobs",
        "tools": ["terminal", "process"],
        "includes": [],
    },
    "code": {
        "description": "Run Python in the live kernel (needs approval)",
        "tools": ["python"],
        "includes": [],
    },
    "code_execution": {
        "description": "Run a Python script that calls your tools as functions (each script needs approval)",
        "tools": ["execute_code"],
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
    # the agent-loop tools (tools/agent_loop): their toolsets get a line in the picker like the others
    "todo": {
        "description": "The agent's plan for the run: one checklist it writes and updates",
        "tools": ["todo"],
        "includes": [],
    },
    "memory": {
        "description": "Notes the agent keeps across runs (MEMORY.md, USER.md), in the next run's system prompt",
        "tools": ["memory"],
        "includes": [],
    },
    "session_search": {
        "description": "Search past runs, this notebook's and other kernels' (full text)",
        "tools": ["session_search"],
        "includes": [],
    },
    "delegation": {
        "description": "Hand tasks to sub-agents that run at the same time, each with a subset of the tools",
        "tools": ["delegate_task"],
        "includes": [],
    },
    "tool_search": {
        "description": "Find and call tools kept out of the prompt (deferred), by searching their descriptions",
        "tools": ["tool_search", "tool_describe", "tool_call"],
        "includes": [],
    },
}

_ALL = {"all", "*"}
_lock = threading.Lock()


def _registry() -> Any:
    from hermes_nb.tools.registry import registry

    return registry


def get_all_toolsets() -> dict[str, ToolsetSpec]:
    """The static table plus every toolset that exists only in the registry (notebook, plugin, MCP); a toolset
    holding only Hermes main's new names of tools another toolset has (``todo_list`` for ``todo``) is left out of
    the listing (a class saw both), though it still works by name."""
    from hermes_nb.tools.sources.hermes_names import TOOL_RENAMES

    out: dict[str, ToolsetSpec] = {k: _copy(v) for k, v in TOOLSETS.items()}
    reg = _registry()
    for name, tools in reg.get_toolsets().items():
        if name not in out and tools and all(reg.get_entry(TOOL_RENAMES.get(t, "")) is not None for t in tools):
            continue
        spec = out.setdefault(name, {"description": "", "tools": [], "includes": []})
        spec["tools"] = sorted(set(spec["tools"]) | set(tools))
    return out


def get_toolset(name: str, *, include_registry: bool = True) -> ToolsetSpec | None:
    """One toolset's spec (an alias gives its target's tools), or ``None`` when nobody knows the name.

    ``include_registry=False`` is the static table alone, as written.
    """
    if not include_registry:
        static = TOOLSETS.get(name)
        return _copy(static) if static is not None else None
    reg = _registry()
    return _spec(name, reg.get_toolsets(), reg)


def _spec(name: str, registered: dict[str, list[str]], reg: Any) -> ToolsetSpec | None:
    static = TOOLSETS.get(name)
    if static is not None:
        spec = _copy(static)
        spec["tools"] = sorted(set(spec["tools"]) | set(registered.get(name, ())))
        return spec
    if name in registered:
        return {"description": "", "tools": list(registered[name]), "includes": []}
    target = reg.get_toolset_alias_target(name)
    if target is not None and target in registered:
        return {"description": f"alias of {target}", "tools": list(registered[target]), "includes": []}
    return None


def get_toolset_info(name: str) -> ToolsetInfo:
    """Hermes's summary of one toolset: direct tools, includes, resolved tools and their count."""
    spec = get_toolset(name)
    if spec is None:
        raise _unknown(name, get_all_toolsets())
    resolved = resolve_toolset(name)
    return {
        "name": name,
        "description": spec["description"],
        "direct_tools": spec["tools"],
        "includes": spec["includes"],
        "resolved_tools": resolved,
        "tool_count": len(resolved),
        "is_composite": bool(spec["includes"]),
    }


def get_toolset_names() -> list[str]:
    """Every toolset name: the table's and the registry's (aliases are names too, not listed here)."""
    return sorted(get_all_toolsets())


def validate_toolset(name: str) -> bool:
    """True when ``name`` is ``all``/``*``, in the table, a toolset the registry holds, or an alias."""
    if name in _ALL or name in TOOLSETS:
        return True
    reg = _registry()
    return name in reg.get_toolsets() or reg.get_toolset_alias_target(name) is not None


def resolve_toolset(name: str, visited: set[str] | None = None, *, include_registry: bool = True) -> list[str]:
    """All tool names in a toolset, following ``includes`` (cycles are cut), sorted.

    ``include_registry=False`` resolves the static table only (a registry-only toolset is then
    empty). A name nobody knows is an ``UnknownToolsetError`` (Hermes returns ``[]``).
    """
    if name in _ALL and include_registry:
        return _registry().get_all_tool_names()
    if not validate_toolset(name):
        raise _unknown(name, get_all_toolsets())
    seen = visited if visited is not None else set()
    return sorted(_resolve(name, seen, include_registry=include_registry))


def resolve_multiple_toolsets(toolset_names: Iterable[str]) -> list[str]:
    """The union of several toolsets, sorted (Hermes's name)."""
    out: set[str] = set()
    for name in toolset_names:
        out.update(resolve_toolset(name))
    return sorted(out)


#: hermes_nb's earlier name for ``resolve_multiple_toolsets``.
resolve_toolsets = resolve_multiple_toolsets


def _resolve(name: str, seen: set[str], *, include_registry: bool) -> set[str]:
    reg = _registry() if include_registry else None
    registered = reg.get_toolsets() if reg is not None else {}

    def walk(name: str) -> set[str]:
        if name in seen:
            return set()
        seen.add(name)
        if name in _ALL:  # an include of "all"
            return set(reg.get_all_tool_names()) if reg is not None else set().union(*map(walk, TOOLSETS))
        if reg is not None:
            spec = _spec(name, registered, reg)
        else:
            static = TOOLSETS.get(name)
            spec = _copy(static) if static is not None else None
        if spec is None:
            return set()
        tools = set(spec["tools"])
        for inc in spec["includes"]:
            tools |= walk(inc)
        return tools

    return walk(name)


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
