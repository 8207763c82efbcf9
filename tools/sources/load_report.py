"""Failures met while loading tools (a tool file that did not import, a plugin, an MCP server).

Every source records here; ``%tools doctor`` reads it. A failure never stops the other sources.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

__all__ = ["LoadFailure", "clear_failures", "failures", "record_failure"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadFailure:
    source: str  # "builtin", "user-tools", "plugin", "entry-point", "mcp", ...
    name: str  # module, plugin or server name
    message: str  # one line a person can act on
    detail: str = ""  # e.g. a traceback tail or a server's stderr tail
    when: float = 0.0


_lock = threading.Lock()
_failures: dict[tuple[str, str], LoadFailure] = {}


def record_failure(source: str, name: str, message: str, detail: str = "") -> LoadFailure:
    """Record (or replace) the failure of ``name`` from ``source``."""
    failure = LoadFailure(source=source, name=name, message=message, detail=detail, when=time.time())
    with _lock:
        _failures[(source, name)] = failure
    return failure


def clear_failures(source: str | None = None, name: str | None = None) -> None:
    """Forget failures (all, of one source, or of one name in a source) — e.g. after a successful reload."""
    with _lock:
        for key in list(_failures):
            if (source is None or key[0] == source) and (name is None or key[1] == name):
                del _failures[key]


def failures() -> list[LoadFailure]:
    with _lock:
        return sorted(_failures.values(), key=lambda f: (f.source, f.name))
