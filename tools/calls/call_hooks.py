"""Hooks around one tool call, run by the registry's dispatch: before (may block) and after (may replace).

Whoever needs to watch or veto calls (the plugins' ``pre_tool_call`` / ``post_tool_call`` /
``transform_tool_result``) installs a ``CallHook`` with ``registry.add_call_hook(hook)`` and keeps the
undo. With none installed, dispatch does not touch this module.

A hook sees the validated arguments and the call's context: the keyword arguments dispatch passes to
the handler (``task_id``, ``session_id``, ...) plus what ``call_context`` adds for the hooks only
(``tool_call_id``, ``turn_id``, ...), which never reach a handler.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from hermes_nb.tools.calls.results import execution_failed, serialize_result

if TYPE_CHECKING:
    from hermes_nb.tools.calls.entry import ToolEntry

__all__ = ["CallHook", "call_context", "call_fields", "hooked_entry"]

log = logging.getLogger(__name__)

#: Hook-only fields of the call being made on this thread / task (see ``call_context``).
_context: ContextVar[Mapping[str, Any]] = ContextVar("hermes_nb_call_context",
                                                     default=MappingProxyType({}))


class CallHook(Protocol):
    def before(self, entry: ToolEntry, args: dict[str, Any], context: Mapping[str, Any]) -> str | None:
        """``None`` lets the call run; a string is the result the model gets instead (a block)."""

    def after(self, entry: ToolEntry, args: dict[str, Any], context: Mapping[str, Any], result: str, *,
              duration_ms: int, blocked: bool) -> str:
        """The result the model gets (``result`` itself, or a replacement)."""


@contextlib.contextmanager
def call_context(**fields: Any) -> Iterator[None]:
    """Give the hooks of calls made inside this block extra fields (e.g. ``tool_call_id``)."""
    token = _context.set({**_context.get(), **fields})
    try:
        yield
    finally:
        _context.reset(token)


def call_fields() -> Mapping[str, Any]:
    """The ``call_context`` fields of the call running in this thread / task (e.g. ``tool_call_id``)."""
    return _context.get()


def hooked_entry(hooks: Sequence[CallHook], entry: ToolEntry, args: dict[str, Any],
                 kwargs: Mapping[str, Any]) -> ToolEntry | str:
    """Run the before-hooks; the block result, or ``entry`` with a handler that runs the after-hooks."""
    context = {**_context.get(), **kwargs}
    # Hermes's skip_pre_tool_call_hook: the caller already asked the before-hooks for this call
    for hook in () if context.get("skip_pre_tool_call_hook") else hooks:
        try:
            blocked = hook.before(entry, args, context)
        except Exception:  # a broken hook must not stop the call (Hermes: fail open, logged)
            log.warning("call hook %r failed before %s", hook, entry.name, exc_info=True)
            continue
        if blocked is not None:
            return _after(hooks, entry, args, context, blocked, time.perf_counter(), blocked=True)
    handler = entry.handler

    if entry.is_async:
        async def run_async(call_args: dict[str, Any], **kw: Any) -> str:
            start = time.perf_counter()
            try:
                result = handler(call_args, **kw)
                if inspect.isawaitable(result):
                    result = await result
                text = serialize_result(result)
            except (Exception, SystemExit) as exc:  # as dispatch does; the after-hooks see the error result
                text = execution_failed(exc)
            return _after(hooks, entry, call_args, context, text, start)

        return replace(entry, handler=run_async)

    def run(call_args: dict[str, Any], **kw: Any) -> Any:
        start = time.perf_counter()
        try:
            result = handler(call_args, **kw)
        except (Exception, SystemExit) as exc:
            return _after(hooks, entry, call_args, context, execution_failed(exc), start)
        if inspect.isawaitable(result):  # a sync wrapper around an async function: dispatch awaits this
            return _finish(result, hooks, entry, call_args, context, start)
        return _after(hooks, entry, call_args, context, serialize_result(result), start)

    return replace(entry, handler=run)


async def _finish(awaitable: Any, hooks: Sequence[CallHook], entry: ToolEntry, args: dict[str, Any],
                  context: Mapping[str, Any], start: float) -> str:
    try:
        text = serialize_result(await awaitable)
    except (Exception, SystemExit) as exc:
        text = execution_failed(exc)
    return _after(hooks, entry, args, context, text, start)


def _after(hooks: Sequence[CallHook], entry: ToolEntry, args: dict[str, Any], context: Mapping[str, Any],
           result: str, start: float, *, blocked: bool = False) -> str:
    duration_ms = max(0, int((time.perf_counter() - start) * 1000))
    for hook in hooks:
        try:
            replaced = hook.after(entry, args, context, result, duration_ms=duration_ms, blocked=blocked)
        except Exception:  # a broken hook must not lose the result
            log.warning("call hook %r failed after %s", hook, entry.name, exc_info=True)
            continue
        if isinstance(replaced, str):
            result = replaced
    return result

