"""Checks of one value against the keywords that look at it alone: enum/const, numbers, strings, object size.

Each ``*_check(schema)`` returns ``check(value, path, errors) -> value`` for the compiler in
``validation``; a keyword applies only to values of its kind (a number bound ignores strings).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from hermes_nb.tools.errors import ToolSchemaError
from hermes_nb.tools.schema.messages import got as _got
from hermes_nb.tools.schema.messages import key as _key
from hermes_nb.tools.schema.messages import show as _show
from hermes_nb.tools.schema.messages import where as _where

__all__ = ["enum_check", "number_check", "object_size_check", "string_check"]

Check = Callable[[Any, str, list[str]], Any]

def enum_check(schema: dict) -> Check:
    values = list(schema["enum"]) if "enum" in schema else [schema["const"]]
    keys = {_key(x) for x in values}
    shown = ", ".join(_show(x) for x in values)
    want = f"one of {shown}" if "enum" in schema else shown

    def check_enum(v: Any, path: str, errors: list[str]) -> Any:
        if _key(v) not in keys:
            errors.append(f"{_where(path)} must be {want}, got {_got(v)}")
        return v

    return check_enum


def number_check(schema: dict) -> Check:
    bounds = [(schema[word], text) for word, text in (
        ("minimum", ">="), ("maximum", "<="), ("exclusiveMinimum", ">"), ("exclusiveMaximum", "<"))
        if isinstance(schema.get(word), int | float) and not isinstance(schema.get(word), bool)]

    step = schema.get("multipleOf")

    def check_number(v: Any, path: str, errors: list[str]) -> Any:
        if isinstance(v, int | float) and not isinstance(v, bool):
            for bound, text in bounds:
                ok = v >= bound if text == ">=" else v <= bound if text == "<=" else v > bound if text == ">" else v < bound
                if not ok:
                    errors.append(f"{_where(path)} must be {text} {_show(bound)}, got {_show(v)}")
            if step is not None and not _is_multiple(v, step):
                errors.append(f"{_where(path)} must be a multiple of {_show(step)}, got {_show(v)}")
        return v

    return check_number


def string_check(schema: dict) -> Check:
    lo, hi, pattern = schema.get("minLength"), schema.get("maxLength"), schema.get("pattern")
    try:
        regex = re.compile(pattern) if pattern is not None else None
    except (re.error, TypeError) as exc:
        raise ToolSchemaError(f"invalid pattern {pattern!r}: {exc}") from None

    def check_string(v: Any, path: str, errors: list[str]) -> Any:
        if isinstance(v, str):
            if lo is not None and len(v) < lo:
                errors.append(f"{_where(path)} must be at least {lo} characters long, got {len(v)}")
            if hi is not None and len(v) > hi:
                errors.append(f"{_where(path)} must be at most {hi} characters long, got {len(v)}")
            if regex is not None and not regex.search(v):
                errors.append(f"{_where(path)} must match pattern {pattern!r}, got {_show(v)}")
        return v

    return check_string


def _is_multiple(value: int | float, step: int | float) -> bool:
    """JSON Schema's multipleOf: exact for integers, the quotient's integrality for floats."""
    if isinstance(value, int) and isinstance(step, int):
        return value % step == 0
    try:
        quotient = value / step
    except OverflowError:
        return False
    return math.isfinite(quotient) and quotient == int(quotient)


def object_size_check(schema: dict) -> Check:
    lo, hi = schema.get("minProperties"), schema.get("maxProperties")

    def check_size(v: Any, path: str, errors: list[str]) -> Any:
        if isinstance(v, dict):
            if lo is not None and len(v) < lo:
                errors.append(f"{_where(path)} must have at least {lo} keys, got {len(v)}")
            if hi is not None and len(v) > hi:
                errors.append(f"{_where(path)} must have at most {hi} keys, got {len(v)}")
        return v

    return check_size
