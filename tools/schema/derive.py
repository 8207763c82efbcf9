"""A Python function -> an LLM tool: JSON schema from its signature, type hints and docstring.

``function_schema`` derives the schema, ``make_handler`` adapts the function to Hermes's
``handler(args, **kw)``, and ``@tool`` does both and registers the result. Argument validation lives in
``hermes_nb.tools.schema.validation`` and docstring parsing in ``hermes_nb.tools.schema.docstrings``; both are re-exported here.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import json
import types
import typing
from collections import abc
from collections.abc import Callable
from typing import Any

from hermes_nb.tools.errors import ToolSchemaError
from hermes_nb.tools.schema.docstrings import parse_docstring
from hermes_nb.tools.schema.validation import compile_validator, validate_arguments

__all__ = ["FunctionSchema", "compile_validator", "function_schema", "make_handler", "tool",
           "validate_arguments"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FunctionSchema:
    """What a model needs to call a Python function, derived once from the function."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict_compatible: bool
    is_async: bool
    param_descriptions: dict[str, str] = dataclasses.field(default_factory=dict)

    def to_tool_schema(self) -> dict[str, Any]:
        """The Hermes / OpenAI function schema: ``{"name", "description", "parameters"}``."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def function_schema(fn: Callable[..., Any], *, name: str | None = None,
                    description: str | None = None) -> FunctionSchema:
    """Derive a tool's JSON schema from ``fn``'s signature, type hints and docstring.

    Raises ToolSchemaError naming the parameter when an annotation cannot be expressed as JSON schema.
    """
    # 1. The signature, with annotations resolved (string annotations included).
    target = inspect.unwrap(fn)
    signature = inspect.signature(target)
    hints = _resolved_hints(target, signature)

    # 2. The docstring: a description and per-parameter descriptions (Google, NumPy or reST).
    doc = parse_docstring(inspect.getdoc(target))

    # 3. One property per named parameter; *args and **kwargs are not something a model can fill in.
    defs: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, param.annotation)
        try:
            prop = _type_schema(annotation, defs, ())
        except ToolSchemaError as exc:
            raise ToolSchemaError(f"parameter {param.name!r}: {exc}") from None
        # 4. The description: Annotated metadata first, then the docstring's entry, then the type's own.
        text = _annotated_text(annotation) or doc.params.get(param.name) or prop.pop("description", None)
        prop.pop("description", None)
        if text:
            prop = {"description": text, **prop}
        # 5. Only parameters without defaults are required; JSON-serialisable defaults are shown.
        if param.default is param.empty:
            required.append(param.name)
        elif (default := _json_default(param.default)) is not _NO_DEFAULT:
            prop["default"] = default
        properties[param.name] = prop

    # 6. The parameters object, strict-mode shaped: no unknown keys; shared definitions under $defs.
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "required": required,
                                  "additionalProperties": False}
    if defs:
        parameters["$defs"] = defs

    # 7. Strict mode needs every property required and no keyword it does not support.
    return FunctionSchema(
        name=name or _function_name(fn),
        description=description if description is not None else doc.description,
        parameters=parameters,
        strict_compatible=_strict_ok(parameters),
        is_async=inspect.iscoroutinefunction(target),
        param_descriptions={k: v["description"] for k, v in properties.items() if "description" in v},
    )


def _function_name(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise ToolSchemaError(f"cannot take a tool name from {fn!r}; pass name=...")
    return name


def _resolved_hints(fn: Callable[..., Any], signature: inspect.Signature) -> dict[str, Any]:
    """``get_type_hints``; when a string annotation does not resolve, an error naming its parameter."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if isinstance(fn, type):
        fn = vars(fn).get("__init__", fn)  # a class: its own __init__ if it has one
    elif not (inspect.isfunction(fn) or inspect.ismethod(fn)) and callable(fn):
        fn = type(fn).__call__  # a callable object
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except (NameError, TypeError, AttributeError, SyntaxError) as exc:
        problem = exc
    namespace = getattr(fn, "__globals__", {})
    for param in signature.parameters.values():
        if isinstance(param.annotation, str):
            try:
                eval(param.annotation, namespace)  # what get_type_hints does, one parameter at a time
            except Exception as exc:  # any failure of user code in an annotation is the same mistake
                raise ToolSchemaError(f"parameter {param.name!r}: cannot resolve annotation "
                                      f"{param.annotation!r} ({type(exc).__name__}: {exc})") from None
    raise ToolSchemaError(f"cannot resolve the type hints of {fn!r}: {problem}")


_NO_DEFAULT = object()
_SCALARS: dict[Any, dict[str, Any]] = {str: {"type": "string"}, bool: {"type": "boolean"},
                                       int: {"type": "integer"}, float: {"type": "number"},
                                       type(None): {"type": "null"}, None: {"type": "null"}}
_ARRAYS = {list: {}, set: {"uniqueItems": True}, frozenset: {"uniqueItems": True}}
_ABSTRACT = {abc.Sequence: list, abc.MutableSequence: list, abc.Iterable: list, abc.Collection: list,
             abc.Set: set, abc.MutableSet: set, abc.Mapping: dict, abc.MutableMapping: dict}


def _find(table: dict[Any, Any], tp: Any) -> Any:
    try:
        return table.get(tp)
    except TypeError:  # an unhashable "annotation"
        return None


def _type_schema(tp: Any, defs: dict[str, Any], seen: tuple[Any, ...]) -> dict[str, Any]:
    """The JSON schema of one annotation (``defs`` collects pydantic's shared definitions)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    origin = _find(_ABSTRACT, origin) or origin
    tp = _find(_ABSTRACT, tp) or tp
    if tp is inspect.Parameter.empty or tp is Any or tp is object:
        return {}
    if _find(_SCALARS, tp) is not None:
        return dict(_SCALARS[tp])
    if origin is typing.Annotated:
        schema = _type_schema(args[0], defs, seen)
        text = _annotated_text(tp)
        return {"description": text, **schema} if text else schema
    if origin in (typing.Union, types.UnionType):
        members = [_type_schema(a, defs, seen) for a in args]
        if all(set(m) == {"type"} and isinstance(m["type"], str) for m in members):
            return {"type": [m["type"] for m in members]}
        return {"anyOf": members}
    if origin is typing.Literal:
        return _enum_schema(list(args))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_schema([m.value for m in tp])
    if _find(_ARRAYS, tp) is not None or _find(_ARRAYS, origin) is not None:
        items = _type_schema(args[0], defs, seen) if args else {}
        return {"type": "array", "items": items, **_ARRAYS[origin or tp]}
    if tp is tuple or origin is tuple:  # a fixed tuple needs prefixItems, which strict mode lacks
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            return {"type": "array", "items": _type_schema(args[0], defs, seen) if args else {}}
        heads = [_type_schema(a, defs, seen) for a in args]
        return {"type": "array", "prefixItems": heads, "minItems": len(heads), "maxItems": len(heads)}
    if tp is dict or origin is dict:
        if args and args[0] is not str:
            raise ToolSchemaError(f"cannot express type {_type_name(tp)} as JSON schema (keys must be str)")
        return {"type": "object", "additionalProperties": _type_schema(args[1], defs, seen)} if args else {
            "type": "object"}
    if any(tp is s for s in seen):
        raise ToolSchemaError(f"cannot express recursive type {_type_name(tp)} as JSON schema")
    if typing.is_typeddict(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        return _object_schema(tp, hints, sorted(tp.__required_keys__, key=list(hints).index), {}, defs, seen)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp, include_extras=True)
        fields = [f for f in dataclasses.fields(tp) if f.init]
        defaults = {f.name: f.default for f in fields if f.default is not dataclasses.MISSING}
        required = [f.name for f in fields if f.name not in defaults and f.default_factory is dataclasses.MISSING]
        return _object_schema(tp, {f.name: hints[f.name] for f in fields}, required, defaults, defs, seen)
    if isinstance(tp, type) and hasattr(tp, "model_json_schema"):  # pydantic v2, imported by its user
        return _pydantic_schema(tp, defs)
    if isinstance(tp, typing.NewType):
        return _type_schema(tp.__supertype__, defs, seen)
    raise ToolSchemaError(f"cannot express type {_type_name(tp)} as JSON schema")


def _annotated_text(tp: Any) -> str | None:
    """A description in ``Annotated[T, "text"]`` (or a metadata object with a ``description``)."""
    if typing.get_origin(tp) is not typing.Annotated:
        return None
    texts = [m if isinstance(m, str) else getattr(m, "description", None) for m in typing.get_args(tp)[1:]]
    return next((t for t in texts if isinstance(t, str) and t), None)


def _type_name(tp: Any) -> str:
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    values = [v.value if isinstance(v, enum.Enum) else v for v in values]
    kinds = list(dict.fromkeys(_SCALARS[type(v)]["type"] for v in values if type(v) in _SCALARS))
    if len(kinds) < len({type(v) for v in values}):
        raise ToolSchemaError(f"cannot express literal values {values!r} as JSON schema")
    return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}


def _object_schema(tp: type, hints: dict[str, Any], required: list[str], defaults: dict[str, Any],
                   defs: dict[str, Any], seen: tuple[Any, ...]) -> dict[str, Any]:
    doc = parse_docstring(tp.__doc__ if tp.__doc__ and not tp.__doc__.startswith(tp.__name__ + "(") else None)
    properties = {}
    for key, hint in hints.items():
        try:
            prop = _type_schema(hint, defs, (*seen, tp))
        except ToolSchemaError as exc:
            raise ToolSchemaError(f"field {tp.__name__}.{key}: {exc}") from None
        if "description" not in prop and doc.params.get(key):
            prop = {"description": doc.params[key], **prop}
        if key in defaults and (default := _json_default(defaults[key])) is not _NO_DEFAULT:
            prop["default"] = default
        properties[key] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": required,
                              "additionalProperties": False}
    return {"description": doc.description, **schema} if doc.description else schema


def _pydantic_schema(model: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """Pydantic's own schema, its ``$defs`` hoisted to the parameters object, objects closed."""
    schema = model.model_json_schema(ref_template="#/$defs/{model}")
    for key, sub in schema.pop("$defs", {}).items():
        if defs.setdefault(key, sub) != sub:
            raise ToolSchemaError(f"two different models are both named {key!r}")
    _close_objects(schema)
    for sub in defs.values():
        _close_objects(sub)
    return schema


def _close_objects(schema: Any) -> None:
    """Add ``additionalProperties: false`` to object schemas that list properties and say nothing else."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" and "properties" in schema:
            schema.setdefault("additionalProperties", False)
        for value in schema.values():
            _close_objects(value)
    elif isinstance(schema, list):
        for value in schema:
            _close_objects(value)


def _json_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        return _NO_DEFAULT


_STRICT_UNSUPPORTED = {"prefixItems", "uniqueItems", "allOf", "not", "if", "then", "else",
                       "patternProperties", "dependentRequired", "dependentSchemas"}


def _strict_ok(schema: Any) -> bool:
    """Whether OpenAI strict mode accepts the schema: closed objects, all properties required, typed."""
    if isinstance(schema, list):
        return all(_strict_ok(s) for s in schema)
    if not isinstance(schema, dict):
        return True
    if _STRICT_UNSUPPORTED & schema.keys():
        return False
    if not ({"type", "$ref", "anyOf", "enum", "const"} & schema.keys()):
        return False  # untyped ("Any") values cannot be decoded strictly
    if schema.get("type") == "object" or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required", ())) != set(schema.get("properties", {})):
            return False
    nested = [v for k, v in schema.items() if k in ("properties", "$defs")]
    children = [s for group in nested for s in group.values()]
    children += [schema[k] for k in ("items", "anyOf", "oneOf") if k in schema]
    return all(_strict_ok(s) for s in children)


def make_handler(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Adapt ``fn(**args)`` to Hermes's ``handler(args: dict, **kw)``; keeps ``async def`` async.

    Keyword arguments from the dispatcher (e.g. ``task_id``) reach ``fn`` only if it accepts them.
    """
    params = inspect.signature(fn).parameters.values()
    convert = _argument_converters(fn)
    if convert:
        fn = _converting(fn, convert)
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    positional = [p.name for p in params if p.kind is p.POSITIONAL_ONLY]

    def split(args: dict, kw: dict) -> tuple[list[Any], dict[str, Any]]:
        extra = kw if takes_any else {k: v for k, v in kw.items() if k in named}
        rest = {**args, **extra}
        return [rest.pop(n) for n in positional if n in rest], rest

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def async_handler(args: dict, **kw: Any) -> Any:
            if not kw and not positional:
                return await fn(**(args or {}))
            pos, rest = split(args or {}, kw)
            return await fn(*pos, **rest)
        return async_handler

    @functools.wraps(fn)
    def handler(args: dict, **kw: Any) -> Any:
        if not kw and not positional:  # the common case, kept cheap
            return fn(**(args or {}))
        pos, rest = split(args or {}, kw)
        return fn(*pos, **rest)
    return handler


def _argument_converters(fn: Callable[..., Any]) -> dict[str, Callable[[Any], Any]]:
    """Parameters annotated with a dataclass, pydantic model or Enum get instances, not plain JSON."""
    import dataclasses
    import enum
    import typing

    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable annotations were already reported by function_schema
        return {}
    out: dict[str, Callable[[Any], Any]] = {}
    for pname, tp in hints.items():
        if pname == "return":
            continue
        args = typing.get_args(tp)
        if typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args:
            rest = [a for a in args if a is not type(None)]
            tp = rest[0] if len(rest) == 1 else tp
        if not isinstance(tp, type):
            continue
        if dataclasses.is_dataclass(tp):
            out[pname] = functools.partial(_from_dict, tp)
        elif hasattr(tp, "model_validate"):
            out[pname] = functools.partial(_from_dict, tp.model_validate)
        elif issubclass(tp, enum.Enum):
            out[pname] = functools.partial(_to_enum, tp)
    return out


def _from_dict(make: Callable[..., Any], value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    return make(value) if getattr(make, "__name__", "") == "model_validate" else make(**value)


def _to_enum(enum_type: Callable[[Any], Any], value: Any) -> Any:
    return value if value is None else enum_type(value)


def _converting(fn: Callable[..., Any], convert: dict[str, Callable[[Any], Any]]) -> Callable[..., Any]:
    def convert_all(kwargs: dict[str, Any]) -> dict[str, Any]:
        return {k: convert[k](v) if k in convert else v for k, v in kwargs.items()}

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def async_converted(*args: Any, **kwargs: Any) -> Any:
            return await fn(*args, **convert_all(kwargs))
        return async_converted

    @functools.wraps(fn)
    def converted(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **convert_all(kwargs))
    return converted


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None, toolset: str = "notebook",
         emoji: str = "", description: str | None = None, check_fn: Callable[[], Any] | None = None,
         requires_env: Any = None, max_result_size_chars: float | None = None, read_only: bool = False,
         interactive: bool = False, path_params: Any = (), registry: Any = None, examples: Any = ()) -> Any:
    """Register a plain function as a tool: ``@tool`` or ``@tool(toolset="x", ...)``.

    Derives the schema, registers with ``source="notebook"`` and returns the function unchanged, with
    ``__hermes_tool__`` set to the tool's name. ``examples``: ``(args, expected)`` pairs for
    ``%tools test``, where ``expected`` is the result or a predicate on it.
    """
    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        spec = function_schema(f, name=name, description=description)
        target = registry
        if target is None:
            from hermes_nb.tools.registry import registry as target
        target.register(
            spec.name, toolset, spec.to_tool_schema(), make_handler(f), check_fn=check_fn,
            requires_env=requires_env, is_async=spec.is_async, description=spec.description, emoji=emoji,
            max_result_size_chars=max_result_size_chars, read_only=read_only, interactive=interactive,
            path_params=tuple(path_params), source="notebook", origin=getattr(f, "__module__", None),
            examples=examples,
        )
        f.__hermes_tool__ = spec.name  # type: ignore[attr-defined]
        return f

    return decorate(fn) if fn is not None else decorate
