"""The records of the registry: ``ToolEntry`` (one per tool, whatever its source) and ``Availability``.

Also the checks made at the door: ``checked_schema`` (a bad schema is a ``ValueError`` saying what is
wrong) and ``availability`` (why a tool cannot be offered, never an env var's value).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hermes_nb.tools.errors import ToolSchemaError

__all__ = ["DEFAULT_EMOJI", "SOURCES", "Availability", "Source", "ToolEntry", "availability", "checked_schema"]

Source = Literal["builtin", "notebook", "plugin", "mcp", "hermes"]
#: "hermes": a tool of an installed hermes-agent, called through Hermes's own handle_function_call.
SOURCES: tuple[str, ...] = ("builtin", "notebook", "plugin", "mcp", "hermes")
#: The emoji of a tool registered without one (Hermes's ``get_emoji`` default), wherever a tool is shown.
DEFAULT_EMOJI = "⚡"


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
    # Hermes: a zero-argument callable whose dict is merged onto the schema at every get_definitions()
    dynamic_schema_overrides: Callable[[], Any] | None = field(default=None, repr=False, compare=False)
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
    # example calls `%tools test` runs (hermes_nb.tools.examples.ToolExample records)
    examples: tuple[Any, ...] = field(default=(), repr=False, compare=False)

    def definition(self) -> dict[str, Any]:
        """The OpenAI function-calling definition (static schema; see ToolRegistry.get_definitions)."""
        return {"type": "function", "function": {**self.schema, "name": self.name}}


@dataclass(frozen=True, slots=True, kw_only=True)
class Availability:
    """Whether a tool can be offered to the model, and if not, why (never an env var's value)."""

    available: bool
    reason: str = ""
    missing_env: tuple[str, ...] = ()


AVAILABLE = Availability(available=True)


def availability(entry: ToolEntry, cache: dict[int, Availability] | None = None) -> Availability:
    """Why ``entry`` cannot be offered: disabled, missing env var names, a false or raising check.

    ``cache`` (keyed by the check's id) lets one pass run each distinct check once.
    """
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
        return AVAILABLE
    key = id(check)
    if cache is not None and key in cache:
        return cache[key]
    try:
        status = AVAILABLE if check() else Availability(
            available=False, reason=f"check {_check_name(check)} returned false")
    except Exception as exc:  # a raising check never escapes; the reason says what it raised
        status = Availability(available=False, reason=f"check {_check_name(check)} raised {_describe(exc)}")
    if cache is not None:
        cache[key] = status
    return status


def _check_name(check: Callable[..., Any]) -> str:
    name = getattr(check, "__qualname__", None) or getattr(check, "__name__", None) or repr(check)
    return name if name != "<lambda>" else "(lambda)"


def _describe(exc: BaseException) -> str:
    """``TypeName: message``, even when the exception's own ``__str__`` is broken."""
    try:
        text = str(exc)
    except Exception:  # a user-defined exception whose __str__ raises must not escape
        text = f"<unprintable {type(exc).__name__}>"
    return f"{type(exc).__name__}: {text}"


_SCHEMA_TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}


def checked_schema(name: str, schema: Any, description: str) -> dict[str, Any]:
    """A copy of the schema with ``name`` and ``description`` set; ToolSchemaError saying what is wrong."""
    if not isinstance(schema, dict):
        raise ToolSchemaError(f"tool {name!r}: schema must be a dict, got {type(schema).__name__}")
    params = schema.get("parameters")
    if params is None:  # Hermes accepts a schema without parameters: a tool that takes no arguments
        params = {}
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
