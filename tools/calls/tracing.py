"""The core's seam for traces: spans inside a tool call and approvals, for whoever records them.

The core (an MCP request, a sandboxed command, the approval gate) says what happened here; the recorder of a
run (``hermes_nb.traces``, a later stage) installs itself as the ``Tracer`` when it is first used, so the core
never imports it. With none installed, ``child`` is a no-op context and ``approval_heard`` returns at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, Protocol

__all__ = ["Tracer", "approval_heard", "child", "install"]


class Tracer(Protocol):
    def child(self, kind: str, name: str, attributes: dict[str, Any]) -> contextlib.AbstractContextManager[Any]:
        """A span inside the tool call running here (none outside a call)."""

    def approval_heard(self, tool: str, asked: float, answered: float, choice: str, by: str) -> None:
        """The gate asked about a call of ``tool``; ``by`` answered ``choice`` (``time.perf_counter`` times)."""


_tracer: list[Tracer] = []


def install(tracer: Tracer) -> Callable[[], None]:
    """Make ``tracer`` the one the core tells; returns the undo."""
    _tracer[:] = [tracer]

    def undo() -> None:
        if _tracer and _tracer[0] is tracer:
            _tracer.clear()

    return undo


@contextlib.contextmanager
def child(kind: str, name: str, attributes: dict[str, Any]) -> Iterator[Any]:
    """A span (``kind`` "mcp" or "sandbox") inside the running tool call, when a recorder listens."""
    if not _tracer:
        yield None
        return
    with _tracer[0].child(kind, name, attributes) as span:
        yield span


def approval_heard(tool: str, asked: float, answered: float, choice: str, by: str) -> None:
    if _tracer:
        _tracer[0].approval_heard(tool, asked, answered, choice, by)
