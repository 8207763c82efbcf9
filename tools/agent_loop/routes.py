"""Where the agent-loop tools go: the run that called them, else the notebook's default, else an error.

``todo``, ``memory``, ``session_search`` and ``delegate_task`` (and memory providers' tools, through
their own handlers) need the state of the run that calls them: its plan, its conversation, its display.
They are registered like any tool (schemas, toolsets, the gate, the budget all see them); their handler
is ``route``, which hands the call to the router of the current run. The agent installs its router for
its run's task with ``use_router`` (a context variable, so concurrent runs and sub-agents keep their own);
the extension installs a process-wide fallback with ``set_default_router`` for calls made outside any
run (``%tools call memory ...``). The core never imports the agent: this module is the seam.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from hermes_nb.tools.calls.results import tool_error
from hermes_nb.tools.interaction import CallbackStack

__all__ = ["Router", "current_router", "route", "set_default_router", "use_router"]

#: ``(tool name, validated arguments) -> result`` (a value, or an awaitable of one).
Router = Callable[[str, dict[str, Any]], "Awaitable[Any] | Any"]

_run: ContextVar[Router | None] = ContextVar("hermes_nb_run_router", default=None)
_default: CallbackStack[Router] = CallbackStack()


def use_router(router: Router | None) -> Callable[[], None]:
    """Route this context's calls (this run's task) to ``router``; returns the undo (same context)."""
    token = _run.set(router)
    return lambda: _run.reset(token)


def set_default_router(router: Router) -> Callable[[], None]:
    """Route calls made outside any run to ``router``; returns an idempotent undo."""
    return _default.push(router)


def current_router() -> Router | None:
    return _run.get() or _default.current()


async def route(name: str, args: dict[str, Any]) -> Any:
    """The result of ``name(args)`` from the current run's router (an error result when there is none)."""
    router = current_router()
    if router is None:
        return tool_error(f"{name} works inside an agent run (Agent.run or %%agent), where it has the run's state; "
                          "load the extension (%load_ext hermes_nb) to use it from a cell")
    result = router(name, args)
    return await result if inspect.isawaitable(result) else result


def routed(name: str) -> Callable[..., Awaitable[Any]]:
    """The registry handler of an agent-loop tool: ``route(name, args)``."""
    async def handler(args: dict[str, Any], **kwargs: Any) -> Any:
        return await route(name, args)

    handler.__name__ = handler.__qualname__ = f"route_{name}"
    return handler
