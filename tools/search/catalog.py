"""The catalog of one run: the deferred tools among exactly the run's enabled toolsets.

A tool is *deferrable*, as in Hermes, when it comes from outside hermes_nb and the notebook — an MCP
server's or a plugin's (``ToolEntry.source``) — or when it is marked: ``%%tool --defer``
(``metadata={"defer": True}`` at registration) or its name or toolset in ``tools.tool_search.defer``. A
pin keeps a tool direct whatever marks it: its name or toolset in ``tools.tool_search.pin``, or its MCP
server's ``defer: false``. The bridge tools themselves, ``clarify`` and every interactive tool (they ask
the person) are never deferred: asking must stay in sight of the model, not behind a search.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_nb.tools.calls.entry import ToolEntry
    from hermes_nb.tools.search.settings import SearchSettings

__all__ = ["BRIDGE_NAMES", "DEFERRABLE_SOURCES", "Catalog", "CatalogEntry", "is_deferrable", "make_catalog", "words"]

TOOL_SEARCH, TOOL_DESCRIBE, TOOL_CALL = "tool_search", "tool_describe", "tool_call"
#: Hermes's bridge names; no tool of any source is deferred under them.
BRIDGE_NAMES = frozenset({TOOL_SEARCH, TOOL_DESCRIBE, TOOL_CALL})
_NEVER = frozenset({"clarify"})
#: Sources whose tools are deferrable unless pinned: they come from outside (a server, a plugin), may be
#: many, and the model meets them through a search as well as through their schema.
DEFERRABLE_SOURCES = frozenset({"mcp", "plugin"})
_keys = itertools.count(1)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W\d_]+")


def words(text: str) -> list[str]:
    """Lower-case words of a name or sentence: ``getTinyImage`` and ``get_tiny_image`` alike."""
    return [w.lower() for w in _WORD.findall(text)]


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogEntry:
    """One deferred tool as the bridge shows it (its full schema stays in the registry)."""

    name: str
    toolset: str
    description: str
    parameters: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    server: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Catalog:
    """The deferred tools of one run, in a stable order; ``key`` names it for the search index's cache."""

    entries: tuple[CatalogEntry, ...]
    key: int = field(default_factory=lambda: next(_keys))
    by_name: Mapping[str, CatalogEntry] = field(default_factory=dict)

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def __len__(self) -> int:
        return len(self.entries)


def make_catalog(entries: Iterable[ToolEntry]) -> Catalog:
    """A catalog of these registry entries, ordered by toolset then name."""
    items = sorted((_entry(e) for e in entries), key=lambda c: (c.toolset, c.name))
    return Catalog(entries=tuple(items), by_name={c.name: c for c in items})


def _entry(entry: ToolEntry) -> CatalogEntry:
    params: Any = entry.schema.get("parameters") or {}
    props = params.get("properties") if isinstance(params, dict) else None
    required = params.get("required") if isinstance(params, dict) else None
    return CatalogEntry(
        name=entry.name, toolset=entry.toolset, description=entry.description or "",
        parameters=tuple(str(p) for p in props) if isinstance(props, dict) else (),
        required=tuple(str(r) for r in required if isinstance(r, str)) if isinstance(required, list) else (),
        server=str(entry.metadata.get("server") or "") if entry.source == "mcp" else "")


def is_deferrable(entry: ToolEntry, settings: SearchSettings) -> bool:
    """An MCP or plugin tool, or one marked for deferral; never a pinned one, nor one that must stay in sight
    (bridge, clarify, interactive)."""
    if entry.name in BRIDGE_NAMES or entry.name in _NEVER or entry.toolset in _NEVER or entry.interactive:
        return False
    server = str(entry.metadata.get("server")) if entry.source == "mcp" else None
    if entry.name in settings.pin or entry.toolset in settings.pin or server in settings.pinned_servers:
        return False
    if entry.source in DEFERRABLE_SOURCES or entry.metadata.get("defer") is True:
        return True
    return entry.name in settings.defer or entry.toolset in settings.defer
