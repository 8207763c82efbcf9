"""The ``hermes_tools`` module an ``execute_code`` script imports: one function per tool of its run.

``build_module(definitions, call)`` makes a fresh module from the OpenAI definitions the run offers: each
function has the tool's parameters as a typed ``inspect.Signature`` (required ones first; JSON types as
Python annotations), the tool's description as its docstring, and calling it is ``call(name, args)`` with
exactly the arguments given. Nothing is generated as source text and executed: a tool's name, parameters
and description come from MCP servers and plugins, so they are data here, never code.

Names that are not Python identifiers are spelled as ones (``get-weather`` → ``get_weather``,
a parameter ``from`` → ``from_``); the function still calls the tool by its real name.
"""

from __future__ import annotations

import functools
import inspect
import keyword
import operator
import re
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["MODULE_NAME", "build_module", "python_name", "signature_line"]

MODULE_NAME = "hermes_tools"
_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list,
                               "object": dict, "null": type(None)}


def python_name(name: str) -> str:
    """``name`` as a Python identifier: other characters become ``_``; a keyword or a leading digit gets ``_``."""
    text = re.sub(r"\W", "_", name, flags=re.ASCII) or "_"
    if text[0].isdigit():
        text = "_" + text
    return text + "_" if keyword.iskeyword(text) or keyword.issoftkeyword(text) else text


def _annotation(schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
    found = [_JSON_TYPES[k] for k in kinds if k in _JSON_TYPES]
    if not found:
        return Any
    return functools.reduce(operator.or_, found) if len(found) > 1 else found[0]


def _signature(parameters: Mapping[str, Any]) -> tuple[inspect.Signature, dict[str, str]]:
    """The function's signature and its parameter names → the schema's property names.

    A required property with a ``default`` (``patch``'s ``mode``, as Hermes's own helper has it) is optional
    in Python, in its schema place, and sent with its default when left out."""
    props = parameters.get("properties") or {}
    required = {n for n in parameters.get("required") or () if not _has_default(props.get(n))}
    ordered = [n for n in props if n in required] + [n for n in props if n not in required]
    params, names, used = [], {}, set()
    for prop in ordered:
        pyname = python_name(prop)
        while pyname in used:
            pyname += "_"
        used.add(pyname)
        names[pyname] = prop
        sub = props[prop] if isinstance(props[prop], Mapping) else {}
        default = inspect.Parameter.empty if prop in required else sub.get("default")
        params.append(inspect.Parameter(pyname, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                                        annotation=_annotation(sub)))
    return inspect.Signature(params, return_annotation=Any), names


def _has_default(schema: Any) -> bool:
    return isinstance(schema, Mapping) and "default" in schema


def _tool_function(name: str, function: Mapping[str, Any], call: Callable[[str, dict[str, Any]], Any]) -> Any:
    parameters = function.get("parameters") or {}
    signature, names = _signature(parameters)
    required = set(parameters.get("required") or ())
    props = parameters.get("properties") or {}
    defaulted = {n: props[n]["default"] for n in required if _has_default(props.get(n))}

    def tool(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)  # a TypeError naming the argument, as for any function
        # only what the script passed: an optional argument left out (or None) lets the tool's own default apply
        sent = {names[k]: v for k, v in bound.arguments.items() if v is not None or names[k] in required}
        return call(name, {**{k: v for k, v in defaulted.items() if sent.get(k) is None}, **{
            k: v for k, v in sent.items() if not (k in defaulted and v is None)}})

    tool.__name__ = tool.__qualname__ = python_name(name)
    tool.__module__ = MODULE_NAME
    tool.__signature__ = signature  # type: ignore[attr-defined]
    tool.__doc__ = str(function.get("description") or "")
    tool.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()} | {"return": Any}
    return tool


def build_module(definitions: Iterable[Mapping[str, Any]], call: Callable[[str, dict[str, Any]], Any], *,
                 exclude: Iterable[str] = ()) -> types.ModuleType:
    """A new ``hermes_tools`` module with one function per definition (``{"type": "function", "function":
    {...}}``) whose name is not in ``exclude``; two tools spelled alike keep the first (sorted by name)."""
    from hermes_nb.tools.code_execution.helpers import HELPERS

    module = types.ModuleType(MODULE_NAME, "The tools of this agent run, as functions (see help(f)).")
    skip = set(exclude)
    for helper, fn in HELPERS.items():  # Hermes's json_parse, shell_quote, retry: first, so they keep their names
        setattr(module, helper, fn)
    exported: list[str] = list(HELPERS)
    for definition in sorted(definitions, key=lambda d: str(d.get("function", {}).get("name", ""))):
        function = definition.get("function") or {}
        name = function.get("name")
        if not isinstance(name, str) or name in skip:
            continue
        pyname = python_name(name)
        if hasattr(module, pyname):
            continue
        setattr(module, pyname, _tool_function(name, function, call))
        exported.append(pyname)
    module.__all__ = exported  # type: ignore[attr-defined]
    return module


def signature_line(function: Any) -> str:
    """``name(a: str, b: int = 3)`` for the tool list in ``execute_code``'s description."""
    text = str(inspect.signature(function)).replace("NoneType", "None").replace(" -> Any", "")
    return f"{function.__name__}{text}"
