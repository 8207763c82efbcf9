"""The words of argument validation: how values, places and expected forms are described to the model.

A model fixes its call from these messages, so they name the argument, what was expected and what came.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["ARTICLE", "branch_kinds", "describe", "got", "items", "json_type", "key", "show", "where"]

ARTICLE = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "a boolean",
           "array": "an array", "object": "an object", "null": "null"}


def where(path: str) -> str:
    return f"argument {path!r}" if path else "arguments"


def show(value: Any) -> str:
    """A short JSON-ish rendering of a value (never huge, never raising on ints past the digit limit)."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        return str(value) if value.bit_length() < 200 else "<a very large integer>"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else {"nan": "NaN", "inf": "Infinity"}.get(str(value), "-Infinity")
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    return "[...]" if isinstance(value, list | tuple) else "{...}" if isinstance(value, dict) else "?"


def items(n: int) -> str:
    return f"{n} item" if n == 1 else f"{n} items"


def json_type(value: Any) -> str | None:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return "array"
    return "object" if isinstance(value, dict) else None


def got(value: Any) -> str:
    kind = json_type(value)
    if kind in ("array", "object"):
        return f"{kind} of {len(value)} {'items' if kind == 'array' else 'keys'}"
    if kind == "null":
        return "null"
    if kind == "number" and not math.isfinite(value):
        return f"{show(value)} (not a finite number)"
    if kind is None:
        return f"Python object of type {type(value).__name__}"
    return f"{kind} {show(value)}"


def key(value: Any) -> Any:
    """A hashable key with JSON equality: 1 == 1.0 but True != 1, arrays and objects by content."""
    if isinstance(value, bool) or value is None:
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, list | tuple):
        return ("a", tuple(key(v) for v in value))
    if isinstance(value, dict):
        try:
            return ("o", frozenset((k, key(v)) for k, v in value.items()))
        except TypeError:  # an unhashable key: compare by identity rather than fail
            return ("id", id(value))
    return ("id", id(value))




def branch_kinds(schema: Any) -> set[str] | None:
    """The JSON types a branch can accept, when the schema says so plainly (else None: any)."""
    if not isinstance(schema, dict):
        return None
    if "type" in schema:
        kinds = schema["type"]
        return {kinds} if isinstance(kinds, str) else set(kinds)
    if "enum" in schema or "const" in schema:
        return {json_type(x) or "?" for x in schema.get("enum", [schema.get("const")])}
    return None


def describe(schema: Any) -> str:
    kinds = branch_kinds(schema)
    if isinstance(schema, dict) and ("enum" in schema or "const" in schema):
        return "one of " + ", ".join(show(x) for x in schema.get("enum", [schema.get("const")]))
    if isinstance(schema, dict) and "$ref" in schema:
        return f"a {str(schema['$ref']).rsplit('/', 1)[-1]} object"
    if kinds:
        return " or ".join(ARTICLE.get(k, k) for k in sorted(kinds))
    return "a value of another allowed form"
