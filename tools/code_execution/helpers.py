"""The helpers Hermes's ``hermes_tools`` module gives an ``execute_code`` script beside its tools:
``json_parse``, ``shell_quote`` and ``retry`` (hermes-agent 0.19.0), so a script written for Hermes runs here.

They are plain functions of the standard library; ``build_module`` adds them before the tools, so a tool
spelled like one of them is not exported (the helper is what a Hermes script means by that name).
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["HELPERS", "json_parse", "retry", "shell_quote"]

T = TypeVar("T")


def json_parse(text: str) -> Any:
    """``json.loads`` that accepts raw control characters (tabs, newlines) inside strings, as terminal
    output often has them."""
    return json.loads(text, strict=False)


def shell_quote(s: str) -> str:
    """``s`` quoted for a POSIX shell, for putting a value into a ``terminal`` command."""
    return shlex.quote(s)


def retry(fn: Callable[[], T], max_attempts: int = 3, delay: float = 2) -> T:
    """``fn()``, tried up to ``max_attempts`` times; waits ``delay``, then twice that, ... between tries and
    raises the last error when every try failed."""
    attempts = max(1, int(max_attempts))
    for attempt in range(attempts):
        try:
            return fn()
        except Exception:  # a script's transient failure, whatever its type: the last one is re-raised
            if attempt == attempts - 1:
                raise
            time.sleep(delay * 2 ** attempt)
    raise AssertionError("unreachable")  # the loop returns or raises


HELPERS: dict[str, Any] = {"json_parse": json_parse, "shell_quote": shell_quote, "retry": retry}
