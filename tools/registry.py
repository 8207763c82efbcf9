"""The tool registry: every source of tools ends in ``registry.register(...)``.

Import-compatible with Hermes Agent: a tool file that does ``from tools.registry import registry`` and
calls ``registry.register(name=..., toolset=..., schema=..., handler=...)`` loads unchanged.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from tools import async_bridge
from tools.errors import ToolArgumentError, ToolSchemaError

__all__ = ["Availability", "ToolEntry", "ToolRegistry", "Source", "registry", "tool_error"]

log = logging.getLogger(__name__)

Source = Literal["builtin", "notebook", "plugin", "mcp"]
SOURCES: tuple[str, ...] = ("builtin", "notebook", "plugin", "mcp")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolEntry:
    """One registered tool, the same record whatever its source."""

    name: str
    toolset: str
    schema: dict[str, Any]
    handler: Callable[..., Any]
    check_fn: Callable[[], Any] | None = None
    requires_env: tuple[str, ...] = ()
    is_async: bool = False
    description: str = ""
    emoji: str = ""
    max_result_size_chars: float | None = None
    # hermes_nb's own fields
    read_only: bool = False
    interactive: bool = False
    path_params: tuple[str, ...] = ()
    needs_approval: bool = False
    source: str = "builtin"
    origin: str | None = None
    disabled_reason: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    validator: Callable[[dict[str, Any]], dict[str, Any]] | None = field(default=None, repr=False, compare=False)

    def definition(self) -> dict[str, Any]:
        """The OpenAI function-calling definition."""
        return {"type": "function", "function": {**self.schema, "name": self.name}}


@dataclass(frozen=True, slots=True, kw_only=True)
class Availability:
    """Whether a tool can be offered to the model, and if not, why (never an env var's value)."""

    available: bool
    reason: str = ""
    missing_env: tuple[str, ...] = ()


def tool_error(message: str, **extra: Any) -> str:
    """The JSON error result the model receives."""
    return json.dumps({"error": message, **extra}, ensure_ascii=False)


_OK = Availability(available=True)


class ToolRegistry:
    """Tools by name, toolsets by name; thread-safe."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolEntry] = {}
        self._toolsets: dict[str, set[str]] = {}
        self._lock = threading.RLock()
        self._listeners: list[Callable[[str, str], None]] = []

    # -- registration -----------------------------------------------------------------------------

    def register(
        self,
        name: str,
        toolset: str,
        schema: dict[str, Any],
        handler: Callable[..., Any],
        check_fn: Callable[[], Any] | None = None,
        requires_env: Iterable[str] | str | None = None,
        is_async: bool = False,
        description: str = "",
        emoji: str = "",
        max_result_size_chars: float | None = None,
        *,
        read_only: bool = False,
        interactive: bool = False,
        path_params: Iterable[str] = (),
        needs_approval: bool = False,
        source: str | None = None,
        origin: str | None = None,
        override: bool = False,
        disabled_reason: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ToolEntry:
        """Register (or replace) a tool. Hermes's positional order; hermes_nb's additions keyword-only.

        Re-registering a name from the same toolset and source replaces it. Taking a name that belongs
        to another toolset or source needs ``override=True`` (and is logged).
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"tool name must be a non-empty string, got {name!r}")
        if not isinstance(toolset, str) or not toolset:
            raise ValueError(f"tool {name!r}: toolset must be a non-empty string, got {toolset!r}")
        if not callable(handler):
            raise ValueError(f"tool {name!r}: handler must be callable, got {type(handler).__name__}")
        if check_fn is not None and not callable(check_fn):
            raise ValueError(f"tool {name!r}: check_fn must be callable or None")
        schema = _checked_schema(name, schema, description)
        from tools.schema import compile_validator

        validator = compile_validator(schema["parameters"])
        if source is None:
            source = "builtin"
        if source not in SOURCES:
            raise ValueError(f"tool {name!r}: source must be one of {', '.join(SOURCES)}, got {source!r}")
        if origin is None:
            origin = sys._getframe(1).f_globals.get("__name__")
        if isinstance(requires_env, str):
            requires_env = (requires_env,)
        entry = ToolEntry(
            name=name,
            toolset=toolset,
            schema=schema,
            handler=handler,
            check_fn=check_fn,
            requires_env=tuple(requires_env or ()),
            is_async=bool(is_async) or inspect.iscoroutinefunction(handler),
            description=schema.get("description", ""),
            emoji=emoji or "",
            max_result_size_chars=max_result_size_chars,
            read_only=read_only,
            interactive=interactive,
            path_params=tuple(path_params),
            needs_approval=needs_approval,
            source=source,
            origin=origin,
            disabled_reason=disabled_reason,
            metadata=dict(metadata or {}),
            validator=validator,
        )
        with self._lock:
            old = self._tools.get(name)
            if old is not None and (old.toolset != toolset or old.source != source):
                if not override:
                    raise ValueError(
                        f"tool {name!r} already belongs to toolset {old.toolset!r} ({old.source}); "
                        f"pass override=True to take the name"
                    )
                log.warning(
                    "tool %r moved from toolset %r (%s) to %r (%s)", name, old.toolset, old.source, toolset, source
                )
            if old is not None:
                self._drop_from_toolset(old)
            self._tools[name] = entry
            self._toolsets.setdefault(toolset, set()).add(name)
        self._notify("register", name)
        return entry

    def deregister(self, name: str) -> ToolEntry | None:
        """Remove a tool; its toolset goes too when it empties. Returns the removed entry."""
        with self._lock:
            entry = self._tools.pop(name, None)
            if entry is not None:
                self._drop_from_toolset(entry)
        if entry is not None:
            self._notify("deregister", name)
        return entry

    def set_disabled(self, name: str, reason: str | None) -> ToolEntry | None:
        """Disable a tool with a reason (``None`` enables it again) without unregistering it."""
        with self._lock:
            entry = self._tools.get(name)
            if entry is None:
                return None
            entry = replace(entry, disabled_reason=reason)
            self._tools[name] = entry
        self._notify("update", name)
        return entry

    def _drop_from_toolset(self, entry: ToolEntry) -> None:
        members = self._toolsets.get(entry.toolset)
        if members is not None:
            members.discard(entry.name)
            if not members:
                del self._toolsets[entry.toolset]

    def add_listener(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        """Call ``callback(event, name)`` on register/deregister/update. Returns an undo."""
        with self._lock:
            self._listeners.append(callback)

        def undo() -> None:
            with self._lock:
                if callback in self._listeners:
                    self._listeners.remove(callback)

        return undo

    def _notify(self, event: str, name: str) -> None:
        for callback in list(self._listeners):
            try:
                callback(event, name)
            except Exception:  # a listener (display, picker) must never break registration
                log.exception("registry listener failed")

    # -- queries ----------------------------------------------------------------------------------

    def get_entry(self, name: str) -> ToolEntry | None:
        return self._tools.get(name)

    def get_all_tool_names(self) -> list[str]:
        return sorted(self._tools)

    def get_toolset_for_tool(self, name: str) -> str | None:
        entry = self._tools.get(name)
        return entry.toolset if entry else None

    def get_toolsets(self) -> dict[str, list[str]]:
        """Toolsets that exist in the registry, with their tool names."""
        with self._lock:
            return {ts: sorted(names) for ts, names in sorted(self._toolsets.items())}

    def get_tool_names_for_toolset(self, toolset: str) -> list[str]:
        with self._lock:
            return sorted(self._toolsets.get(toolset, ()))

    def entries(self) -> list[ToolEntry]:
        with self._lock:
            return [self._tools[n] for n in sorted(self._tools)]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    # -- availability -----------------------------------------------------------------------------

    def availability(self, name: str, _cache: dict[int, Availability] | None = None) -> Availability:
        """Can this tool be offered? Missing env var names, a false or raising check, or disabled."""
        entry = self._tools.get(name)
        if entry is None:
            return Availability(available=False, reason="unknown tool")
        return _availability(entry, _cache)

    def get_unavailable(self) -> dict[str, Availability]:
        """Every unavailable tool with the reason; each distinct check runs once."""
        cache: dict[int, Availability] = {}
        out = {}
        for entry in self.entries():
            status = _availability(entry, cache)
            if not status.available:
                out[entry.name] = status
        return out

    def get_definitions(self, tool_names: Iterable[str], quiet: bool = False) -> list[dict[str, Any]]:
        """OpenAI definitions for the available tools among ``tool_names``, sorted by name.

        Each distinct ``check_fn`` runs at most once per call; a raising check hides its tools.
        ``quiet`` is accepted for Hermes compatibility; reasons are in ``get_unavailable()``.
        """
        checks: dict[int, bool] = {}
        tools = self._tools
        environ = os.environ
        out = []
        for name in sorted(set(tool_names)):
            entry = tools.get(name)
            if entry is None or entry.disabled_reason:
                continue
            if entry.requires_env and not all(environ.get(v) for v in entry.requires_env):
                continue
            check = entry.check_fn
            if check is not None:
                ok = checks.get(id(check))
                if ok is None:
                    try:
                        ok = bool(check())
                    except Exception:  # a raising check never escapes; %tools doctor shows why
                        ok = False
                    checks[id(check)] = ok
                if not ok:
                    continue
            out.append({"type": "function", "function": {**entry.schema, "name": name}})
        return out

    # -- dispatch ---------------------------------------------------------------------------------

    def prepare(self, name: Any, args: Any) -> tuple[ToolEntry, dict[str, Any]] | str:
        """Look up and validate a call: ``(entry, args)``, or the JSON error result for the model."""
        entry = self._tools.get(name) if isinstance(name, str) else None
        if entry is None:
            return tool_error(f"Unknown tool: {name if isinstance(name, str) else repr(name)}")
        if entry.disabled_reason:
            return tool_error(f"Tool {entry.name} is disabled: {entry.disabled_reason}")
        parsed = parse_arguments(args)
        if isinstance(parsed, str):
            return tool_error(f"Invalid arguments for {entry.name}: {parsed}")
        try:
            validated = entry.validator(parsed) if entry.validator else parsed
        except ToolArgumentError as exc:
            return tool_error(f"Invalid arguments for {entry.name}: {exc}")
        return entry, validated

    def dispatch(self, name: str, args: Any, **kwargs: Any) -> str:
        """Run one tool call and return its result as a string. Never raises (except KeyboardInterrupt)."""
        prepared = self.prepare(name, args)
        if isinstance(prepared, str):
            return prepared
        entry, call_args = prepared
        if entry.needs_approval and (denied := _approve(entry, call_args)):
            return denied
        try:
            if entry.is_async:
                result = async_bridge.run_sync(lambda: entry.handler(call_args, **kwargs))
            else:
                result = entry.handler(call_args, **kwargs)
                if inspect.isawaitable(result):  # a sync wrapper around an async function
                    result = async_bridge.run_sync(_await(result))
        except Exception as exc:
            return tool_error(f"Tool execution failed: {type(exc).__name__}: {exc}")
        return serialize_result(result)

    async def dispatch_async(self, name: str, args: Any, **kwargs: Any) -> str:
        """The same contract as ``dispatch``; async handlers are awaited on the caller's loop."""
        import asyncio

        prepared = self.prepare(name, args)
        if isinstance(prepared, str):
            return prepared
        entry, call_args = prepared
        if entry.needs_approval and (denied := await asyncio.to_thread(_approve, entry, call_args)):
            return denied
        try:
            if entry.is_async:
                result = await entry.handler(call_args, **kwargs)
            else:
                result = await asyncio.to_thread(entry.handler, call_args, **kwargs)
                if inspect.isawaitable(result):
                    result = await result
        except Exception as exc:
            return tool_error(f"Tool execution failed: {type(exc).__name__}: {exc}")
        return serialize_result(result)


def _approve(entry: ToolEntry, args: dict[str, Any]) -> str | None:
    """Ask the person before a tool marked ``needs_approval`` runs; the error result if they say no."""
    from tools.approval import request_approval

    subject = f"{entry.name} {json.dumps(args, ensure_ascii=False, sort_keys=True)}"
    reason = entry.metadata.get("approval_reason") or f"{entry.name} is marked as needing approval"
    decision = request_approval(subject, f"tool:{entry.name}", str(reason))
    if decision["approved"]:
        return None
    return tool_error(decision["message"], blocked=True)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def parse_arguments(args: Any) -> dict[str, Any] | str:
    """The model's arguments as a dict, or a message saying what is wrong with them."""
    if args is None or args == "":
        return {}
    if isinstance(args, (str, bytes, bytearray)):
        try:
            args = json.loads(args)
        except (ValueError, RecursionError) as exc:
            return f"arguments are not valid JSON ({exc}); send a JSON object"
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, got {_json_type(args)}"
    return args


def serialize_result(result: Any) -> str:
    """A handler's return value as the string the model receives."""
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return tool_error(
            f"Tool returned a {type(result).__name__}, which is not JSON-serialisable ({exc}); "
            f"return a str or JSON data"
        )


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def _availability(entry: ToolEntry, cache: dict[int, Availability] | None) -> Availability:
    if entry.disabled_reason:
        return Availability(available=False, reason=f"disabled: {entry.disabled_reason}")
    if entry.requires_env:
        missing = tuple(v for v in entry.requires_env if not os.environ.get(v))
        if missing:
            return Availability(
                available=False,
                reason="missing environment variable" + ("s " if len(missing) > 1 else " ") + ", ".join(missing),
                missing_env=missing,
            )
    check = entry.check_fn
    if check is None:
        return _OK
    key = id(check)
    if cache is not None and key in cache:
        return cache[key]
    try:
        ok = bool(check())
        status = _OK if ok else Availability(available=False, reason=f"check {_check_name(check)} returned false")
    except Exception as exc:  # a raising check never escapes
        status = Availability(
            available=False, reason=f"check {_check_name(check)} raised {type(exc).__name__}: {exc}"
        )
    if cache is not None:
        cache[key] = status
    return status


def _check_name(check: Callable[..., Any]) -> str:
    name = getattr(check, "__qualname__", None) or getattr(check, "__name__", None) or repr(check)
    return name if name != "<lambda>" else "(lambda)"


_SCHEMA_TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}


def _checked_schema(name: str, schema: Any, description: str) -> dict[str, Any]:
    """A copy of the schema with ``name`` and ``description`` set; ToolSchemaError saying what is wrong."""
    if not isinstance(schema, dict):
        raise ToolSchemaError(f"tool {name!r}: schema must be a dict, got {type(schema).__name__}")
    params = schema.get("parameters")
    if params is None:
        raise ToolSchemaError(f"tool {name!r}: schema has no 'parameters' object")
    if not isinstance(params, dict):
        raise ToolSchemaError(f"tool {name!r}: schema 'parameters' must be an object, got {type(params).__name__}")
    if params.get("type", "object") != "object":
        raise ToolSchemaError(f"tool {name!r}: schema 'parameters' must have type 'object', got {params.get('type')!r}")
    props = params.get("properties", {})
    if not isinstance(props, dict):
        raise ToolSchemaError(f"tool {name!r}: 'parameters.properties' must be an object")
    for key, sub in props.items():
        if not isinstance(sub, dict):
            raise ToolSchemaError(f"tool {name!r}: property {key!r} must be a JSON schema object, got {sub!r}")
        t = sub.get("type")
        types = t if isinstance(t, list) else [t] if t is not None else []
        bad = [x for x in types if x not in _SCHEMA_TYPES]
        if bad:
            raise ToolSchemaError(f"tool {name!r}: property {key!r} has unknown type {bad[0]!r}")
    required = params.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ToolSchemaError(f"tool {name!r}: 'parameters.required' must be a list of names")
    desc = schema.get("description")
    if desc is not None and not isinstance(desc, str):
        raise ToolSchemaError(f"tool {name!r}: schema 'description' must be a string")
    out = dict(schema)
    params = dict(params)
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    out["parameters"] = params
    out["name"] = name
    out["description"] = description or desc or ""
    return out


#: The process-wide registry (Hermes's name).
registry = ToolRegistry()
