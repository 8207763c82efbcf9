"""Generated code for the schemas most tools have: an object of named primitive arguments, or no arguments.

``fast_validator(parameters, slow)`` returns a function written for that one schema (``exec`` of code
built from the property names, each checked with one ``type(v) is T``), or None when the schema needs
more. Whatever the fast code does not recognise at once (a missing or mistyped argument, an extra name,
a float that must be finite, a value to coerce) goes to ``slow``, the compiled validator, which has the
last word and writes the error messages: the fast path only ever accepts what ``slow`` would accept
unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["fast_validator"]

# Exact Python types per JSON kind that need no further check (float is left out: it must be finite).
_EXACT: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int,), "boolean": (bool,), "array": (list,),
    "object": (dict,), "null": (type(None),)}
_ROOT_WORDS = frozenset({"type", "properties", "required", "additionalProperties", "description", "title",
                         "$schema", "default", "examples"})
_PROPERTY_WORDS = frozenset({"type", "description", "title", "default", "examples"})


def _property_types(parameters: dict[str, Any]) -> dict[str, tuple[type, ...]] | None:
    if not parameters.keys() <= _ROOT_WORDS or parameters.get("type", "object") != "object":
        return None
    if not isinstance(parameters.get("additionalProperties", True), bool):
        return None
    props = parameters.get("properties", {})
    if not isinstance(props, dict):
        return None
    out: dict[str, tuple[type, ...]] = {}
    for name, sub in props.items():
        if not isinstance(name, str) or not isinstance(sub, dict) or not sub.keys() <= _PROPERTY_WORDS:
            return None
        kinds = sub.get("type")
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not isinstance(kinds, list) or not kinds or any(k not in _EXACT for k in kinds):
            return None
        out[name] = tuple(dict.fromkeys(t for k in kinds for t in _EXACT[k]))
    return out


def fast_validator(parameters: dict[str, Any], slow: Callable[[dict], dict]) -> Callable[[dict], dict] | None:
    """A validator generated for ``parameters`` that falls back to ``slow``; None when it would not help."""
    types = _property_types(parameters)
    if types is None:
        return None
    required = parameters.get("required", [])
    if not isinstance(required, list) or any(r not in types for r in required) or len(set(required)) != len(required):
        return None  # a required name without a property: the compiled path says what is wrong
    if not types:
        def validate_empty(args: dict) -> dict:
            if type(args) is dict and not args:
                return args
            return slow(args)

        return validate_empty
    shape = (tuple(types.items()), tuple(required))
    make = _factories.get(shape)
    if make is None:
        make = _factories[shape] = _factory(types, required)
    return make(slow)


#: Generated factories by schema shape (property names, their types, the required names): many tools share
#: a shape, and compiling code costs far more than calling a factory.
_factories: dict[Any, Callable[[Callable[[dict], dict]], Callable[[dict], dict]]] = {}


def _factory(types: dict[str, tuple[type, ...]], required: list[str]) -> Callable[..., Callable[[dict], dict]]:
    consts: dict[str, Any] = {}
    lines = ["def make(slow):", " def validate(args):", "    if type(args) is not dict:", "        return slow(args)"]
    optional = [name for name in types if name not in required]
    if optional:
        lines.append(f"    known = {len(required)}")
    for i, name in enumerate(types):
        kinds = types[name]
        test = f"type(v) is not T{i}" if len(kinds) == 1 else f"type(v) not in T{i}"
        consts[f"T{i}"] = kinds[0] if len(kinds) == 1 else frozenset(kinds)
        key = repr(name)  # a str literal: repr of a str is valid Python for any content
        if name in required:
            lines += [f"    if {key} not in args:", "        return slow(args)", f"    v = args[{key}]",
                      f"    if {test}:", "        return slow(args)"]
        else:
            lines += [f"    if {key} in args:", f"        v = args[{key}]", f"        if {test}:",
                      "            return slow(args)", "        known += 1"]
    count = "known" if optional else str(len(required))
    lines += [f"    if len(args) != {count}:", "        return slow(args)", "    return args", " return validate"]
    namespace: dict[str, Any] = dict(consts)
    exec(compile("\n".join(lines), f"<validator {sorted(types)}>", "exec"), namespace)  # our code, names via repr
    make: Callable[..., Callable[[dict], dict]] = namespace["make"]
    return make
