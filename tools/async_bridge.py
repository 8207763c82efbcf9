"""The one background event loop, and the ways across into it.

Cells run on the kernel's asyncio loop, where ``asyncio.run`` is refused, and anyio (the MCP SDK)
needs a session to live in one task. So long-lived async work (MCP sessions, the async OpenAI client,
async handlers called from sync code) runs on a single process-wide loop in a daemon thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from hermes_nb.tools import interaction
from hermes_nb.tools.errors import BridgeError

__all__ = ["get_loop", "in_loop_thread", "run_async", "run_sync", "submit"]

T = TypeVar("T")

#: How long a sync waiter sleeps between checks, so a kernel interrupt is seen promptly.
WAIT_SLICE = 0.05

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def get_loop() -> asyncio.AbstractEventLoop:
    """The background loop, started on first use and kept for the life of the process."""
    global _loop, _thread
    loop = _loop
    if loop is not None and not loop.is_closed():
        return loop
    with _lock:
        if _loop is None or _loop.is_closed():
            ready = threading.Event()
            new_loop = asyncio.new_event_loop()

            def serve() -> None:
                asyncio.set_event_loop(new_loop)
                new_loop.call_soon(ready.set)
                new_loop.run_forever()

            _thread = threading.Thread(target=serve, name="hermes-nb-loop", daemon=True)
            _thread.start()
            ready.wait()
            _loop = new_loop
        return _loop


def in_loop_thread() -> bool:
    """True when called from the background loop's own thread."""
    return _thread is not None and threading.current_thread() is _thread


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Schedule ``coro`` on the background loop; returns a thread-safe future.

    Cancelling the future (from any thread, at any moment — even before the task exists) cancels
    the task; an interrupt that lands between scheduling and waiting therefore loses nothing.
    """
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    _schedule(coro, future)
    return future


def _schedule(coro: Coroutine[Any, Any, T], future: concurrent.futures.Future[T]) -> None:
    loop = get_loop()

    def start() -> None:
        if future.cancelled():
            coro.close()
            return
        task = loop.create_task(coro)

        def cancel_task(f: concurrent.futures.Future[T]) -> None:
            if f.cancelled():
                loop.call_soon_threadsafe(task.cancel)

        def copy_outcome(t: asyncio.Task[T]) -> None:
            try:
                if t.cancelled():
                    future.cancel()
                elif t.exception() is not None:
                    future.set_exception(t.exception())
                else:
                    future.set_result(t.result())
            except concurrent.futures.InvalidStateError:  # cancelled by the waiter meanwhile
                pass

        future.add_done_callback(cancel_task)
        task.add_done_callback(copy_outcome)

    loop.call_soon_threadsafe(start)


def run_sync(
    coro: Coroutine[Any, Any, T] | Callable[[], Awaitable[T]],
    timeout: float | None = None,
) -> T:
    """Run a coroutine on the background loop from sync code and wait for its result.

    Waits in short slices so ``KeyboardInterrupt`` (a kernel interrupt) is raised here promptly; the
    background task is then cancelled. ``TimeoutError`` after ``timeout`` seconds, also cancelling.
    Called from the loop's own thread it would deadlock, so it raises ``BridgeError`` instead.
    """
    if in_loop_thread():
        if asyncio.iscoroutine(coro):
            coro.close()
        raise BridgeError(
            "run_sync() was called from the hermes_nb background loop itself; await the coroutine instead"
        )
    if not asyncio.iscoroutine(coro):
        coro = _as_coroutine(coro)
    # The future exists before the task is scheduled, so an interrupt at any point can cancel it.
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    deadline = None if timeout is None else get_loop().time() + timeout
    try:
        # Waiting is declared before the task exists: a question it asks at once must find us waiting.
        with interaction.main_thread_waiting():
            _schedule(coro, future)
            while True:
                try:
                    return future.result(timeout=WAIT_SLICE)
                except concurrent.futures.TimeoutError:
                    interaction.service()  # e.g. an approval prompt asked from a worker thread
                    if deadline is not None and get_loop().time() >= deadline:
                        raise TimeoutError(f"timed out after {timeout:g} s") from None
    except BaseException:
        future.cancel()
        raise


async def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` on the background loop from any other loop (or directly when already on it)."""
    if in_loop_thread():
        return await coro
    future = submit(coro)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        future.cancel()
        raise


async def _as_coroutine(factory: Callable[[], Awaitable[T]]) -> T:
    return await factory()
