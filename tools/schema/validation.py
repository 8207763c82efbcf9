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
from hermes_nb.tools.schema.keywords import (
    ANNOTATIONS,
    ARRAY_WORDS,
    ENFORCED_KEYWORDS,
    NUMBER_WORDS,
    OBJECT_WORDS,
    check_keyword_values,
)
from hermes_nb.tools.schema.messages import ARTICLE as _ARTICLE
from hermes_nb.tools.schema.messages import branch_kinds as _branch_kinds
from hermes_nb.tools.schema.messages import describe as _describe
from hermes_nb.tools.schema.messages import got as _got
from hermes_nb.tools.schema.messages import items as _items
from hermes_nb.tools.schema.messages import json_type as _json_type
from hermes_nb.tools.schema.messages import key as _key
from hermes_nb.tools.schema.messages import where as _where
from hermes_nb.tools.schema.value_checks import enum_check, number_check, object_size_check, string_check

__all__ = ["ANNOTATIONS", "ENFORCED_KEYWORDS", "compile_validator", "validate_arguments"]

log = logging.getLogger(__name__)

Check = Callable[[Any, str, list[str]], Any]


def compile_validator(parameters: dict, *, coerce: bool = True, generated: bool = True) -> Callable[[dict], dict]:
    """Compile a JSON-schema object into ``validate(args) -> args`` raising ToolArgumentError.

    With ``coerce`` (the default for tool calls) a value the model sent as the wrong JSON type is
    converted where the schema says what it should be ("3" for an integer). Without it, the verdict is
    JSON Schema's (2020-12; ``1.0`` is an integer). The keywords present that no check enforces are on
    ``validate.unenforced`` (a sorted tuple), for the registry to report once. With ``generated`` (the
    default) a flat schema of primitives, or one without properties, gets code written for it in front
    (``tools.schema.fast_path``), which hands anything unusual to the compiled checks.
    """
    if not isinstance(parameters, dict):
        raise ToolSchemaError(f"parameters schema must be a dict, got {type(parameters).__name__}")
    compiler = _Compiler(parameters, json_integers=not coerce)
    try:
        check = compiler.compile(parameters, coerce=coerce)
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

    unenforced = tuple(sorted(compiler.unenforced))
    validate.unenforced = unenforced  # type: ignore[attr-defined]
    if not coerce or not generated:
        return validate
    from hermes_nb.tools.schema.fast_path import fast_validator  # generated code for flat schemas

    fast = fast_validator(parameters, validate)
    if fast is None:
        return validate
    fast.unenforced = unenforced  # type: ignore[attr-defined]
    return fast


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


def _type_check(kinds: list[str], coerce: bool, json_integers: bool = False) -> Check:
    want = " or ".join(_ARTICLE.get(k, k) for k in kinds)
    integral_floats = json_integers and "integer" in kinds

    def check_type(v: Any, path: str, errors: list[str]) -> Any:
        for kind in kinds:
            if _exact(kind, v):
                return v
        if integral_floats and type(v) is float and math.isfinite(v) and v.is_integer():
            return v  # JSON Schema: 1.0 is an integer
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

    def __init__(self, root: dict, *, json_integers: bool = False) -> None:
        self.root = root
        self.refs: dict[tuple[str, bool], Check] = {}
        self.json_integers = json_integers
        self.unenforced: set[str] = set()

    def compile(self, schema: Any, *, coerce: bool) -> Check:
        if schema is True or schema == {}:
            return _accept
        if schema is False:
            return _reject
        if not isinstance(schema, dict):
            raise ToolSchemaError(f"a schema must be an object or boolean, got {type(schema).__name__}")
        steps: list[Check] = []
        self.unenforced.update(k for k in schema if k not in ENFORCED_KEYWORDS and k not in ANNOTATIONS)
        if "$ref" in schema:
            steps.append(self._ref(schema["$ref"], coerce))
        check_keyword_values(schema)
        kinds = schema.get("type")
        if kinds is not None:
            kinds = [kinds] if isinstance(kinds, str) else list(kinds)
            unknown = [k for k in kinds if k not in _ARTICLE]
            if unknown:
                raise ToolSchemaError(f"unknown JSON schema type {unknown[0]!r}")
        if "enum" in schema or "const" in schema:
            steps.append(enum_check(schema))
        if any(k in schema for k in NUMBER_WORDS):
            steps.append(number_check(schema))
        if any(k in schema for k in ("minLength", "maxLength", "pattern")):
            steps.append(string_check(schema))
        if any(k in schema for k in ARRAY_WORDS):
            steps.append(self._array_check(schema, coerce))
        if "anyOf" in schema:
            steps.append(self._any_of(schema["anyOf"], coerce, exactly_one=False))
        if "oneOf" in schema:
            steps.append(self._any_of(schema["oneOf"], coerce, exactly_one=True))
        for sub in schema.get("allOf", ()):
            steps.append(self.compile(sub, coerce=coerce))
        if "not" in schema:
            steps.append(self._not(schema["not"]))
        if "if" in schema:
            steps.append(self._conditional(schema, coerce))
        if "minProperties" in schema or "maxProperties" in schema:
            steps.append(object_size_check(schema))
        obj = None
        if any(k in schema for k in OBJECT_WORDS):
            obj = self._object_check(schema, coerce, own_type=kinds == ["object"])
            if kinds == ["object"] and not steps:
                return obj  # the hot path: the object check does its own type check
            steps.append(obj)
        type_check = _type_check(kinds, coerce, self.json_integers) if kinds else None
        if type_check is not None and not steps:
            return type_check
        return _sequence(type_check, steps)

    def _trial(self, schema: Any) -> Callable[[Any, str], bool]:
        """Whether a value fits ``schema`` exactly (no coercion), without reporting anything."""
        check = self.compile(schema, coerce=False)

        def fits(v: Any, path: str) -> bool:
            trial: list[str] = []
            check(v, path, trial)
            return not trial

        return fits

    def _not(self, schema: Any) -> Check:
        fits = self._trial(schema)
        shown = _describe(schema) if isinstance(schema, dict) else "this"

        def check_not(v: Any, path: str, errors: list[str]) -> Any:
            if fits(v, path):
                errors.append(f"{_where(path)} must not be {shown}, got {_got(v)}")
            return v

        return check_not

    def _conditional(self, schema: dict, coerce: bool) -> Check:
        condition = self._trial(schema["if"])
        then = self.compile(schema.get("then", True), coerce=coerce)
        other = self.compile(schema.get("else", True), coerce=coerce)

        def check_if(v: Any, path: str, errors: list[str]) -> Any:
            return (then if condition(v, path) else other)(v, path, errors)

        return check_if

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
        patterns = [(_regex(p), self.compile(sub, coerce=coerce)) for p, sub in schema.get("patternProperties", {}).items()]
        name_fits = self._trial(schema["propertyNames"]) if "propertyNames" in schema else None
        dependent = [(k, tuple(v)) for k, v in schema.get("dependentRequired", {}).items()]
        allowed = ", ".join(sorted(props))
        as_object = _type_check(["object"], coerce)
        fast = _flat_types(schema)

        def check_object(v: Any, path: str, errors: list[str]) -> Any:
            if fast is not None and type(v) is dict:  # flat schemas of primitives: one dict lookup a key
                for name in required:
                    if name not in v:
                        break
                else:
                    for name, item in v.items():
                        kinds = fast.get(name)
                        if kinds is None or type(item) not in kinds:
                            break
                    else:
                        return v
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
            for name, needs in dependent:
                if name in v:
                    for other in needs:
                        if other not in v:
                            errors.append(f"missing argument {prefix + other!r} (required with {prefix + name!r})")
            out = v
            for name, item in v.items():
                check = props.get(name)
                matched = [c for rx, c in patterns if isinstance(name, str) and rx.search(name)] if patterns else ()
                if name_fits is not None and not name_fits(name, prefix + str(name)):
                    errors.append(f"argument name {prefix + str(name)!r} is not allowed")
                if check is None and not matched:
                    if not isinstance(name, str):
                        errors.append(f"argument names must be strings, got {_got(name)}")
                        continue
                    if extra is False:
                        from hermes_nb.tools.schema.lint import did_you_mean  # the error path only

                        errors.append(f"unknown argument {prefix + name!r}{did_you_mean(name, props)} "
                                      f"(allowed: {allowed or 'none'})")
                        continue
                    if extra_check is None:
                        continue
                    check = extra_check
                where = prefix + name if prefix else name
                new = check(item, where, errors) if check is not None else item
                for pattern_check in matched:
                    new = pattern_check(new, where, errors)
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
        contains = self._trial(schema["contains"]) if "contains" in schema else None
        least, most = schema.get("minContains", 1), schema.get("maxContains")
        shown = _describe(schema["contains"]) if isinstance(schema.get("contains"), dict) else "matching"

        def check_array(v: Any, path: str, errors: list[str]) -> Any:
            if not isinstance(v, list | tuple):
                return v
            if contains is not None:
                n = sum(1 for i, item in enumerate(v) if contains(item, f"{path}[{i}]"))
                if n < least:
                    errors.append(f"{_where(path)} must contain at least {_items(least)} that {'is' if least == 1 else 'are'} {shown}, got {n}")
                if most is not None and n > most:
                    errors.append(f"{_where(path)} must contain at most {_items(most)} that {'is' if most == 1 else 'are'} {shown}, got {n}")
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

    def _any_of(self, branches: list, coerce: bool, *, exactly_one: bool) -> Check:
        """anyOf, or oneOf with ``exactly_one``: an exact fit wins over a coerced one, and for oneOf the
        value must fit exactly one branch (two exact fits, or two coerced ones, are an error)."""
        exact = [self.compile(b, coerce=False) for b in branches]
        loose = [self.compile(b, coerce=True) for b in branches] if coerce else []
        kinds = [_branch_kinds(b) for b in branches]
        want = " or ".join(dict.fromkeys(_describe(b) for b in branches))

        def fits(checks: list[Check], v: Any, path: str, found: list[list[str]]) -> list[Any]:
            hits = []
            for check in checks:
                branch_errors: list[str] = []
                new = check(v, path, branch_errors)
                if not branch_errors:
                    hits.append(new)
                    if not exactly_one:
                        break
                found.append(branch_errors)
            return hits

        def check_any(v: Any, path: str, errors: list[str]) -> Any:
            found: list[list[str]] = []
            for checks in (exact, loose):
                hits = fits(checks, v, path, found)
                if len(hits) == 1 or (hits and not exactly_one):
                    return hits[0]
                if len(hits) > 1:
                    errors.append(f"{_where(path)} must match exactly one of {want}, but matches {len(hits)}")
                    return v
            kind = _json_type(v)
            fitting = [i for i, ks in enumerate(kinds) if ks is None or kind in ks
                       or (kind == "integer" and "number" in ks)]
            if len(fitting) == 1:  # the value has the right shape for one form: say what is wrong inside
                errors.extend(found[fitting[0] - len(branches)])
            else:
                errors.append(f"{_where(path)} must be {want}, got {_got(v)}")
            return v

        return check_any


_PLAIN = frozenset({"type", "description", "title", "default", "examples"})


def _flat_types(schema: dict) -> dict[str, frozenset[type]] | None:
    """``{name: exact Python types}`` when every property is just a ``type`` (floats excluded: they need a
    finiteness check) and nothing else about the object needs checking; else None (the general path)."""
    if any(k in schema for k in ("patternProperties", "propertyNames", "dependentRequired")):
        return None
    out: dict[str, frozenset[type]] = {}
    for name, sub in schema.get("properties", {}).items():
        if not isinstance(sub, dict) or not sub.keys() <= _PLAIN or "type" not in sub:
            return None
        kinds = [sub["type"]] if isinstance(sub["type"], str) else sub["type"]
        if not isinstance(kinds, list) or any(k not in _FAST_TYPES for k in kinds):
            return None
        out[name] = frozenset(t for k in kinds for t in _FAST_TYPES[k] if t is not float)
    return out


def _regex(pattern: Any) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except (re.error, TypeError) as exc:
        raise ToolSchemaError(f"invalid pattern {pattern!r}: {exc}") from None


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
