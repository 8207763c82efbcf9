"""Calling one prepared tool's handler: sync or async, from a thread or from a loop, never raising.

The registry's ``call`` / ``acall`` / ``dispatch`` use these; each returns ``Settled``
(``(content, is_error)``, see ``tools.calls.outcome``). No policy here: lookup, validation and the approval
gate happen before (``ToolRegistry.prepare``, ``tools.safety.approvals.gate``).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hermes_nb.tools import async_bridge
from hermes_nb.tools.calls.call_hooks import CallHook, hooked_entry
from hermes_nb.tools.calls.outcome import Settled
from hermes_nb.tools.calls.results import execution_failed, settle_result

if TYPE_CHECKING:
    from hermes_nb.tools.calls.entry import ToolEntry

__all__ = ["acall_handler", "call_handler", "failed", "settle_returned", "settled", "settled_async"]


def failed(exc: BaseException) -> Settled:
    return execution_failed(exc), True


def call_handler(hooks: Sequence[CallHook], entry: ToolEntry, call_args: dict[str, Any],
                 kwargs: Mapping[str, Any]) -> Settled:
    """Run the handler here (an async one on the background loop); hooks around it when installed."""
    if hooks:
        hooked = hooked_entry(hooks, entry, call_args, kwargs)
        if isinstance(hooked, str):
            return hooked, True  # a before-hook blocked the call
        entry = hooked
    try:
        if entry.is_async:  # the handler itself runs on the background loop (see async_bridge)
            return settle_result(async_bridge.run_sync(_call(entry.handler, call_args, kwargs)))
        result = entry.handler(call_args, **kwargs) if kwargs else entry.handler(call_args)
    except (Exception, SystemExit) as exc:  # sys.exit() in a tool must not end the kernel or the run
        return _raised(exc)
    if type(result) is str and result.isascii() and not result.startswith("{"):
        return result, False  # plain text needs no settling: the commonest result, answered here
    return settle_returned(result)


def settle_returned(result: Any) -> Settled:
    """What a sync handler returned, settled: awaited first when it is awaitable (a sync wrapper around an
    async function; on the background loop)."""
    if type(result) is not str and inspect.isawaitable(result):
        try:
            result = async_bridge.run_sync(_await(result))
        except (Exception, SystemExit) as exc:
            return _raised(exc)
    return settle_result(result)


async def acall_handler(hooks: Sequence[CallHook], entry: ToolEntry, call_args: dict[str, Any],
                        kwargs: Mapping[str, Any]) -> Settled:
    """``call_handler`` for the caller's loop: async handlers awaited here, sync ones in a thread."""
    if hooks:  # hooks are plugin code that may block (a prompt): off the loop
        hooked = await asyncio.to_thread(hooked_entry, hooks, entry, call_args, kwargs)
        if isinstance(hooked, str):
            return hooked, True
        entry = hooked
    try:
        if entry.is_async:
            result = await _call(entry.handler, call_args, kwargs)
        else:
            result = await asyncio.to_thread(_caught, entry.handler, call_args, kwargs)
            if isinstance(result, _Raised):  # returned, not raised: the task would throw a GeneratorExit
                return failed(result.exc)  # into every frame at once (PEP 380), past our handlers
            if inspect.isawaitable(result):
                result = await _await(result)
    except (Exception, SystemExit) as exc:
        return _raised(exc)
    return settle_result(result)


def _raised(exc: Exception | SystemExit) -> Settled:
    """What a handler raised, as an error result; a ``KeyboardInterrupt`` it carried out of the background
    loop (``_HandlerExit``) goes on up instead (the person's ■)."""
    if isinstance(exc, _HandlerExit):
        if isinstance(exc.exc, KeyboardInterrupt):
            raise exc.exc from None
        return failed(exc.exc)
    return failed(exc)


def settled(fn: Callable[..., Settled], *args: Any) -> Settled:
    """``fn(*args)``, with anything it raises but KeyboardInterrupt (GeneratorExit, custom BaseExceptions,
    a raising validator) turned into an error result: the boundary where dispatch never raises."""
    try:
        return fn(*args)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        return failed(exc)


async def settled_async(awaitable: Any) -> Settled:
    """``settled`` for a coroutine; cancelling the awaiting task still cancels (asyncio's contract)."""
    try:
        return await awaitable  # type: ignore[no-any-return]
    except KeyboardInterrupt:
        raise
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        return failed(exc)
    except BaseException as exc:
        return failed(exc)


class _HandlerExit(Exception):
    """A handler's ``SystemExit`` or ``KeyboardInterrupt``, carried as an ordinary exception.

    asyncio re-raises both out of a task into the event loop, which would stop the shared
    background loop; inside the coroutine it becomes this, and dispatch reports the original.
    """

    def __init__(self, exc: SystemExit | KeyboardInterrupt) -> None:
        super().__init__(exc)
        self.exc = exc


class _Raised:
    """What a sync handler raised in a worker thread, carried back as a value."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _caught(handler: Callable[..., Any], args: dict[str, Any], kwargs: Mapping[str, Any]) -> Any:
    """Run a sync handler in a worker thread; whatever it raises comes back as ``_Raised`` (a worker
    thread's KeyboardInterrupt is the handler's own doing, not the person's ■, which reaches the main thread)."""
    try:
        return handler(args, **kwargs)
    except BaseException as exc:
        return _Raised(exc)


async def _call(handler: Callable[..., Any], args: dict[str, Any], kwargs: Mapping[str, Any]) -> Any:
    """Call an async handler; a handler flagged ``is_async`` that returns a plain value works too."""
    try:
        result = handler(args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
    except (SystemExit, KeyboardInterrupt) as exc:  # asyncio would re-raise these out of the loop itself
        raise _HandlerExit(exc) from None
    return result


async def _await(awaitable: Any) -> Any:
    try:
        return await awaitable
    except (SystemExit, KeyboardInterrupt) as exc:
        raise _HandlerExit(exc) from None
