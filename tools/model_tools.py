"""What the model sees and how its calls are answered (Hermes's ``model_tools`` names).

Importing this module arms built-in tool discovery: it runs once, on the registry's first use
(``tools.sources.first_use``), so the import itself stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from hermes_nb.tools.calls.call_hooks import call_context
from hermes_nb.tools.registry import registry
from hermes_nb.tools.sources.first_use import (  # discovery on first use
    arm,
    defer_until_used,
    ensure_discovered,
)
from hermes_nb.tools.toolsets import resolve_multiple_toolsets

if TYPE_CHECKING:
    from hermes_nb.tools.search.assembly import Assembly

__all__ = [
    "assemble_tool_definitions", "check_tool_availability", "check_toolset_requirements",
    "defer_until_used", "ensure_discovered", "get_all_tool_names", "get_available_toolsets", "get_tool_definitions",
    "get_toolset_for_tool", "handle_function_call",
]

def get_tool_definitions(
    enabled_toolsets: Iterable[str] | None = None,
    disabled_toolsets: Iterable[str] | None = None,
    quiet_mode: bool = False,
    skip_tool_search_assembly: bool = False,
) -> list[dict[str, Any]]:
    """OpenAI tool definitions for the enabled toolsets (all when None) minus the disabled ones.

    Every tool goes direct: the tool-search bridge (``tool_search`` / ``tool_describe`` / ``tool_call``)
    is never among them, because it answers only inside a run whose tools are deferred; the agent loop
    asks ``assemble_tool_definitions`` instead. ``skip_tool_search_assembly`` is accepted for Hermes callers.

    An unknown toolset name raises ``UnknownToolsetError`` listing the known ones: a typo must not
    silently give the model zero tools.
    """
    ensure_discovered()
    if enabled_toolsets is None:
        names = set(registry.get_all_tool_names())
    else:
        names = set(resolve_multiple_toolsets(_names(enabled_toolsets)))
    if disabled_toolsets:
        names -= set(resolve_multiple_toolsets(_names(disabled_toolsets)))
    from hermes_nb.tools.search.catalog import BRIDGE_NAMES

    return registry.get_definitions(names - BRIDGE_NAMES, quiet=quiet_mode)


def assemble_tool_definitions(
    enabled_toolsets: Iterable[str] | None = None,
    disabled_toolsets: Iterable[str] | None = None,
    *,
    model: str | None = None,
) -> Assembly:
    """A turn's definitions with tool search (``tools.search``): the direct tools, and in place of the
    deferred ones the bridge tools, with the catalog the run's batch needs and the system prompt's listing.
    With nothing deferred, ``.definitions`` is what ``get_tool_definitions`` returns."""
    from hermes_nb.tools.search.assembly import assemble

    ensure_discovered()
    return assemble(None if enabled_toolsets is None else _names(enabled_toolsets),
                    None if disabled_toolsets is None else _names(disabled_toolsets), model=model)


def _names(toolsets: Iterable[str]) -> list[str]:
    """One name given as a plain string means that toolset, not its letters."""
    return [toolsets] if isinstance(toolsets, str) else list(toolsets)


def handle_function_call(
    function_name: str,
    function_args: Any,
    task_id: str | None = None,
    tool_call_id: str | None = None,
    session_id: str | None = None,
    turn_id: str | None = None,
    api_request_id: str | None = None,
    user_task: str | None = None,
    enabled_tools: list[str] | None = None,
    skip_pre_tool_call_hook: bool = False,
    **kw: Any,
) -> str | dict[str, Any]:
    """Dispatch one model tool call; never raises. Hermes's signature and result: a string, or the
    multimodal envelope ``{"_multimodal": True, "content": [...], "text_summary": ...}`` as a dict.

    ``task_id``, ``session_id`` and ``user_task`` reach the handler as keyword arguments, ``None`` when
    the caller gave none (as Hermes passes them), to every handler that accepts them (a ``**kw`` or a
    parameter of that name); ``tool_call_id``, ``turn_id`` and ``api_request_id`` reach only the plugins'
    tool-call hooks; ``skip_pre_tool_call_hook`` says the caller already asked the ``pre_tool_call`` hooks.
    ``enabled_tools`` is accepted for Hermes callers (only its ``execute_code`` reads it).
    """
    takes = _context_keywords(function_name)
    for key, value in (("task_id", task_id), ("session_id", session_id), ("user_task", user_task)):
        if value is not None:
            kw[key] = value
        elif key in takes:
            kw.setdefault(key, None)
    hook_fields = {"tool_call_id": tool_call_id or "", "turn_id": turn_id or "",
                   "api_request_id": api_request_id or "", "skip_pre_tool_call_hook": skip_pre_tool_call_hook}
    with call_context(**hook_fields):
        return registry.dispatch(function_name, function_args, **kw)  # the envelope comes back as the dict


def coerce_tool_args(tool_name: str, args: Any) -> Any:
    """Hermes's helper: ``args`` with strings turned into the numbers / booleans / arrays the schema wants.

    The tool's own validator does it (the same coercion dispatch applies); a call that does not validate
    comes back unchanged, as Hermes keeps the original values when coercion fails."""
    from hermes_nb.tools.errors import ToolArgumentError

    entry = registry.get_entry(tool_name) if isinstance(tool_name, str) else None
    if entry is None or entry.validator is None or not isinstance(args, dict) or not args:
        return args
    try:
        return entry.validator(dict(args))
    except ToolArgumentError:
        return args


_CONTEXT_KEYS = frozenset({"task_id", "session_id", "user_task"})
_takes_cache: dict[Any, frozenset[str]] = {}


def _context_keywords(name: Any) -> frozenset[str]:
    """Which of Hermes's context keywords the tool's handler accepts (cached per handler)."""
    entry = registry.get_entry(name) if isinstance(name, str) else None
    if entry is None:
        return frozenset()
    handler = entry.handler
    try:
        return _takes_cache[handler]
    except (KeyError, TypeError):
        pass
    import inspect

    try:
        params = list(inspect.signature(handler).parameters.values())[1:]  # the first is the arguments dict
    except (TypeError, ValueError):
        return frozenset()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        takes = _CONTEXT_KEYS
    else:
        takes = frozenset(p.name for p in params if p.name in _CONTEXT_KEYS and p.kind is not p.VAR_POSITIONAL)
    try:
        if len(_takes_cache) > 4096:
            _takes_cache.clear()
        _takes_cache[handler] = takes
    except TypeError:  # an unhashable callable: asked again next time
        pass
    return takes


def check_tool_availability(quiet: bool = False) -> tuple[list[str], list[dict[str, Any]]]:
    """Hermes's shape: ``(available toolsets, [{"name", "env_vars", "tools"} per unavailable toolset])``.

    Per tool, with the reason: ``registry.get_unavailable()`` (what ``%tools doctor`` shows).
    """
    ensure_discovered()
    return registry.check_tool_availability(quiet=quiet)


# Hermes's module-level names, answered from the live registry.


def get_all_tool_names() -> list[str]:
    return registry.get_all_tool_names()


def get_toolset_for_tool(name: str) -> str | None:
    return registry.get_toolset_for_tool(name)


def get_available_toolsets() -> dict[str, dict[str, Any]]:
    return registry.get_available_toolsets()


def check_toolset_requirements() -> dict[str, bool]:
    return registry.check_toolset_requirements()


def __getattr__(name: str) -> Any:
    # Hermes builds these once after discovery; here they are computed on access, so tools that
    # arrive later (notebook cells, MCP servers) are in them too.
    if name == "TOOL_TO_TOOLSET_MAP":
        return registry.get_tool_to_toolset_map()
    if name == "TOOLSET_REQUIREMENTS":
        return registry.get_toolset_requirements()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


arm()  # built-in discovery waits for the registry's first use
