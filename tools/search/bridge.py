"""What the bridge tools answer: ``tool_search`` (ranked names), ``tool_describe`` (schemas), and why a
``tool_call`` that reached its own handler did not run.

Every answer is built from the run's catalog only (``scope.current_catalog``): a name outside it is
"not found", whatever else the registry holds, so a run limited to some toolsets cannot learn of, or
reach, the others through the bridge.
"""

from __future__ import annotations

from typing import Any

from hermes_nb.tools.search import index
from hermes_nb.tools.search.catalog import Catalog, CatalogEntry
from hermes_nb.tools.search.scope import NO_RUN, not_deferred_hint, resolve

__all__ = ["NO_RUN", "call_refusal", "describe_answer", "search_answer", "string_list"]

MAX_QUERIES = 10
MAX_NAMES = 10
_DESCRIPTION_CHARS = 300


def string_list(value: Any, key: str, most: int) -> list[str] | str:
    """A list of non-empty strings (one string is a list of one), or what is wrong with it."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        return f"{key} must be an array of strings"
    out = list(dict.fromkeys(s.strip() for s in items if isinstance(s, str) and s.strip()))
    if not out:
        return f"{key} needs at least one non-empty string"
    if len(out) > most:
        return f"too many {key}: {len(out)}, at most {most} per call"
    return out


def _record(entry: CatalogEntry) -> dict[str, Any]:
    text = " ".join(entry.description.split())
    if len(text) > _DESCRIPTION_CHARS:
        text = text[:_DESCRIPTION_CHARS].rsplit(" ", 1)[0] + "…"
    return {"description": text, "toolset": entry.toolset, "required": list(entry.required)}


def _available(names: list[str]) -> list[str]:
    from hermes_nb.tools.registry import registry

    return [n for n in names if registry.availability(n).available]


def search_answer(catalog: Catalog, queries: list[str], limit: int) -> dict[str, Any]:
    """Hermes's shape: ``{"queries", "total_available", "results": [{"query", "matches"}], "tools": {...}}``."""
    results: list[dict[str, Any]] = []
    tools: dict[str, dict[str, Any]] = {}
    for query in queries:
        group: dict[str, Any] = {"query": query}
        if query.lower().startswith(index.SELECT_PREFIX):
            hits, missing = index.select(catalog, query[len(index.SELECT_PREFIX):])
            if missing:
                group["not_found"] = missing
        else:
            hits = index.search(catalog, query, limit)
        names = _available([h.name for h in hits])
        group["matches"] = names
        if not names:
            group["hint"] = ("no deferred tool matched: use a service or object word and an action "
                             "(the system prompt lists the deferred tools by name)")
        for hit in hits:
            if hit.name in names:
                tools.setdefault(hit.name, _record(hit))
        results.append(group)
    return {"queries": queries, "total_available": len(catalog), "results": results, "tools": tools}


def describe_answer(catalog: Catalog, names: list[str]) -> dict[str, Any]:
    """``{"tools": {name: {"description", "parameters"}}}`` plus ``not_found`` / ``unavailable``."""
    from hermes_nb.tools.registry import registry

    known = [n for n in names if n in catalog]
    definitions = {d["function"]["name"]: d["function"] for d in registry.get_definitions(known)}
    out: dict[str, Any] = {"tools": {}}
    for name in known:
        function = definitions.get(name)
        if function is None:
            out.setdefault("unavailable", {})[name] = registry.availability(name).reason or "unavailable"
            continue
        out["tools"][name] = {"description": function.get("description", ""),
                              "parameters": function.get("parameters") or {"type": "object", "properties": {}}}
    missing = [n for n in names if n not in catalog]
    if missing:
        out["not_found"] = missing
        out["hint"] = not_deferred_hint(catalog, missing)
    return out


def call_refusal(arguments: dict[str, Any], catalog: Catalog | None) -> str:
    """Why this ``tool_call`` was not unwrapped at its batch's entry (it never runs anything itself)."""
    resolved = resolve(arguments, catalog)
    if isinstance(resolved, str):
        return resolved
    # a valid call reaches this handler only when dispatched on its own, outside a batch
    return (f"tool_call did not run {resolved[0]!r}: the bridge runs a deferred tool only as part of an agent's "
            "tool batch")
