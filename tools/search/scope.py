"""The run's catalog, and ``tool_call`` unwrapped to the real tool at a batch's entry.

The agent loop sets the catalog of each turn (``set_catalog``, a context variable of the run's task, so
concurrent runs keep their own). A batch calls ``unwrap_calls`` first: each ``tool_call`` naming a
deferred tool of this run becomes a call of that tool under the same call id, before planning, the
approval gate, rules, hooks, display and the transcript see it. What cannot be unwrapped (no catalog,
bad arguments, a tool outside the run's catalog or unavailable) stays a ``tool_call``, whose own handler
answers why and runs nothing: a tool is reached through the bridge only from inside the run's toolsets.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from contextvars import ContextVar, Token
from typing import Any

from hermes_nb.tools.search.catalog import BRIDGE_NAMES, TOOL_CALL, Catalog

__all__ = ["NO_RUN", "current_catalog", "not_deferred_hint", "parse_tool_call", "reset_catalog", "resolve",
           "set_catalog", "unwrap", "unwrap_calls", "use_catalog"]

NO_RUN = ("no deferred tools here: the bridge reaches only the deferred tools of the agent run it is "
          "called in (here no run, or a run that defers nothing)")

_catalog: ContextVar[Catalog | None] = ContextVar("hermes_nb_tool_search_catalog", default=None)


def current_catalog() -> Catalog | None:
    """The deferred tools of the run this code runs in (None outside a run, or when nothing is deferred)."""
    return _catalog.get()


def set_catalog(catalog: Catalog | None) -> Token[Catalog | None]:
    """Make ``catalog`` this context's (the loop sets it every turn); ``reset_catalog`` undoes it."""
    return _catalog.set(catalog)


def reset_catalog(token: Token[Catalog | None]) -> None:
    _catalog.reset(token)


@contextlib.contextmanager
def use_catalog(catalog: Catalog | None) -> Iterator[None]:
    """``catalog`` for the block (tests, and callers that run a batch of their own)."""
    token = _catalog.set(catalog)
    try:
        yield
    finally:
        _catalog.reset(token)


def parse_tool_call(arguments: Any) -> tuple[str, dict[str, Any]] | str:
    """``tool_call``'s arguments as ``(name, arguments)``, or what is wrong with them.

    Hermes's shape, ``{"calls": [{"name": ..., "arguments": {...}}]}`` with one entry, and its older
    ``{"name": ..., "arguments": ...}``; ``arguments`` may be a JSON string, empty means ``{}``.
    """
    if isinstance(arguments, (str, bytes, bytearray)):
        try:
            arguments = json.loads(arguments) if arguments else {}
        except ValueError as exc:
            return f"tool_call arguments are not valid JSON: {exc}"
    if not isinstance(arguments, dict):
        return "tool_call arguments must be an object with 'calls'"
    calls = arguments.get("calls")
    if calls is None and arguments.get("name") is not None:
        calls = [{"name": arguments.get("name"), "arguments": arguments.get("arguments")}]
    if isinstance(calls, dict):
        calls = [calls]
    if not isinstance(calls, list) or not calls:
        return "tool_call needs 'calls': an array of one {name, arguments}"
    if len(calls) > 1:
        return (f"tool_call runs one tool per call; you sent {len(calls)}. Send one tool_call per tool "
                "(several tool_call calls in one turn may run together)")
    call = calls[0]
    if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"].strip():
        return "tool_call calls[0] needs a 'name': the exact name tool_search returned"
    name, args = call["name"].strip(), call.get("arguments")
    if name in BRIDGE_NAMES:
        return f"tool_call cannot run {name!r}; call it directly"
    if args is None or (isinstance(args, str) and not args.strip()):
        args = {}
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError as exc:
            return f"tool_call calls[0].arguments is not valid JSON: {exc}"
    if not isinstance(args, dict):
        return "tool_call calls[0].arguments must be an object"
    return name, args


def resolve(arguments: Any, catalog: Catalog | None) -> tuple[str, dict[str, Any]] | str:
    """The real tool and arguments a ``tool_call`` asks for, when it is a deferred tool of ``catalog`` and
    available now; else why not (what its handler answers). The one decision: ``unwrap`` at a batch's
    entry and the handler's refusal both read it."""
    if catalog is None:
        return f"tool_call did not run: {NO_RUN}"
    if isinstance(arguments, (str, bytes, bytearray)) and len(arguments) > 65_536:
        from hermes_nb.tools.budget import argument_limit

        if len(arguments) > argument_limit():  # refused unparsed, as any call's oversized arguments are
            return "tool_call arguments are too large"  # (the handler never sees these: its prepare refuses them)
    parsed = parse_tool_call(arguments)
    if isinstance(parsed, str):
        return parsed
    name = parsed[0]
    if name not in catalog:
        return f"tool_call did not run {name!r}: {not_deferred_hint(catalog, [name])}"
    from hermes_nb.tools.registry import registry

    status = registry.availability(name)
    if not status.available:
        return f"tool_call did not run {name!r}: it is unavailable ({status.reason or 'unavailable'})"
    return parsed


def unwrap(arguments: Any, catalog: Catalog | None) -> tuple[str, dict[str, Any]] | None:
    """``resolve``'s tool and arguments, or None when it cannot be unwrapped (its handler then says why)."""
    resolved = resolve(arguments, catalog)
    return None if isinstance(resolved, str) else resolved


def not_deferred_hint(catalog: Catalog, missing: list[str]) -> str:
    """What to say of names that are not deferred tools of ``catalog`` (a bare MCP name: its full one)."""
    # a deferred MCP tool asked for by its bare name (``get_current_time`` for ``mcp__time__get_current_time``)
    guesses = sorted({c.name for m in missing for c in catalog.entries if c.name.endswith(f"_{m}")})
    if guesses:
        return f"not deferred tools of this run; did you mean {', '.join(guesses)}?"
    return ("not deferred tools of this run: use the exact names tool_search returns "
            "(a tool in your own tool list is called directly)")


def _read(call: Any) -> tuple[Any, Any, Any]:
    """``(id, name, arguments)`` of an openai tool call object or its dict form."""
    if isinstance(call, dict):
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        return call.get("id"), function.get("name", call.get("name")), function.get("arguments")
    function = getattr(call, "function", None)
    return getattr(call, "id", None), getattr(function, "name", None), getattr(function, "arguments", None)


def unwrap_calls(tool_calls: Sequence[Any]) -> Sequence[Any]:
    """The batch with each unwrappable ``tool_call`` replaced by a call of the real tool (same id), in
    the current run's catalog; the same sequence when there is nothing to unwrap."""
    catalog = _catalog.get()
    if catalog is None:
        return tool_calls
    out: list[Any] | None = None
    for i, call in enumerate(tool_calls):
        call_id, name, arguments = _read(call)
        if name != TOOL_CALL:
            continue
        real = unwrap(arguments, catalog)
        if real is None:
            continue
        if out is None:
            out = list(tool_calls)
        out[i] = {"id": call_id, "type": "function",
                  "function": {"name": real[0], "arguments": json.dumps(real[1], ensure_ascii=False)}}
    return tool_calls if out is None else out
