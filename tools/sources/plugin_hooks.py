"""Plugins' lifecycle hooks (``ctx.register_hook(name, callback)``), the way Hermes's plugin manager runs them.

The tool-call hooks run around dispatch (a ``CallHook`` on the registry, installed while any callback
is registered, removed with the last one):

- ``pre_tool_call(tool_name, args, task_id, session_id, tool_call_id, ...)`` — observes; returning
  ``{"action": "block", "message": ...}`` answers the call with that error instead of running it;
  ``{"action": "approve", "message": ...}`` asks the person first (the notebook's approval prompt),
  and a refusal, a timeout or a failing prompt blocks (fail closed).
- ``post_tool_call(..., result, duration_ms, status, error_type, error_message)`` — observes.
- ``transform_tool_result(..., result, duration_ms, status, ...)`` — the first string returned
  replaces the result.

Every other hook name (Hermes's session, LLM, gateway hooks, or a name Hermes does not know) is
accepted and remembered, never called: a notebook has no such lifecycle. ``%tools doctor`` lists them.
Each callback is called with keyword arguments only and may take ``**kwargs``; one that raises is
logged and skipped, as in Hermes.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_nb.tools.calls.outcome import says_error
from hermes_nb.tools.calls.results import MultimodalResult, tool_error

if TYPE_CHECKING:
    from hermes_nb.tools.calls.entry import ToolEntry

__all__ = ["SUPPORTED_HOOKS", "HookCallback", "add_hook", "registered_hooks"]

log = logging.getLogger(__name__)

#: The hooks a notebook runs; the rest of Hermes's ``VALID_HOOKS`` are accepted and listed, not run.
SUPPORTED_HOOKS = frozenset({"pre_tool_call", "post_tool_call", "transform_tool_result"})
#: What Hermes passes as ``telemetry_schema_version`` to every hook.
OBSERVER_SCHEMA_VERSION = "hermes.observer.v1"


@dataclass(frozen=True, slots=True, kw_only=True)
class HookCallback:
    plugin: str
    hook: str
    callback: Callable[..., Any]


_lock = threading.Lock()
_callbacks: tuple[HookCallback, ...] = ()
_uninstall: Callable[[], None] | None = None


def registered_hooks() -> tuple[HookCallback, ...]:
    """Every registered callback, supported or not, in registration order."""
    return _callbacks


def add_hook(plugin: str, hook: str, callback: Callable[..., Any]) -> Callable[[], None]:
    """Register ``callback`` for ``hook`` on behalf of ``plugin``. Returns the undo."""
    global _callbacks
    if not callable(callback):
        raise TypeError(f"hook {hook!r}: callback must be callable, got {type(callback).__name__}")
    item = HookCallback(plugin=plugin, hook=hook, callback=callback)
    with _lock:
        _callbacks = (*_callbacks, item)
        _sync_install()

    def undo() -> None:
        global _callbacks
        with _lock:
            _callbacks = tuple(c for c in _callbacks if c is not item)
            _sync_install()

    return undo


def _sync_install() -> None:
    """The registry runs ``_HOOK`` exactly while a tool-call callback exists (called under ``_lock``)."""
    global _uninstall
    wanted = any(c.hook in SUPPORTED_HOOKS for c in _callbacks)
    if wanted and _uninstall is None:
        from hermes_nb.tools.registry import registry

        _uninstall = registry.add_call_hook(_HOOK)
    elif not wanted and _uninstall is not None:
        _uninstall()
        _uninstall = None


def _invoke(hook: str, **kwargs: Any) -> list[Any]:
    """Call every callback of ``hook``; the non-None answers. A raising callback is logged and skipped."""
    kwargs.setdefault("telemetry_schema_version", OBSERVER_SCHEMA_VERSION)
    answers = []
    for item in _callbacks:
        if item.hook != hook:
            continue
        try:
            answer = item.callback(**kwargs)
        except Exception as exc:  # boundary: a plugin's hook must never break a tool call
            log.warning("hook %s of plugin %s raised %s: %s", hook, item.plugin, type(exc).__name__, exc)
            continue
        if answer is not None:
            answers.append(answer)
    return answers


def _ids(context: Mapping[str, Any]) -> dict[str, str]:
    return {key: str(context.get(key) or "") for key in
            ("task_id", "session_id", "tool_call_id", "turn_id", "api_request_id")}


def _outcome(result: str) -> tuple[str, str | None, str | None]:
    """Hermes's ``(status, error_type, error_message)`` for an observed result."""
    if result.startswith("{"):
        try:
            value = json.loads(result)
        except ValueError:
            value = None
        if says_error(value):  # Hermes's error shape, as dispatch reads it (tools.calls.outcome)
            return "error", "tool_error", str(value["error"])
    return "ok", None, None


class _PluginCallHook:
    """The ``CallHook`` that runs the plugins' tool-call hooks."""

    def before(self, entry: ToolEntry, args: dict[str, Any], context: Mapping[str, Any]) -> str | None:
        answers = _invoke("pre_tool_call", tool_name=entry.name, args=args, middleware_trace=[], **_ids(context))
        for answer in answers:
            if not isinstance(answer, dict) or answer.get("action") not in ("block", "approve"):
                continue  # an observer's return value, or a malformed directive: ignored, as in Hermes
            raw = answer.get("message")
            message = raw if isinstance(raw, str) else ""
            if answer["action"] == "block":
                if message:
                    return tool_error(message)
                continue
            return _ask(entry, args, message, answer.get("rule_key"))
        return None

    def after(self, entry: ToolEntry, args: dict[str, Any], context: Mapping[str, Any], result: str, *,
              duration_ms: int, blocked: bool) -> str:
        ids = _ids(context)
        status, error_type, error_message = _outcome(result)
        if blocked:
            status, error_type = "blocked", "plugin_block"
        shown: Any = result
        if isinstance(result, MultimodalResult):  # hooks see Hermes's envelope, as Hermes hands it to them
            shown = {"_multimodal": True, "content": list(result.parts), "text_summary": str(result)}
        observed = {"tool_name": entry.name, "args": args, "result": shown, "duration_ms": duration_ms,
                    "status": status, "error_type": error_type, "error_message": error_message, **ids}
        _invoke("post_tool_call", middleware_trace=[], **observed)
        if blocked:
            return result
        for answer in _invoke("transform_tool_result", **observed):
            if isinstance(answer, str):
                return answer
        return result


def _ask(entry: ToolEntry, args: dict[str, Any], message: str, rule_key: Any) -> str | None:
    """A plugin's ``approve`` directive: the approval prompt decides; anything but a yes blocks."""
    try:
        from hermes_nb.tools.approval import request_approval

        subject = f"{entry.name} {json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)}"
        key = rule_key.strip() if isinstance(rule_key, str) and rule_key.strip() else entry.name
        decision = request_approval(subject, f"plugin:{key}", message or f"a plugin asks before {entry.name}")
    except Exception:  # fail closed: a broken prompt never lets a flagged call through
        log.warning("approval asked by a plugin hook for %s failed", entry.name, exc_info=True)
        return tool_error(f"BLOCKED: plugin approval gate failed for {entry.name}")
    if decision.get("approved"):
        return None
    return tool_error(str(decision.get("message") or f"BLOCKED: plugin approval required for {entry.name}"))


_HOOK = _PluginCallHook()
