"""The widget message pump of a blocked cell: how a click reaches a cell that is still running.

A prompt blocks the kernel's main thread until a click arrives, and the click is a comm message on the
shell channel, which that blocked thread would normally read. This module reads it anyway, on each
ipykernel: 7 through the in-process socket that carries shell messages to the main thread, 6 through
``jupyter_ui_poll``. Every other request that arrives meanwhile (Run All's next cells) is held back and
handed to the kernel afterwards, in arrival order. It also keeps a prompt's output under the prompt's
cell, and makes ■ raise in the blocked wait.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

__all__ = ["as_parent", "clicks_deliverable", "current_parent", "interrupt_raises_here", "ui_events"]

log = logging.getLogger(__name__)

_COMM_MESSAGES = ("comm_open", "comm_msg", "comm_close")


def _main_shell_socket(kernel: Any) -> Any:
    """ipykernel 7's in-process socket that carries shell messages to the main thread, or None."""
    manager = getattr(getattr(kernel, "shell_channel_thread", None), "manager", None)
    socket = getattr(getattr(manager, "_shell_channel_to_main", None), "to_socket", None)
    return socket if socket is not None and hasattr(kernel, "dispatch_shell") else None


def clicks_deliverable(kernel: Any) -> bool:
    """Whether a click can reach a blocked cell in ``kernel``: ipykernel 7 through its main-thread socket,
    ipykernel 6 through ``do_one_iteration`` (``jupyter_ui_poll``)."""
    return _main_shell_socket(kernel) is not None or hasattr(kernel, "do_one_iteration")


def ui_events(kernel: Any) -> AbstractContextManager[Callable[[int], Any]]:
    """``with ui_events(kernel) as poll: poll(10)`` handles up to 10 waiting widget messages now."""
    socket = _main_shell_socket(kernel)
    if socket is not None:
        return _kernel7_events(kernel, socket)
    from jupyter_ui_poll import ui_events as poll_ui_events  # lazy: it touches the kernel when used

    return poll_ui_events()


@contextmanager
def _kernel7_events(kernel: Any, socket: Any) -> Iterator[Callable[[int], None]]:
    """Pump widget messages in a blocked sync cell on ipykernel 7.

    ipykernel 7 has no ``do_one_iteration``, so ``jupyter_ui_poll`` cannot deliver clicks there (measured
    with ipykernel 7.4). Shell messages reach the main thread through an in-process socket; read it
    directly, handle comm messages now (as ipykernel itself does for a running async cell), and hand
    everything else back to the kernel once the prompt is answered.
    """
    deferred: list[Any] = []

    def poll(n: int) -> None:
        for _ in range(n):
            if not socket.poll(0):
                return
            raw = socket.recv_multipart(copy=False)
            _, frames = kernel.session.feed_identities(raw, copy=False)
            msg_type = kernel.session.deserialize(frames, content=False, copy=False)["header"]["msg_type"]
            if msg_type not in _COMM_MESSAGES:
                deferred.append(raw)
                continue
            parent = kernel.get_parent("shell")
            ident = kernel._parent_ident["shell"]
            coro = kernel.dispatch_shell(raw, subshell_id=None, concurrent=True)
            try:
                coro.send(None)  # comm handlers are synchronous: the coroutine ends without suspending
            except StopIteration:
                pass
            else:
                coro.close()
                log.warning("a widget message needed the event loop and was dropped")
            finally:
                kernel.set_parent(ident, parent, channel="shell")

    try:
        yield poll
    finally:
        _replay(kernel, deferred)


def _replay(kernel: Any, deferred: list[Any]) -> None:
    """Hand the requests held back during the prompt to the kernel, to run after this cell, in order.

    A request the kernel's stream read just before the prompt blocked is two tasks away from the
    kernel's lock (the stream's callback wraps ``shell_main`` in a task of its own). Scheduling
    ``shell_main`` directly put the held requests one step ahead of it, so the cell after the prompt ran
    last. Going through the stream's own callback gives every request the same path: arrival order.
    """
    pair = kernel.shell_channel_thread.manager._shell_channel_to_main
    stream: Any = getattr(pair, "to_stream", None)
    callback = getattr(stream, "_recv_callback", None)
    for raw in deferred:
        if callback is not None:
            stream._run_callback(callback, raw)
        else:  # the same two steps, should pyzmq rename its internals
            asyncio.ensure_future(_in_task(kernel.shell_main(None, raw)))


async def _in_task(coro: Any) -> Any:
    return await asyncio.create_task(coro)


def current_parent(kernel: Any) -> Any:
    """(ident, header) of the request ``kernel`` is answering now, or None outside ipykernel.

    ``_parent_ident["shell"]`` reads the same on ipykernel 6 (a dict) and 7 (a view of its context
    variables, kept for this use), so a prompt's record lands under the prompt's cell on both."""
    try:
        return kernel._parent_ident["shell"], kernel.get_parent("shell")
    except (AttributeError, KeyError, TypeError):
        return None


@contextmanager
def as_parent(kernel: Any, saved: Any) -> Iterator[None]:
    """Publish as a reply to ``saved`` (from ``current_parent``) for the duration of the block."""
    current = current_parent(kernel) if saved is not None else None
    if current is None:
        yield
        return
    kernel.set_parent(*saved, channel="shell")
    try:
        yield
    finally:
        kernel.set_parent(*current, channel="shell")


@contextmanager
def interrupt_raises_here() -> Iterator[None]:
    """■ raises ``KeyboardInterrupt`` in the blocked wait, whichever handler the kernel set.

    For an async cell (``await agent.arun``) ipykernel's SIGINT handler cancels the cell's task on the
    event loop, and a prompt's wait is holding that loop: ■ would be queued until the timeout. A prompt
    installs this before it makes its widgets, so ■ as soon as they appear lands in its wait. A no-op
    off the main thread.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
