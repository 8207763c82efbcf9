"""Built-in bridge tools of tool search: ``tool_search``, ``tool_describe``, ``tool_call`` (Hermes's names
and argument shapes), toolset ``tool_search``.

They are offered only by ``tools.search.assembly`` when a run defers tools, never as a toolset of their
own. The handlers are ``async`` so they run in a copy of the batch's context, where the run's catalog
is (``tools.search.scope``); a sync handler would run in a pool thread that does not inherit it.
``tool_call`` is unwrapped at its batch's entry, so its handler only ever explains a refusal.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hermes_nb.tools.registry import registry, tool_error
from hermes_nb.tools.search import bridge
from hermes_nb.tools.search.scope import current_catalog

__all__: list[str] = []

_STRINGS = {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]}


async def _search(args: dict[str, Any], **_: Any) -> Any:
    from hermes_nb.tools.search.settings import load_settings

    catalog = current_catalog()
    if catalog is None:
        return tool_error(f"tool_search: {bridge.NO_RUN}")
    queries = bridge.string_list(args.get("queries"), "queries", bridge.MAX_QUERIES)
    if isinstance(queries, str):
        return tool_error(queries)
    settings = load_settings()
    limit = args.get("limit")
    limit = settings.search_default_limit if not isinstance(limit, int) or isinstance(limit, bool) else limit
    # in a thread: a catalog's first search builds its index, which must not hold up the shared loop
    limit = max(1, min(limit, settings.max_search_limit))
    return await asyncio.to_thread(bridge.search_answer, catalog, queries, limit)


async def _describe(args: dict[str, Any], **_: Any) -> Any:
    catalog = current_catalog()
    if catalog is None:
        return tool_error(f"tool_describe: {bridge.NO_RUN}")
    names = bridge.string_list(args.get("names"), "names", bridge.MAX_NAMES)
    if isinstance(names, str):
        return tool_error(names)
    return bridge.describe_answer(catalog, names)


async def _call(args: dict[str, Any], **_: Any) -> Any:
    return tool_error(bridge.call_refusal(args, current_catalog()))


registry.register(
    name="tool_search",
    toolset="tool_search",
    schema={
        "description": (
            "Search this run's deferred tools (named in the system prompt) by keywords: a service or object "
            "and an action, e.g. 'github create issue', 'convert timezone'. One query per capability; several "
            "run at once. 'select:NAME,NAME' picks exact names. Returns matching names with a short description; "
            "then tool_describe gives their parameters and tool_call runs one."),
        "parameters": {
            "type": "object",
            "properties": {
                "queries": {**_STRINGS, "description": "Keyword queries, one per capability (a single string "
                                                       "is one query)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Matches per query (default 5)."},
            },
            "required": ["queries"],
        },
    },
    handler=_search,
    is_async=True,
    emoji="🔎",
    read_only=True,
)

registry.register(
    name="tool_describe",
    toolset="tool_search",
    schema={
        "description": ("Full parameter schemas of deferred tools, by the exact names tool_search returned. "
                        "Ask for every schema you need in one call, before tool_call."),
        "parameters": {
            "type": "object",
            "properties": {"names": {**_STRINGS, "description": "Exact tool names."}},
            "required": ["names"],
        },
    },
    handler=_describe,
    is_async=True,
    emoji="📖",
    read_only=True,
)

registry.register(
    name="tool_call",
    toolset="tool_search",
    schema={
        "description": ("Run one deferred tool: 'calls' holds one {name, arguments} with the exact name and "
                        "arguments matching its schema (see tool_describe). Approval, rules and limits apply "
                        "as to any tool."),
        "parameters": {
            "type": "object",
            "properties": {
                "calls": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "Exact tool name."},
                            "arguments": {"type": "object", "description": "Arguments matching its schema."},
                        },
                        "required": ["name", "arguments"],
                    },
                    "description": "One invocation.",
                },
            },
            "required": ["calls"],
        },
    },
    handler=_call,
    is_async=True,
    emoji="🧰",
)
