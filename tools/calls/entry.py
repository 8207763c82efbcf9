"""The records of the registry: ``ToolEntry`` (one per tool, whatever its source) and ``Availability``.

Also the checks made at the door: ``checked_schema`` (a bad schema is a ``ValueError`` saying what is
wrong) and ``availability`` (why a tool cannot be offered, never an env var's value).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hermes_nb.tools.errors import ToolSchemaError

log = logging.getLogger("hermes_nb.tools.registry")

__all__ = ["DEFAULT_EMOJI", "SOURCES", "Availability", "Source", "ToolEntry", "ChecksRun", "availability", "check_result", "checked_callables",
           "checked_examples", "checked_packages", "checked_schema", "checked_source", "is_available", "report_unenforced",
           "schema_overrides", "validator_for"]

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
    requires_packages: tuple[str, ...] = ()  # PEP 508 strings (tools.lazy_deps); missing ones make it unavailable
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
    # example calls `%tools test` runs (hermes_nb.tools.calls.examples.ToolExample records)
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
    missing_packages: tuple[str, ...] = ()


AVAILABLE = Availability(available=True)


#: One pass's memory of the checks it ran: by the check itself, so equal bound methods (a new one at each
#: attribute access) share a run, an unhashable check by identity. A value is True, False or what it raised.
ChecksRun = dict[Any, "bool | Exception"]
_UNRUN = object()


def check_result(check: Callable[[], Any], cache: ChecksRun | None = None) -> bool | Exception:
    """Run an availability check once per pass: its truth, or the exception it raised (never raised)."""
    key: Any = check
    if cache is not None:
        try:
            found = cache.get(key, _UNRUN)
        except TypeError:  # an unhashable callable object: remember it by identity
            key = id(check)
            found = cache.get(key, _UNRUN)
        if found is not _UNRUN:
            return found  # type: ignore[return-value]
    try:
        result: bool | Exception = bool(check())
    except Exception as exc:  # a raising check never escapes; availability() says what it raised
        result = exc
    if cache is not None:
        cache[key] = result
    return result


def is_available(entry: ToolEntry, cache: ChecksRun | None = None) -> bool:
    """``availability(entry, cache).available`` without building the reason (``get_definitions``' hot path)."""
    if entry.disabled_reason:
        return False
    if entry.requires_env and not all(os.environ.get(v) for v in entry.requires_env):
        return False
    if entry.requires_packages and _missing_packages(entry):
        return False
    return entry.check_fn is None or check_result(entry.check_fn, cache) is True


def availability(entry: ToolEntry, cache: ChecksRun | None = None) -> Availability:
    """Why ``entry`` cannot be offered: disabled, missing env var names, a false or raising check.

    The one availability computation (with ``is_available``, its reason-less view, which agrees by
    construction): ``get_definitions``, ``get_unavailable``, ``%tools doctor`` and the Hermes queries all
    ask here. ``cache`` lets one pass run each distinct check once; nothing is remembered across passes,
    so a check sees the world as it is at each call.
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
    lacking = _missing_packages(entry) if entry.requires_packages else ()
    if lacking:
        return Availability(available=False, missing_packages=lacking,
                            reason=f"missing packages: {', '.join(lacking)} (install: %tools install {entry.name})")
    check = entry.check_fn
    if check is None:
        return AVAILABLE
    result = check_result(check, cache)
    if result is True:
        return AVAILABLE
    if result is False:
        return Availability(available=False, reason=f"check {_check_name(check)} returned false")
    return Availability(available=False, reason=f"check {_check_name(check)} raised {_describe(result)}")


def _missing_packages(entry: ToolEntry) -> tuple[str, ...]:
    from hermes_nb.tools.lazy_deps import missing

    return missing(entry.requires_packages)


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


def checked_callables(name: Any, toolset: Any, handler: Any, **optional: Any) -> None:
    """The name, the toolset and the callables a registration needs: a ValueError saying which is wrong."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"tool name must be a non-empty string, got {name!r}")
    if not isinstance(toolset, str) or not toolset:
        raise ValueError(f"tool {name!r}: toolset must be a non-empty string, got {toolset!r}")
    if not callable(handler):
        raise ValueError(f"tool {name!r}: handler must be callable, got {type(handler).__name__}")
    for label, fn in optional.items():
        if fn is not None and not callable(fn):
            raise ValueError(f"tool {name!r}: {label} must be callable or None")


def validator_for(name: str, schema: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The compiled argument validator of a checked schema; keywords it cannot enforce are reported once."""
    from hermes_nb.tools.schema.validation import compile_validator

    try:
        validator = compile_validator(schema["parameters"])
    except ToolSchemaError as exc:
        raise ToolSchemaError(f"tool {name!r}: {exc}") from None
    report_unenforced(name, validator)
    return validator


def checked_source(name: str, source: str | None) -> str:
    if source is None:
        return "builtin"
    if source not in SOURCES:
        raise ValueError(f"tool {name!r}: source must be one of {', '.join(SOURCES)}, got {source!r}")
    return source


def checked_examples(name: str, examples: Iterable[Any]) -> tuple[Any, ...]:
    if not examples:  # the usual case: no import on the registration path
        return ()
    from hermes_nb.tools.calls.examples import as_examples

    try:
        return as_examples(examples)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"tool {name!r}: {exc}") from None




def report_unenforced(name: str, validator: Any) -> None:
    """Say once, at registration and in ``%tools doctor``, which schema keywords no check enforces."""
    from hermes_nb.tools.sources.load_report import clear_failures, record_failure

    unenforced = getattr(validator, "unenforced", ())
    if not unenforced:
        clear_failures("schema", name)
        return
    words = ", ".join(unenforced)
    log.warning("tool %r: schema keywords not enforced by the validator: %s", name, words)
    record_failure("schema", name, f"schema keywords not enforced (the model is not held to them): {words}")


def checked_packages(name: str, items: Any) -> tuple[str, ...]:
    """``requires_packages`` as requirement strings (``tools.lazy_deps``; packaging only when there are some)."""
    if not items:
        return ()
    from hermes_nb.tools.lazy_deps import checked_requirements

    return checked_requirements(name, items)


def schema_overrides(entry: ToolEntry) -> dict[str, Any]:
    """Hermes's ``dynamic_schema_overrides``: merged onto the schema; a failing one is ignored (logged)."""
    try:
        extra = entry.dynamic_schema_overrides() if entry.dynamic_schema_overrides else None
    except Exception:  # a broken override must not hide the tool; the static schema serves
        log.warning("dynamic_schema_overrides of tool %r failed; using its static schema", entry.name, exc_info=True)
        return {}
    if not isinstance(extra, dict):
        return {}
    return {k: v for k, v in extra.items() if k != "name"}
