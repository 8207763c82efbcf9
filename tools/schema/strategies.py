"""Hypothesis strategies from a tool's JSON schema: arguments that satisfy it, and ones that break it.

Covers the subset ``hermes_nb.tools.schema.derive`` emits (types and type lists, ``enum``/``const``,
``anyOf``/``oneOf``, local ``$ref`` into ``$defs``, object properties with ``required`` and
``additionalProperties``, ``items``/``prefixItems``, numeric bounds, string length and ``pattern``).
Imports hypothesis, so only ``%tools fuzz`` imports this module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

__all__ = ["POISON", "invalid_arguments", "valid_arguments"]

#: Values that break some schema; each property gets the ones its own validator refuses.
POISON: tuple[Any, ...] = (None, True, 0, -1, 1.5, 10**20, "", "abc", "[", [], [1, "a"], {}, {"x": 1})
_MAX_ITEMS = 5


def valid_arguments(parameters: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Argument dicts that satisfy ``parameters`` (the tool's ``parameters`` object schema)."""
    return _Builder(parameters.get("$defs", {})).build(parameters)


class _Builder:
    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs
        self.refs: dict[str, st.SearchStrategy[Any]] = {}

    def build(self, schema: Any) -> st.SearchStrategy[Any]:
        if schema is True or schema == {}:
            return _any_json()
        if not isinstance(schema, dict):
            return st.nothing()
        if "$ref" in schema:
            return self._ref(schema["$ref"])
        if "const" in schema:
            return st.just(schema["const"])
        if "enum" in schema:
            return st.sampled_from(list(schema["enum"]))
        for word in ("anyOf", "oneOf"):
            if word in schema:
                return st.one_of([self.build(b) for b in schema[word]])
        kind = schema.get("type")
        if kind is None:
            return self._object(schema) if "properties" in schema else _any_json()
        kinds = kind if isinstance(kind, list) else [kind]
        return st.one_of([self._typed(k, schema) for k in kinds])

    def _ref(self, ref: str) -> st.SearchStrategy[Any]:
        if ref not in self.refs:  # deferred: recursive definitions (a tree of nodes) terminate by shrinking
            name = ref.rsplit("/", 1)[-1]
            self.refs[ref] = st.deferred(lambda: self.build(self.defs.get(name, {})))
        return self.refs[ref]

    def _typed(self, kind: str, schema: dict[str, Any]) -> st.SearchStrategy[Any]:
        if kind == "null":
            return st.none()
        if kind == "boolean":
            return st.booleans()
        if kind == "integer":
            lo, hi = _bounds(schema, integer=True)
            return st.integers(min_value=lo, max_value=hi)
        if kind == "number":
            lo, hi = _bounds(schema, integer=False)
            return st.floats(min_value=lo, max_value=hi, allow_nan=False, allow_infinity=False,
                             exclude_min="exclusiveMinimum" in schema, exclude_max="exclusiveMaximum" in schema)
        if kind == "string":
            lo, hi = schema.get("minLength", 0), schema.get("maxLength")
            if "pattern" in schema:
                return st.from_regex(schema["pattern"]).filter(
                    lambda s: len(s) >= lo and (hi is None or len(s) <= hi))
            return st.text(min_size=lo, max_size=hi if hi is not None else max(lo, 30))
        if kind == "array":
            return self._array(schema)
        if kind == "object":
            return self._object(schema)
        return st.nothing()

    def _array(self, schema: dict[str, Any]) -> st.SearchStrategy[Any]:
        if "prefixItems" in schema:
            return st.tuples(*(self.build(s) for s in schema["prefixItems"])).map(list)
        lo = schema.get("minItems", 0)
        hi = schema.get("maxItems", max(lo, _MAX_ITEMS))
        items = self.build(schema.get("items", True))
        return st.lists(items, min_size=lo, max_size=hi, unique=bool(schema.get("uniqueItems")))

    def _object(self, schema: dict[str, Any]) -> st.SearchStrategy[Any]:
        props = schema.get("properties", {})
        required = set(schema.get("required", ()))
        fixed = {k: self.build(v) for k, v in props.items() if k in required}
        optional = {k: self.build(v) for k, v in props.items() if k not in required}
        base = st.fixed_dictionaries(fixed, optional=optional)
        extra = schema.get("additionalProperties", True)
        if props or extra is False or extra is True:
            return base
        more = st.dictionaries(st.text(max_size=10), self.build(extra), max_size=3)
        return st.tuples(base, more).map(lambda pair: {**pair[1], **pair[0]})


def _bounds(schema: dict[str, Any], *, integer: bool) -> tuple[Any, Any]:
    lo = schema.get("minimum", schema.get("exclusiveMinimum"))
    hi = schema.get("maximum", schema.get("exclusiveMaximum"))
    if integer:
        import math

        if lo is not None:
            lo = math.floor(lo) + 1 if "exclusiveMinimum" in schema else math.ceil(lo)
        if hi is not None:
            hi = math.ceil(hi) - 1 if "exclusiveMaximum" in schema else math.floor(hi)
    return lo, hi


def _any_json() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(
        max_size=20)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.text(max_size=8), inner, max_size=3), max_leaves=8)


# -- arguments that break the schema ---------------------------------------------------------------


def invalid_arguments(parameters: dict[str, Any],
                      refuses: Callable[[dict[str, Any]], bool]) -> st.SearchStrategy[tuple[Any, str, str]]:
    """``(arguments, what is wrong, a word the refusal must name)``, each breaking ``parameters`` once.

    ``refuses(args)`` says whether the tool's validator refuses ``args``; a poison value is used for a
    property only if the validator refuses it there (coercion may legitimately accept ``"5"`` for 5).
    """
    valid = valid_arguments(parameters)
    props: dict[str, Any] = parameters.get("properties", {})
    required = list(parameters.get("required", ()))
    options: list[st.SearchStrategy[tuple[Any, str, str]]] = []
    for name in props:
        options.append(_poisoned(valid, name, refuses))
    for name in required:
        options.append(_missing(valid, name))
    if parameters.get("additionalProperties") is False:
        options.append(valid.map(lambda a: ({**a, "zz_unknown": 1}, "unknown argument zz_unknown", "zz_unknown")))
    options.append(st.sampled_from([[1, 2], "text", 3, True]).map(
        lambda v: (v, "arguments are not a JSON object", "object")))
    return st.one_of(options)


def _poisoned(valid: st.SearchStrategy[dict[str, Any]], name: str,
              refuses: Callable[[dict[str, Any]], bool]) -> st.SearchStrategy[tuple[Any, str, str]]:
    """Valid arguments with ``name`` set to a poison value its validator refuses."""

    def put(pair: tuple[dict[str, Any], Any]) -> dict[str, Any]:
        return {**pair[0], name: pair[1]}

    def case(args: dict[str, Any]) -> tuple[Any, str, str]:
        return args, f"{name}={args[name]!r} breaks its schema", name

    return st.tuples(valid, st.sampled_from(POISON)).map(put).filter(refuses).map(case)


def _missing(valid: st.SearchStrategy[dict[str, Any]], name: str) -> st.SearchStrategy[tuple[Any, str, str]]:
    """Valid arguments without the required ``name``."""

    def case(args: dict[str, Any]) -> tuple[Any, str, str]:
        return {k: v for k, v in args.items() if k != name}, f"required {name!r} missing", name

    return valid.map(case)
