"""Starting the Hermes bridge after the loading cell, and waiting for that start.

Importing the bridge (``hermes_tools``) imports the registry (~50 ms), which a load without hermes-agent never pays. With it,
``%load_ext`` only schedules the start: it begins on a thread once the loading cell has finished (IPython's
``post_run_cell``), so the import never competes with the load for the interpreter. Anything that reads the
bridge's state first (``bridge.status``, ``bridge.wait``: ``%hermes``, the picker) starts it at once and waits
for the hand-over, so nobody sees "off" while it starts.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["begin", "schedule", "wait_started"]

log = logging.getLogger(__name__)

#: How long a reader of the bridge waits for the start thread (it imports, then starts a discovery thread).
START_WAIT = 60.0

_lock = threading.Lock()
_pending = False
_thread: threading.Thread | None = None
_start: Callable[[], Any] | None = None


def schedule(start: Callable[[], Any]) -> Callable[[], None]:
    """Hold ``start`` (the bridge's) until ``begin()`` (the loading cell's end: ``hermes_nb.startup`` calls it
    from IPython's ``post_run_cell``) or its first reader, then run it on a thread; returns the undo, which
    waits for a start under way (so the caller's ``bridge.stop()`` sees what it began)."""
    global _pending, _start
    with _lock:
        _pending, _start = True, start

    def undo() -> None:
        global _pending
        with _lock:
            _pending = False
        _join()

    return undo


def begin() -> None:
    """Begin a scheduled start on its thread, without waiting for it (nothing when none is pending)."""
    _begin()


def wait_started(timeout: float = START_WAIT) -> None:
    """Start a scheduled start now, and return once it has handed over to the bridge."""
    thread = _begin()
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout)


def _begin() -> threading.Thread | None:
    global _pending, _thread
    with _lock:
        if _pending and _start is not None:
            _pending = False
            _thread = threading.Thread(target=_run, args=(_start,), name="hermes-bridge-start", daemon=True)
            _thread.start()
        return _thread


def _join() -> None:
    thread = _thread
    if thread is not None and thread is not threading.current_thread():
        thread.join(START_WAIT)


def _run(start: Callable[[], Any]) -> None:
    try:
        start()
    except Exception:  # boundary: %hermes status and %tools doctor report a bridge that did not start
        log.exception("hermes_nb: starting Hermes's tools failed")
