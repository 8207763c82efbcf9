"""Starting the configured MCP servers off the loading thread, and waiting for that start.

Reading config.yaml and starting servers takes long, so ``%load_ext`` hands it to a thread, and defers even
that until the loading cell has ended (``start_configured_servers(deferred=True)``, begun by
``begin_deferred_start``: the config module's import and the file's look never slow the load). ``%mcp`` and
the registry's first use wait for that thread (beginning a deferred start first), so they see the servers as
a synchronous start would have shown them.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["begin_deferred_start", "start_configured_servers", "wait_for_mcp_start"]

log = logging.getLogger(__name__)

#: How long ``%mcp`` and the registry's first use wait for the MCP start thread (it reads a file, then
#: hands the servers to the background loop; only a hung file system makes it take long).
MCP_START_WAIT = 60.0

_mcp_start: threading.Thread | None = None
_deferred: Callable[[], None] | None = None  # a deferred start, until it begins or is undone
_deferred_lock = threading.Lock()


def wait_for_mcp_start() -> None:
    """Return once the configured MCP servers are handed to the background loop (not once they are up);
    a deferred start begins now."""
    begin_deferred_start()
    thread = _mcp_start
    if thread is not None and thread is not threading.current_thread():
        thread.join(MCP_START_WAIT)


def begin_deferred_start() -> None:
    """Begin the start ``start_configured_servers(deferred=True)`` put off (once; nothing when none is)."""
    global _deferred
    with _deferred_lock:  # held while it begins (a file's look and a thread's start): an undo waits for it
        begin, _deferred = _deferred, None
        if begin is not None:
            begin()


def start_configured_servers(*, deferred: bool = False) -> Callable[[], None]:
    """Read config.yaml and start its MCP servers off the loading thread; the undo waits for that and
    cancels what it started. ``deferred``: only at ``begin_deferred_start()`` (the loading cell's end, or a
    waiter); an undo before that means it never begins."""
    global _deferred
    undos: list[Callable[[], None]] = []

    def begin() -> None:
        undos.append(_start_now())

    def undo() -> None:
        global _deferred
        with _deferred_lock:  # either it never begins, or it has begun and its undo is in ``undos``
            if _deferred is begin:
                _deferred = None
            taken = undos[:]
            undos.clear()
        while taken:
            taken.pop()()

    if deferred:
        with _deferred_lock:
            _deferred = begin
    else:
        begin()
    return undo


def _start_now() -> Callable[[], None]:
    global _mcp_start
    from hermes_nb.tools.config import config_path

    if not config_path().is_file():  # no config.yaml, no configured servers: no thread
        return lambda: None
    lock = threading.Lock()
    futures: list[concurrent.futures.Future[Any]] = []
    stopped = False

    def start() -> None:
        try:
            future = _submit_configured_servers()
        except Exception:  # boundary: a broken config is reported by %mcp and %tools doctor, not here
            log.exception("hermes_nb: starting the configured MCP servers failed")
            return
        with lock:
            if future is not None:
                futures.append(future)
                if stopped:
                    future.cancel()

    thread = threading.Thread(target=start, name="hermes-nb-mcp-start", daemon=True)
    _mcp_start = thread
    thread.start()

    def undo() -> None:
        nonlocal stopped
        thread.join(MCP_START_WAIT)
        with lock:
            stopped = True
            for future in futures:
                future.cancel()

    return undo


def _submit_configured_servers() -> concurrent.futures.Future[Any] | None:
    """Start the configured servers on the background loop; None when none are configured."""
    from hermes_nb.tools import async_bridge
    from hermes_nb.tools.mcp_client.config import load_mcp_server_configs
    from hermes_nb.tools.mcp_tool import adiscover_mcp_tools

    configs = load_mcp_server_configs()
    if not any(c.enabled for c in configs):
        return None
    future = async_bridge.submit(adiscover_mcp_tools(configs))

    def report(done: concurrent.futures.Future[Any]) -> None:
        if not done.cancelled() and done.exception() is not None:
            log.error("hermes_nb: MCP discovery failed", exc_info=done.exception())

    future.add_done_callback(report)
    return future
