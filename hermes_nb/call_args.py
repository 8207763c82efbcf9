"""The arguments of ``%tools call`` (and of a ``%%tool --example``): ``{json}`` or ``key=value ...``."""

from __future__ import annotations

import json
import re
from typing import Any

from IPython.core.error import UsageError

__all__ = ["parse_call_args"]

_KEY_VALUE = re.compile(r"""\s*([A-Za-z_][\w.-]*)=("(?:\\.|[^"\\])*"|'[^']*'|\S+)\s*""")


def parse_call_args(text: str) -> dict[str, Any]:
    """``{json}`` or ``key=value ...`` (values parsed as JSON when they parse, else strings)."""
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"%tools call: arguments are not valid JSON: {exc}{_python_dict_hint(text)}") from None
        if not isinstance(value, dict):
            raise UsageError("%tools call: arguments must be a JSON object")
        return value
    out: dict[str, Any] = {}
    pos = 0
    while pos < len(text):
        match = _KEY_VALUE.match(text, pos)
        if match is None:
            raise UsageError(f"%tools call: expected key=value, got {text[pos:].split()[0]!r}")
        key, raw = match.group(1), match.group(2)
        pos = match.end()
        if len(raw) >= 2 and raw[0] == raw[-1] == "'":  # single quotes: a plain string
            out[key] = raw[1:-1]
            continue
        try:  # JSON when it parses ("1" stays a string, 1 is a number), else the raw text
            out[key] = json.loads(raw)
        except ValueError:
            out[key] = raw
    return out


def _python_dict_hint(text: str) -> str:
    """For ``{'a': 1, 'b': True}``: the same object written as JSON, to copy."""
    import ast

    try:
        value = ast.literal_eval(text)
        as_json = json.dumps(value, ensure_ascii=False)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ""
    return f" — this is a Python dict; JSON needs double quotes and true/false/null: {as_json}"
