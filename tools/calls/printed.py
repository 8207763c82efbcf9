"""What a call prints: ``sys.stdout`` / ``sys.stderr`` writes routed by context while calls run.

``start(write)`` sends the writes made in this context (this thread or task, and the tasks and threads
started with a copy of it) to ``write`` until ``stop(token)``; every other write goes where it went before.
A router stands in for both streams only while some capture is active (counted), and leaves a stream
alone when someone else replaced it meanwhile. Used for a notebook tool's printed output (the person's
aside, ``hermes_nb.display.asides``) and for an ``execute_code`` script's (what the model gets).
"""

from __future__ import annotations

import contextvars
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["start", "stop"]

Write = Callable[[str], Any]
_sink: contextvars.ContextVar[Write | None] = contextvars.ContextVar("hermes_nb_printed", default=None)


class _Router:
    """Stands in for sys.stdout/stderr while captures are active: a context's writes go to its sink."""

    def __init__(self, original: Any) -> None:
        self._original = original

    def write(self, text: str) -> int:
        sink = _sink.get()
        if sink is None:
            return self._original.write(text)  # type: ignore[no-any-return]
        sink(text)
        return len(text)

    def flush(self) -> None:
        if _sink.get() is None:
            self._original.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


_routers = 0
_lock = threading.Lock()


def start(write: Write) -> contextvars.Token[Write | None]:
    """Capture this context's printed text into ``write``; returns the token for ``stop``."""
    global _routers
    token = _sink.set(write)
    with _lock:
        if _routers == 0:
            sys.stdout, sys.stderr = _Router(sys.stdout), _Router(sys.stderr)
        _routers += 1
    return token


def stop(token: contextvars.Token[Write | None]) -> None:
    """End the capture ``start`` began (in the same context)."""
    global _routers
    _sink.reset(token)
    with _lock:
        _routers -= 1
        if _routers == 0:
            for name in ("stdout", "stderr"):
                stream = getattr(sys, name)
                if isinstance(stream, _Router):  # someone else replaced it since: leave theirs
                    setattr(sys, name, stream._original)
