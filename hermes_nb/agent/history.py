"""Making a conversation sendable again: text that cannot be encoded, values JSON cannot carry."""

from __future__ import annotations

import json
import math
from typing import Any

from hermes_nb.tools.calls.results import clean_text

__all__ = ["repair_history", "sendable"]


def repair_history(messages: list[dict[str, Any]]) -> bool:
    """Make every message sendable in place (text cleaned, non-JSON values as their text); False when
    there was nothing to repair (the failure had another cause)."""
    try:
        json.dumps(messages, ensure_ascii=False, allow_nan=False).encode()
        return False
    except (TypeError, ValueError, RecursionError):
        messages[:] = [sendable(m) for m in messages]
        return True


def sendable(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if depth > 50:
        return "<nested too deeply>"
    if isinstance(value, dict):
        return {clean_text(str(k)): sendable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sendable(v, depth + 1) for v in value]
    if value is None or isinstance(value, (bool, int)) or (isinstance(value, float) and math.isfinite(value)):
        return value
    try:
        return clean_text(str(value))
    except Exception:  # a broken __str__ must not stop the repair
        return f"<unprintable {type(value).__name__}>"
