"""The JSON-schema keywords the validator knows: those it enforces, those that only describe, and the
one-time check of keyword values that lets no compiled check fail at call time."""

from __future__ import annotations

from hermes_nb.tools.errors import ToolSchemaError

__all__ = ["ANNOTATIONS", "ARRAY_WORDS", "ENFORCED_KEYWORDS", "NUMBER_WORDS", "OBJECT_WORDS", "check_keyword_values"]

NUMBER_WORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
ARRAY_WORDS = ("items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains")
OBJECT_WORDS = ("properties", "required", "additionalProperties", "patternProperties", "propertyNames",
                 "dependentRequired")
#: Every keyword a compiled check enforces (``then``/``else`` with ``if``; ``min/maxContains`` with ``contains``).
ENFORCED_KEYWORDS = frozenset({
    "$ref", "type", "enum", "const", "minLength", "maxLength", "pattern", "allOf", "anyOf", "oneOf", "not",
    "if", "then", "else", "minProperties", "maxProperties", "additionalItems", "minContains", "maxContains",
    *NUMBER_WORDS, *ARRAY_WORDS, *OBJECT_WORDS,
})
#: Keywords that only describe (nothing to enforce).
ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "$schema", "$id", "$comment", "$anchor", "$defs",
    "definitions", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
})

_COUNTS = ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties", "minContains",
           "maxContains")
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def check_keyword_values(schema: dict) -> None:
    """Keyword values the checks rely on, checked once here so that no check can fail at call time."""
    for word in _COUNTS + _BOUNDS:
        value = schema.get(word)
        wanted = int if word in _COUNTS else int | float
        if value is not None and (not isinstance(value, wanted) or isinstance(value, bool)):
            raise ToolSchemaError(f"schema keyword {word!r} must be a number, got {value!r}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ToolSchemaError(f"schema keyword 'required' must be a list of names, got {required!r}")
    for word in ("enum", "anyOf", "oneOf", "allOf", "prefixItems"):
        if word in schema and not isinstance(schema[word], list):
            raise ToolSchemaError(f"schema keyword {word!r} must be a list, got {schema[word]!r}")
    step = schema.get("multipleOf")
    if step is not None and (isinstance(step, bool) or not isinstance(step, int | float) or step <= 0):
        raise ToolSchemaError(f"schema keyword 'multipleOf' must be a number > 0, got {step!r}")
    for word in ("properties", "$defs", "definitions", "patternProperties", "dependentRequired"):
        if word in schema and not isinstance(schema[word], dict):
            raise ToolSchemaError(f"schema keyword {word!r} must be an object, got {schema[word]!r}")
