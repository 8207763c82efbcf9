"""Hermes's other registry names, so Hermes tool files, plugins and callers import unchanged.

``HermesQueries`` is mixed into ``ToolRegistry`` (Hermes's query methods, built only on the registry's
own public ones); the functions are re-exported from ``tools.registry``. Written for hermes_nb from
Hermes's public names; availability has no TTL cache here (each call asks again), so the cache
helpers are harmless no-ops.
"""

from __future__ import annotations

import builtins
import logging
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hermes_nb.tools.calls.entry import DEFAULT_EMOJI

if TYPE_CHECKING:
    import threading

    from hermes_nb.tools.calls.entry import Availability, ChecksRun, ToolEntry

__all__ = [
    "HermesQueries", "caller_globals", "discover_builtin_tools", "invalidate_check_fn_cache", "is_hermes_style", "keep_existing",
    "no_cache_check_fn",
]

log = logging.getLogger("hermes_nb.tools.registry")

F = TypeVar("F", bound=Callable[..., Any])

#: Hermes's fallback size when a tool sets no ``max_result_size_chars`` (ARCHITECTURE: "The result budget").
DEFAULT_RESULT_SIZE_CHARS = 100_000


def no_cache_check_fn(fn: F) -> F:
    """Hermes marks checks that must not be TTL-cached; hermes_nb never caches checks across calls."""
    return fn


def invalidate_check_fn_cache() -> None:
    """Hermes drops its check cache here; hermes_nb has none to drop."""


def discover_builtin_tools(tools_dir: str | Path | None = None) -> list[str]:
    """Import the built-in tool files (Hermes keeps this in ``tools.registry``)."""
    from hermes_nb.tools.sources.discovery import discover_builtin_tools as discover

    return discover(tools_dir)


class ToolsetAliases:
    """Hermes's toolset aliases (an MCP server's short name for its ``mcp-<server>`` toolset).

    An alias lives as long as its toolset has tools, as in Hermes: when the last tool leaves, so does
    every alias pointing at it.
    """

    if TYPE_CHECKING:
        def get_toolsets(self) -> dict[str, list[str]]: ...
        def add_listener(self, callback: Callable[[str, str], None]) -> Callable[[], None]: ...
        _lock: threading.RLock

    def _aliases(self) -> dict[str, str]:
        aliases: dict[str, str] | None = self.__dict__.get("_toolset_aliases")
        if aliases is None:
            with self._lock:
                aliases = self.__dict__.setdefault("_toolset_aliases", {})
                self.add_listener(self._drop_stale_aliases)
        return aliases

    def register_toolset_alias(self, alias: str, toolset: str) -> None:
        """Let ``alias`` name ``toolset`` wherever a toolset name is accepted; a new target is logged."""
        aliases = self._aliases()
        with self._lock:
            old = aliases.get(alias)
            if old and old != toolset:
                log.warning("toolset alias %r moved from %r to %r", alias, old, toolset)
            aliases[alias] = toolset

    def get_registered_toolset_aliases(self) -> dict[str, str]:
        with self._lock:
            return dict(self.__dict__.get("_toolset_aliases") or {})

    def get_toolset_alias_target(self, alias: str) -> str | None:
        with self._lock:
            return (self.__dict__.get("_toolset_aliases") or {}).get(alias)

    def _drop_stale_aliases(self, event: str, name: str) -> None:
        if event != "deregister":
            return
        live = self.get_toolsets()
        with self._lock:
            aliases = self.__dict__.get("_toolset_aliases") or {}
            for alias in [a for a, target in aliases.items() if target not in live]:
                del aliases[alias]


class HermesQueries(ToolsetAliases):
    """Hermes's query methods, in terms of ``entries``, ``get_entry`` and ``availability``; and its aliases."""

    if TYPE_CHECKING:
        def entries(self) -> list[ToolEntry]: ...
        def get_entry(self, name: str) -> ToolEntry | None: ...
        def availability(self, name: str, _cache: ChecksRun | None = None) -> Availability: ...
        def get_tool_names_for_toolset(self, toolset: str) -> list[str]: ...

    def get_all_entries(self) -> list[ToolEntry]:
        return self.entries()

    def get_schema(self, name: str) -> dict[str, Any] | None:
        """The raw schema, whether or not the tool is available."""
        entry = self.get_entry(name)
        return entry.schema if entry else None

    def get_emoji(self, name: str, default: str = DEFAULT_EMOJI) -> str:
        entry = self.get_entry(name)
        return (entry.emoji if entry else "") or default

    def get_max_result_size(self, name: str, default: float | None = None) -> float:
        entry = self.get_entry(name)
        if entry is not None and entry.max_result_size_chars is not None:
            return entry.max_result_size_chars
        return default if default is not None else DEFAULT_RESULT_SIZE_CHARS

    def get_tool_to_toolset_map(self) -> dict[str, str]:
        return {e.name: e.toolset for e in self.entries()}

    def get_registered_toolset_names(self) -> list[str]:
        return sorted({e.toolset for e in self.entries()})

    def _toolset_groups(self) -> dict[str, list[ToolEntry]]:
        groups: dict[str, list[ToolEntry]] = {}
        for entry in self.entries():
            groups.setdefault(entry.toolset, []).append(entry)
        return dict(sorted(groups.items()))

    def _any_available(self, members: list[ToolEntry], cache: ChecksRun) -> bool:
        return any(self.availability(e.name, cache).available for e in members)

    def is_toolset_available(self, toolset: str) -> bool:
        """True when at least one tool of the toolset can be offered (never raises)."""
        return self._any_available(self._toolset_groups().get(toolset, []), {})

    def check_toolset_requirements(self) -> dict[str, bool]:
        cache: ChecksRun = {}
        return {ts: self._any_available(members, cache) for ts, members in self._toolset_groups().items()}

    def get_available_toolsets(self) -> dict[str, dict[str, Any]]:
        """``{toolset: {"available", "tools", "description", "requirements"}}`` for display."""
        cache: ChecksRun = {}
        return {
            ts: {"available": self._any_available(members, cache), "tools": [e.name for e in members],
                 "description": "", "requirements": _env_names(members)}
            for ts, members in self._toolset_groups().items()
        }

    def get_toolset_requirements(self) -> dict[str, dict[str, Any]]:
        """Hermes's ``TOOLSET_REQUIREMENTS`` shape: name, env_vars, check_fn, setup_url, tools."""
        return {
            ts: {"name": ts, "env_vars": _env_names(members),
                 "check_fn": next((e.check_fn for e in members if e.check_fn), None),
                 "setup_url": None, "tools": [e.name for e in members]}
            for ts, members in self._toolset_groups().items()
        }

    def check_tool_availability(self, quiet: bool = False) -> tuple[list[str], list[dict[str, Any]]]:
        """Hermes's shape: ``(available toolsets, [{"name", "env_vars", "tools"} per unavailable one])``."""
        available, unavailable = [], []
        for toolset, ok in self.check_toolset_requirements().items():
            if ok:
                available.append(toolset)
            else:
                members = self._toolset_groups()[toolset]
                unavailable.append({"name": toolset, "env_vars": _env_names(members),
                                    "tools": [e.name for e in members]})
        return available, unavailable


def _env_names(entries: list[ToolEntry]) -> list[str]:
    """The union of ``requires_env`` names, first seen first (names only, never values)."""
    return list(dict.fromkeys(v for e in entries for v in e.requires_env))


def caller_globals() -> dict[str, Any]:
    """The globals of whoever called ``registry.register`` (two frames up from here), past the first-use
    wrapper (``first_use``), which is not a caller: seen from it, a Hermes-style file looked like ours."""
    frame = sys._getframe(2)
    while frame.f_back is not None and frame.f_globals.get("__name__") == "hermes_nb.tools.sources.first_use":
        frame = frame.f_back
    return frame.f_globals


def is_hermes_style(caller_globals: Mapping[str, Any]) -> bool:
    """Whether the calling module was loaded by hermes_nb as a Hermes-style file (plugin, tool file).

    Those run with ``__builtins__`` whose ``__import__`` maps Hermes's names (``hermes_imports``); the
    mark is on the module itself, so it holds for helper modules of a plugin too.
    """
    marker = caller_globals.get("__builtins__")
    return isinstance(marker, dict) and marker.get("__import__", builtins.__import__) is not builtins.__import__


def keep_existing(old: ToolEntry, name: str, toolset: str, origin: str | None) -> ToolEntry:
    """Hermes's answer to a name taken by another toolset: log it, keep the existing tool, go on.

    ``%tools doctor`` lists it (``load_report``), so the skipped registration is not silent.
    """
    from hermes_nb.tools.sources.load_report import record_failure

    message = (f"tool {name!r} (toolset {toolset!r}) not registered: the name belongs to toolset "
               f"{old.toolset!r} ({old.source}); the existing tool was kept")
    log.warning("%s (from %s)", message, origin or "?")
    record_failure("tool", f"{origin or '?'}/{name}", message)
    return old
