"""What a model server's error says: the line that names the problem, and whether it would say it again.

llama-cpp-python's server answers a message it cannot validate with HTTP 500 and pydantic's list of every
union member the message failed (``7 validation errors: ...`` then a traceback line); the one that names the
problem is the member whose ``role`` matched. A first-300-characters cut kept "Input should be 'system'"
and dropped "content: Input should be a valid string" (measured).
"""

from __future__ import annotations

import ast
import json
import random
import re
from typing import Any

__all__ = ["backoff", "error_key", "retry_after", "server_message"]

#: Longest message kept whole; longer ones are cut at a line, never mid-word.
MESSAGE_LIMIT = 500
#: Longest wait between attempts, whatever a Retry-After header asks.
_MAX_DELAY = 60.0
_TRACE_LINE = re.compile(r'^\s*(File "|Traceback|\^|POST /|GET /|During handling)')


def _raw_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            message = err.get("message")
            return str(message) if message not in (None, "") else ("" if "message" in err else json.dumps(err))
        return str(err)
    if isinstance(body, str):
        return body
    return str(getattr(exc, "message", "") or "")


def error_key(exc: Any) -> str:
    """What two failed attempts compare to tell a deterministic error (same status, same body) from a hiccup."""
    body = getattr(exc, "body", None)
    try:
        text = json.dumps(body, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(body)
    return f"{getattr(exc, 'status_code', '')}:{text}"


def server_message(exc: Any) -> str:
    """The server's own message about ``exc``, reduced to the lines that name the problem."""
    text = _raw_message(exc).strip()
    if not text:
        return "(the server gave no message)"
    lines = [line for line in text.splitlines() if line.strip() and not _TRACE_LINE.match(line)]
    validation = _validation_errors(lines)
    if validation:
        return validation
    kept = "\n".join(lines) if lines else text
    if len(kept) <= MESSAGE_LIMIT:
        return kept
    return _cut(kept)


def _validation_errors(lines: list[str]) -> str | None:
    """pydantic's error dicts, one a line: the errors of the union member the input really was."""
    errors = []
    for line in lines:
        stripped = line.strip()
        if not (stripped.startswith("{") and "'loc'" in stripped):
            continue
        try:
            value = ast.literal_eval(stripped)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict) and isinstance(value.get("loc"), (tuple, list)):
            errors.append(value)
    if not errors:
        return None
    # a member whose role (or type) tag did not match is not what the input was meant to be
    wrong = {tuple(e["loc"][:-1]) for e in errors
             if e.get("type") == "literal_error" and e["loc"] and e["loc"][-1] in ("role", "type")}
    meant = [e for e in errors if tuple(e["loc"][:-1]) not in wrong
             and not any(tuple(e["loc"][:len(w)]) == w for w in wrong)] or errors
    shown = []
    for e in meant[:3]:
        path = ".".join(str(p) for p in e["loc"] if p != "body" and not str(p)[:1].isupper())
        got = f" (got {json.dumps(e['input'])})" if _short_input(e.get("input")) else ""
        shown.append(f"{path}: {e.get('msg', 'invalid')}{got}")
    rest = f" ({len(meant)} of {len(errors)} validation errors; the others are shapes it was not)" \
        if len(meant) < len(errors) else ""
    return "; ".join(shown) + rest


def _short_input(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float)) or (isinstance(value, str) and len(value) <= 40)


def _cut(text: str) -> str:
    head = text[:MESSAGE_LIMIT]
    cut = head.rfind("\n")
    if cut < MESSAGE_LIMIT // 2:
        cut = head.rfind(" ")
    return head[: cut if cut > 0 else MESSAGE_LIMIT].rstrip() + f" … ({len(text):,} chars in all)"


def retry_after(exc: Any) -> float | None:
    """Seconds from a Retry-After (or retry-after-ms) header, capped."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    try:
        if headers.get("retry-after-ms"):
            return min(float(headers["retry-after-ms"]) / 1000, _MAX_DELAY)
        if headers.get("retry-after"):
            return min(float(headers["retry-after"]), _MAX_DELAY)
    except (TypeError, ValueError):  # an HTTP date or garbage: fall back to backoff
        return None
    return None


def backoff(attempt: int) -> float:
    return min(0.5 * 2**attempt, _MAX_DELAY) * (0.75 + random.random() / 2)
