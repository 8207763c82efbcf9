"""Argument validation: a JSON-schema object compiled once into closures, called on every dispatch.

A compiled check is ``check(value, path, errors) -> value``: it appends one message per problem to
``errors`` and returns the value, coerced where the schema says so (a new object only when something
changed). The returned validator raises a single ToolArgumentError listing every problem.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable
from typing import Any

from hermes_nb.tools.errors import ToolArgumentError, ToolSchemaError

# The message helpers keep their private names here: `items` and `key` are also local names below.
from hermes_nb.tools.schema.messages import ARTICLE as _ARTICLE
from hermes_nb.tools.schema.messages import branch_kinds as _branch_kinds
from hermes_nb.tools.schema.messages import describe as _describe
from hermes_nb.tools.schema.messages import got as _got
from hermes_nb.tools.schema.messages import items as _items
from hermes_nb.tools.schema.messages import json_type as _json_type
from hermes_nb.tools.schema.messages import key as _key
from hermes_nb.tools.schema.messages import show as _show
from hermes_nb.tools.schema.messages import where as _where

__all__ = ["compile_validator", "validate_arguments"]

log = logging.getLogger(__name__)

Check = Callable[[Any, str, list[str]], Any]


def compile_validator(parameters: dict) -> Callable[[dict], dict]:
    """Compile a JSON-schema object into ``validate(args) -> args`` raising ToolArgumentError."""
    if not isinstance(parameters, dict):
        raise ToolSchemaError(f"parameters schema must be a dict, got {type(parameters).__name__}")
    try:
        check = _Compiler(parameters).compile(parameters, coerce=True)
    except (AttributeError, TypeError, KeyError, ValueError) as exc:  # a malformed keyword value
        if isinstance(exc, ToolSchemaError):
            raise
        raise ToolSchemaError(f"malformed schema: {type(exc).__name__}: {exc}") from None

    def validate(args: dict) -> dict:
        errors: list[str] = []
        try:
            out = check(args, "", errors)
        except RecursionError:
            raise ToolArgumentError("arguments are nested too deeply") from None
        except Exception as exc:  # boundary: junk input must surface as an argument error, never a crash
            log.warning("validator failed on unexpected input", exc_info=True)
            raise ToolArgumentError(f"arguments could not be validated ({type(exc).__name__})") from None
        if errors:
            raise ToolArgumentError("; ".join(errors))
        return out

    return validate


_cache: dict[int, tuple[dict, Callable[[dict], dict]]] = {}


def validate_arguments(parameters: dict, args: dict) -> dict:
    """Validate ``args`` against ``parameters``, compiling once per schema object (cached by id)."""
    hit = _cache.get(id(parameters))
    if hit is None or hit[0] is not parameters:
        if len(_cache) >= 512:
            _cache.clear()
        hit = _cache[id(parameters)] = (parameters, compile_validator(parameters))
    return hit[1](args)


# -- type checks with coercion -------------------------------------------------------------------------

def _exact(kind: str, v: Any) -> bool:
    if kind == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "number":
        return isinstance(v, int | float) and not isinstance(v, bool) and (type(v) is not float or math.isfinite(v))
    if kind == "array":
        return isinstance(v, list | tuple)
    return _json_type(v) == kind


_MISS = object()


def _coerce(kind: str, v: Any) -> Any:
    """The value the schema's type makes of ``v``, or _MISS."""
    if kind == "integer":
        if isinstance(v, float) and math.isfinite(v) and v.is_integer():
            return int(v)
        if isinstance(v, str):
            try:
                return int(v.strip())
            except ValueError:
                num = _coerce("number", v)
                return int(num) if num is not _MISS and float(num).is_integer() else _MISS
    elif kind == "number" and isinstance(v, str):
        try:
            num = float(v.strip())
        except ValueError:
            return _MISS
        return num if math.isfinite(num) else _MISS
    elif kind == "boolean" and isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    elif kind in ("array", "object") and isinstance(v, str) and v.lstrip()[:1] in ("[", "{"):
        try:
            parsed = json.loads(v)
        except (ValueError, RecursionError):
            return _MISS
        return parsed if _json_type(parsed) == kind else _MISS
    return _MISS


def _type_check(kinds: list[str], coerce: bool) -> Check:
    want = " or ".join(_ARTICLE.get(k, k) for k in kinds)

    def check_type(v: Any, path: str, errors: list[str]) -> Any:
        for kind in kinds:
            if _exact(kind, v):
                return v
        if coerce:
            for kind in kinds:
                new = _coerce(kind, v)
                if new is not _MISS:
                    return new
        errors.append(f"{_where(path)} must be {want}, got {_got(v)}")
        return v

    # The hot path: the exact built-in types of the JSON kinds, one set lookup; the rest goes the long way.
    fast = frozenset(t for kind in kinds for t in _FAST_TYPES[kind])
    isfinite = math.isfinite

    def check_fast(v: Any, path: str, errors: list[str]) -> Any:
        t = type(v)
        if t in fast and (t is not float or isfinite(v)):
            return v
        return check_type(v, path, errors)

    return check_fast


_FAST_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "array": (list,),
    "object": (dict,), "null": (type(None),)}


class _Compiler:
    """Compiles one schema tree; ``$ref`` targets are compiled once and may be recursive."""

    def __init__(self, root: dict) -> None:
        self.root = root
        self.refs: dict[tuple[str, bool], Check] = {}

    def compile(self, schema: Any, *, coerce: bool) -> Check:
        if schema is True or schema == {}:
            return _accept
        if schema is False:
            return _reject
        if not isinstance(schema, dict):
            raise ToolSchemaError(f"a schema must be an object or boolean, got {type(schema).__name__}")
        steps: list[Check] = []
        if "$ref" in schema:
            steps.append(self._ref(schema["$ref"], coerce))
        _check_keyword_values(schema)
        kinds = schema.get("type")
        if kinds is not None:
            kinds = [kinds] if isinstance(kinds, str) else list(kinds)
            unknown = [k for k in kinds if k not in _ARTICLE]
            if unknown:
                raise ToolSchemaError(f"unknown JSON schema type {unknown[0]!r}")
        if "enum" in schema or "const" in schema:
            steps.append(_enum_check(schema))
        if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
            steps.append(_number_check(schema))
        if any(k in schema for k in ("minLength", "maxLength", "pattern")):
            steps.append(_string_check(schema))
        if any(k in schema for k in ("items", "prefixItems", "minItems", "maxItems", "uniqueItems")):
            steps.append(self._array_check(schema, coerce))
        for word in ("anyOf", "oneOf"):
            if word in schema:
                steps.append(self._any_of(schema[word], coerce))
        for sub in schema.get("allOf", ()):
            steps.append(self.compile(sub, coerce=coerce))
        obj = None
        if any(k in schema for k in ("properties", "required", "additionalProperties")):
            obj = self._object_check(schema, coerce, own_type=kinds == ["object"])
            if kinds == ["object"] and not steps:
                return obj  # the hot path: the object check does its own type check
            steps.append(obj)
        type_check = _type_check(kinds, coerce) if kinds else None
        if type_check is not None and not steps:
            return type_check
        return _sequence(type_check, steps)

    def _ref(self, ref: Any, coerce: bool) -> Check:
        key = (ref, coerce)
        if key not in self.refs:
            if not isinstance(ref, str) or not ref.startswith("#"):
                raise ToolSchemaError(f"only local $ref is supported, got {ref!r}")
            target: Any = self.root
            for part in [p for p in ref[1:].split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(target, dict) or part not in target:
                    raise ToolSchemaError(f"$ref {ref!r} does not resolve")
                target = target[part]
            self.refs[key] = _reject  # placeholder while compiling a recursive definition
            self.refs[key] = self.compile(target, coerce=coerce)
        refs = self.refs
        return lambda v, path, errors: refs[key](v, path, errors)

    def _object_check(self, schema: dict, coerce: bool, *, own_type: bool) -> Check:
        props = {name: self.compile(sub, coerce=coerce) for name, sub in schema.get("properties", {}).items()}
        required = tuple(schema.get("required", ()))
        extra = schema.get("additionalProperties", True)
        extra_check = None if isinstance(extra, bool) else self.compile(extra, coerce=coerce)
        allowed = ", ".join(sorted(props))
        as_object = _type_check(["object"], coerce)

        def check_object(v: Any, path: str, errors: list[str]) -> Any:
            if type(v) is not dict:
                if not own_type:
                    return v  # the type (if any) was checked before; object keywords apply to objects only
                n = len(errors)
                v = as_object(v, path, errors)
                if len(errors) > n or not isinstance(v, dict):
                    return v
            prefix = path + "." if path else ""
            for name in required:
                if name not in v:
                    errors.append(f"missing required argument {prefix + name!r}")
            out = v
            for name, item in v.items():
                check = props.get(name)
                if check is None:
                    if not isinstance(name, str):
                        errors.append(f"argument names must be strings, got {_got(name)}")
                        continue
                    if extra is False:
                        errors.append(f"unknown argument {prefix + name!r} (allowed: {allowed or 'none'})")
                        continue
                    if extra_check is None:
                        continue
                    check = extra_check
                new = check(item, prefix + name if prefix else name, errors)
                if new is not item:
                    if out is v:
                        out = dict(v)
                    out[name] = new
            return out

        return check_object

    def _array_check(self, schema: dict, coerce: bool) -> Check:
        items = schema.get("items", True)
        prefix_schemas = schema.get("prefixItems", [])
        if isinstance(items, list):  # draft-4 tuple form
            prefix_schemas, items = items, schema.get("additionalItems", True)
        heads = [self.compile(s, coerce=coerce) for s in prefix_schemas]
        rest = self.compile(items, coerce=coerce)
        lo, hi = schema.get("minItems"), schema.get("maxItems")
        unique = schema.get("uniqueItems", False)

        def check_array(v: Any, path: str, errors: list[str]) -> Any:
            if not isinstance(v, list | tuple):
                return v
            if lo is not None and len(v) < lo:
                errors.append(f"{_where(path)} must have at least {_items(lo)}, got {len(v)}")
            if hi is not None and len(v) > hi:
                errors.append(f"{_where(path)} must have at most {_items(hi)}, got {len(v)}")
            out: Any = v
            for i, item in enumerate(v):
                check = heads[i] if i < len(heads) else rest
                if check is _accept:
                    continue
                new = check(item, f"{path}[{i}]", errors)
                if new is not item:
                    if out is v:
                        out = list(v)
                    out[i] = new
            if unique and len({_key(x) for x in out}) < len(out):
                errors.append(f"{_where(path)} must not contain duplicate items")
            return out

        return check_array

    def _any_of(self, branches: list, coerce: bool) -> Check:
        exact = [self.compile(b, coerce=False) for b in branches]
        loose = [self.compile(b, coerce=True) for b in branches] if coerce else []
        kinds = [_branch_kinds(b) for b in branches]
        want = " or ".join(dict.fromkeys(_describe(b) for b in branches))
        tries = exact + loose  # an exact fit wins over a coerced one

        def check_any(v: Any, path: str, errors: list[str]) -> Any:
            found: list[list[str]] = []
            for check in tries:
                branch_errors: list[str] = []
                new = check(v, path, branch_errors)
                if not branch_errors:
                    return new
                found.append(branch_errors)
            kind = _json_type(v)
            fitting = [i for i, ks in enumerate(kinds) if ks is None or kind in ks
                       or (kind == "integer" and "number" in ks)]
            if len(fitting) == 1:  # the value has the right shape for one form: say what is wrong inside
                errors.extend(found[fitting[0] - len(branches)])
            else:
                errors.append(f"{_where(path)} must be {want}, got {_got(v)}")
            return v

        return check_any


_COUNTS = ("minItems", "maxItems", "minLength", "maxLength")
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _check_keyword_values(schema: dict) -> None:
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
    for word in ("properties", "$defs", "definitions"):
        if word in schema and not isinstance(schema[word], dict):
            raise ToolSchemaError(f"schema keyword {word!r} must be an object, got {schema[word]!r}")


def _accept(v: Any, path: str, errors: list[str]) -> Any:
    return v


def _reject(v: Any, path: str, errors: list[str]) -> Any:
    errors.append(f"{_where(path)} is not allowed")
    return v


def _sequence(type_check: Check | None, steps: list[Check]) -> Check:
    def check_all(v: Any, path: str, errors: list[str]) -> Any:
        if type_check is not None:
            n = len(errors)
            v = type_check(v, path, errors)
            if len(errors) > n:
                return v
        for step in steps:
            v = step(v, path, errors)
        return v

    return check_all


def _enum_check(schema: dict) -> Check:
    values = list(schema["enum"]) if "enum" in schema else [schema["const"]]
    keys = {_key(x) for x in values}
    shown = ", ".join(_show(x) for x in values)
    want = f"one of {shown}" if "enum" in schema else shown

    def check_enum(v: Any, path: str, errors: list[str]) -> Any:
        if _key(v) not in keys:
            errors.append(f"{_where(path)} must be {want}, got {_got(v)}")
        return v

    return check_enum


def _number_check(schema: dict) -> Check:
    bounds = [(schema[word], text) for word, text in (
        ("minimum", ">="), ("maximum", "<="), ("exclusiveMinimum", ">"), ("exclusiveMaximum", "<"))
        if isinstance(schema.get(word), int | float) and not isinstance(schema.get(word), bool)]

    def check_number(v: Any, path: str, errors: list[str]) -> Any:
        if isinstance(v, int | float) and not isinstance(v, bool):
            for bound, text in bounds:
                ok = v >= bound if text == ">=" else v <= bound if text == "<=" else v > bound if text == ">" else v < bound
                if not ok:
                    errors.append(f"{_where(path)} must be {text} {_show(bound)}, got {_show(v)}")
        return v

    return check_number


def _string_check(schema: dict) -> Check:
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
