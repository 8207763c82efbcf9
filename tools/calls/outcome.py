"""One tool call's outcome inside hermes_nb: the content, whether it is an error, and when it ran.

Dispatch, batches and the display pass this record along and read ``is_error`` from it; the plain string
Hermes's ``dispatch`` returns is made from it only at that boundary, so nothing re-derives "did it fail?"
by parsing text we produced. A handler's own return value is the one place the flag is read from the
value: Hermes tools say failure by returning ``{"error": "..."}`` (``tool_error``), so a result is an error
when its ``error`` is set, and ``{"error": null}`` (a tool saying "no error") is not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["Outcome", "Settled", "says_error", "text_says_error"]

#: ``(content, is_error)``: what the steps of a call return on the hot path (a tuple costs a tenth of a
#: record; ``Outcome`` adds the timing where someone reads it).
Settled = tuple[str, bool]


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """A settled call: the exact content the model receives, the error flag, and ``perf_counter`` times."""

    content: str
    is_error: bool
    started: float = 0.0
    ended: float = 0.0

    @property
    def duration(self) -> float:
        return self.ended - self.started


def says_error(value: Any) -> bool:
    """Hermes's error shape: a JSON object whose ``error`` is set (not null, false or empty)."""
    return isinstance(value, dict) and bool(value.get("error"))


def text_says_error(text: str) -> bool:
    """``says_error`` for a handler that returned JSON text; text that is not an object never is."""
    if not text.startswith("{") or '"error"' not in text:  # most results: no parse at all
        return False
    try:
        return says_error(json.loads(text))
    except (ValueError, RecursionError):
        return False
