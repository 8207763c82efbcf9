"""A turn's tool definitions with tool search: the direct tools, plus the bridge when tools are deferred.

``assemble`` is the definitions step of the agent loop. Its catalog is exactly the run's enabled
toolsets (minus the disabled ones). What it decides — which tools go direct, which are deferred, the
catalog and the system prompt's listing — is kept per (registry change, config, toolsets, model
window), so a turn with 5 000 tools registered costs what its direct tools cost: the deferred tools'
schemas are never rebuilt, only the few direct ones (their checks run every turn, as without tool
search). A deferred tool's availability is looked at again when it is searched, described or called.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hermes_nb.tools.search.catalog import BRIDGE_NAMES, Catalog, is_deferrable, make_catalog
from hermes_nb.tools.search.settings import SearchSettings, context_window, load_settings

__all__ = ["Assembly", "assemble", "render_listing", "with_listing"]

_CHARS_PER_TOKEN = 4  # the usual rule of thumb; an estimate is all the threshold needs
_BRIDGE = tuple(sorted(BRIDGE_NAMES))
_KEEP = 16  # plans kept (selections × models in use)


@dataclass(frozen=True, slots=True, kw_only=True)
class Assembly:
    """What one turn offers the model."""

    definitions: list[dict[str, Any]]
    #: the deferred tools (None when nothing is deferred this turn)
    catalog: Catalog | None = None
    #: the system prompt's block naming the deferred tools ("" when none)
    listing: str = ""
    #: estimated tokens of the deferrable tools' schemas, and the threshold ``auto`` compares them with
    deferrable_tokens: int = 0
    threshold_tokens: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class _Plan:
    direct: tuple[str, ...]
    offered: tuple[str, ...]  # the direct tools and, with a catalog, the bridge tools
    catalog: Catalog | None
    listing: str
    deferrable_tokens: int
    threshold_tokens: int


_lock = threading.Lock()
_plans: dict[tuple[Any, ...], _Plan] = {}
_tokens: dict[int, tuple[Any, int]] = {}  # id(entry) -> (entry, estimated tokens of its schema)
_changes = itertools.count(1)
_version = 0
_registry: Any = None  # the registry, once watched


def _changed(event: str, name: str) -> None:
    # a fresh number per change (``next`` is atomic): listeners run in any thread, and a lost ``+= 1``
    # could leave a plan built before a change under the number after it
    global _version
    _version = next(_changes)


def _watch() -> Any:
    """The registry, its changes counted (one listener for the process: the registry is process-wide too)."""
    global _registry
    if _registry is None:
        from hermes_nb.tools.registry import registry

        with _lock:
            if _registry is None:
                registry.add_listener(_changed)
                _registry = registry
    return _registry


def _toolsets_key() -> tuple[Any, ...]:
    """The static toolset table as it stands: its names and spec objects (``create_custom_toolset`` puts a
    new spec in; a spec's lists edited in place are not seen until the registry next changes)."""
    from hermes_nb.tools.toolsets import TOOLSETS

    return tuple(zip(TOOLSETS, map(id, TOOLSETS.values()), strict=True))


def _names_key(toolsets: Iterable[str] | None) -> tuple[str, ...] | None:
    if toolsets is None:
        return None
    return (toolsets,) if isinstance(toolsets, str) else tuple(toolsets)


def assemble(enabled_toolsets: Iterable[str] | None = None, disabled_toolsets: Iterable[str] | None = None, *,
             model: str | None = None) -> Assembly:
    """The definitions of one turn for ``model`` (its context window decides ``auto``).

    An unknown toolset raises ``UnknownToolsetError``, as ``get_tool_definitions`` does.
    """
    registry = _watch()
    settings = load_settings()
    enabled, disabled = _names_key(enabled_toolsets), _names_key(disabled_toolsets)
    window = context_window(model)
    key = (_version, _toolsets_key(), settings, enabled, disabled, window)
    plan = _plans.get(key)  # read without the lock: a dict look-up is atomic, and a miss only rebuilds
    if plan is None:
        plan = _plan(enabled, disabled, settings, window)
        with _lock:
            _plans[key] = plan
            while len(_plans) > _KEEP:
                del _plans[next(iter(_plans))]  # the oldest plan
    if plan.catalog is None:
        return Assembly(definitions=registry.get_definitions(plan.direct),
                        deferrable_tokens=plan.deferrable_tokens, threshold_tokens=plan.threshold_tokens)
    return Assembly(definitions=registry.get_definitions(plan.offered), catalog=plan.catalog,
                    listing=plan.listing, deferrable_tokens=plan.deferrable_tokens,
                    threshold_tokens=plan.threshold_tokens)


def _plan(enabled: tuple[str, ...] | None, disabled: tuple[str, ...] | None, settings: SearchSettings,
          window: int) -> _Plan:
    from hermes_nb.tools.calls.entry import ChecksRun, is_available
    from hermes_nb.tools.registry import registry
    from hermes_nb.tools.toolsets import resolve_multiple_toolsets

    names = set(registry.get_all_tool_names() if enabled is None else resolve_multiple_toolsets(enabled))
    if disabled:
        names -= set(resolve_multiple_toolsets(disabled))
    names -= BRIDGE_NAMES  # offered only with deferred tools, never as a toolset of their own
    threshold = int(window * settings.threshold_pct / 100)
    entries = [e for e in map(registry.get_entry, names) if e is not None]
    deferrable = [e for e in entries if is_deferrable(e, settings)] if settings.enabled != "off" else []
    tokens = _estimate(deferrable)
    if not deferrable or (settings.enabled == "auto" and tokens <= threshold):
        direct = tuple(sorted(names))
        return _Plan(direct=direct, offered=direct, catalog=None, listing="", deferrable_tokens=tokens,
                     threshold_tokens=threshold)
    if not all(n in registry for n in BRIDGE_NAMES):
        import hermes_nb.tools.search.tool  # noqa: F401  (registers the bridge tools, when discovery has not)
    checks: ChecksRun = {}
    catalog = make_catalog(e for e in deferrable if is_available(e, checks))
    direct = tuple(sorted(names - {e.name for e in deferrable}))
    return _Plan(direct=direct, offered=direct + _BRIDGE, catalog=catalog,
                 listing=render_listing(catalog, settings.listing_max_tokens), deferrable_tokens=tokens,
                 threshold_tokens=threshold)


def _estimate(entries: list[Any]) -> int:
    """Tokens of these tools' schemas (chars / 4), each entry measured once."""
    total = 0
    with _lock:  # two threads may plan at once (the table is shared)
        for entry in entries:
            known = _tokens.get(id(entry))
            if known is None or known[0] is not entry:
                known = _tokens[id(entry)] = (entry, len(json.dumps(entry.schema, ensure_ascii=False,
                                                                     default=str)) // _CHARS_PER_TOKEN + 1)
            total += known[1]
        if len(_tokens) > 4 * max(len(entries), 1024):  # entries replaced since: forget the old ones
            live = {id(e) for e in entries}
            for key in [k for k in _tokens if k not in live]:
                del _tokens[key]
    return total


def _short(description: str, most: int = 80) -> str:
    text = " ".join(description.split())
    end = text.find(". ")
    text = text[: end + 1] if 0 <= end < most else text
    return text if len(text) <= most else text[:most].rsplit(" ", 1)[0] + "…"


def render_listing(catalog: Catalog, max_tokens: int) -> str:
    """The deferred tools, one line each (name and a short description, else the name alone), within
    ``max_tokens``; past it, the count of those left out. Stable for a catalog (a cacheable prefix)."""
    budget = max_tokens * _CHARS_PER_TOKEN
    head = (f"Deferred tools ({len(catalog)}): not in your tool list, but available. Call tool_describe for "
            "a tool's parameters, then tool_call with its exact name; tool_search finds tools by keywords.")
    for line in (lambda e: f"- {e.name}: {_short(e.description)}" if e.description else f"- {e.name}",
                 lambda e: f"- {e.name}"):
        lines = [line(e) for e in catalog.entries]
        if len(head) + sum(len(x) + 1 for x in lines) <= budget:
            return "\n".join([head, *lines])
    out, used = [head], len(head)
    for i, e in enumerate(catalog.entries):
        rest = len(catalog.entries) - i
        more = f"- … and {rest:,} more: tool_search finds them"
        if used + len(e.name) + 3 + len(more) + 1 > budget:
            out.append(more)
            break
        out.append(f"- {e.name}")
        used += len(e.name) + 3
    return "\n".join(out)


def with_listing(messages: list[dict[str, Any]], listing: str) -> list[dict[str, Any]]:
    """The messages to send with ``listing`` in the system prompt (the history itself is not changed)."""
    if not listing:
        return messages
    if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
        return [{**messages[0], "content": f"{messages[0]['content']}\n\n{listing}"}, *messages[1:]]
    return [{"role": "system", "content": listing}, *messages]
