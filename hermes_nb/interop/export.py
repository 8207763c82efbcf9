"""``%tools export``: notebook cell tools written out as a Hermes plugin or a Hermes-style tool file.

A plugin is the layout Hermes's plugin loader reads (``hermes_cli/plugins.py``): a folder holding
``plugin.yaml`` and an ``__init__.py`` whose ``register(ctx)`` calls ``ctx.register_tool(...)``. A tool
file is one module whose top level calls ``registry.register(...)`` after
``from tools.registry import registry``. Both carry each tool's function source, its schema, toolset,
emoji and flags, and load unchanged into Hermes and back into hermes_nb: hermes_nb-only flags
(``read_only``, ``path_params``...) are passed only to a ``register`` that accepts them.

What the exporter carries besides the function: imports of modules and of names from modules, and other
top-level functions of the notebook the tool calls (themselves checked the same way). Everything else the
function reads from the notebook (variables, classes, closures, a ``--check`` expression) is notebook
state the exported code would not have: that is a one-line ``ExportError`` naming what to change.
"""

from __future__ import annotations

import ast
import builtins
import dis
import inspect
import pprint
import re
import shlex
import textwrap
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_nb.tools.registry import ToolEntry, ToolRegistry
from hermes_nb.tools.registry import registry as global_registry

__all__ = ["ExportError", "Exported", "export_command", "export_plugin", "export_tool_file"]

_PLUGIN_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
#: ToolEntry fields a register() call takes, beyond name/toolset/schema/handler.
_FLAGS = ("read_only", "interactive", "path_params", "needs_approval")


class ExportError(ValueError):
    """What keeps a tool from being exported, and what to change (one line)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Exported:
    """What ``%tools export`` wrote."""

    kind: str  # "plugin" or "file"
    path: Path
    tools: tuple[str, ...]
    plugin_name: str = ""

    def text(self) -> str:
        names = ", ".join(self.tools)
        if self.kind == "plugin":
            return (f"wrote Hermes plugin {self.plugin_name!r} to {self.path} ({names}). In Hermes, copy the "
                    f"folder to $HERMES_HOME/plugins/ and add {self.plugin_name!r} to plugins.enabled in "
                    f"$HERMES_HOME/config.yaml; in hermes_nb, copy it to $HERMES_NB_HOME/plugins/.")
        return (f"wrote Hermes tool file {self.path} ({names}). hermes_nb loads it from $HERMES_NB_HOME/tools/; "
                f"in Hermes it is a tool module (from tools.registry import registry).")

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text())


# -- what a tool needs, gathered from the notebook ---------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _Carried:
    imports: tuple[str, ...]
    functions: tuple[tuple[str, str], ...]  # (name, source), helpers first


def _function_of(entry: ToolEntry) -> types.FunctionType:
    if entry.source != "notebook":
        raise ExportError(f"{entry.name} is a {entry.source} tool; only %%tool cell tools can be exported")
    if entry.check_fn is not None:
        raise ExportError(f"{entry.name} has a --check expression, which reads notebook state; "
                          f"re-run its %%tool cell without --check (use --requires-env for what it needs)")
    fn = inspect.unwrap(entry.handler)
    if not isinstance(fn, types.FunctionType):
        raise ExportError(f"{entry.name}: its handler is a {type(fn).__name__}, not a function; "
                          f"define it with def in a %%tool cell")
    return fn


def _source(fn: types.FunctionType, who: str) -> str:
    if fn.__name__ == "<lambda>":
        raise ExportError(f"{who} is a lambda; write it as a def so its source can be exported")
    if fn.__code__.co_freevars:
        raise ExportError(f"{who} closes over {', '.join(fn.__code__.co_freevars)} from an enclosing function; "
                          f"define it at the top level of a cell and pass those values as parameters")
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        raise ExportError(f"the source of {who} is not available; define it in a notebook cell") from None
    node = ast.parse(source).body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != fn.__name__:
        raise ExportError(f"the source of {who} is not a plain def; define it with def at a cell's top level")
    if node.decorator_list:
        raise ExportError(f"{who} has a decorator; remove it (the exporter carries plain functions only)")
    if any(p.kind is p.POSITIONAL_ONLY for p in inspect.signature(fn).parameters.values()):
        raise ExportError(f"{who} has positional-only parameters; make them ordinary parameters")
    from hermes_nb.tools.schema.derive import _argument_converters  # the conversions make_handler adds

    converted = sorted(_argument_converters(fn))
    if converted:
        raise ExportError(f"{who}: parameter {converted[0]!r} is a dataclass, model or Enum that hermes_nb builds "
                          f"from the JSON, which the exported tool would not; annotate it with dict or str")
    return source


def _global_reads(fn: types.FunctionType, source: str) -> list[str]:
    """Global names the function reads when called, and names its defaults need when defined."""
    names: list[str] = []
    stack = [fn.__code__]
    while stack:
        code = stack.pop()
        for ins in dis.get_instructions(code):
            if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
                raise ExportError(f"{fn.__name__} assigns the notebook global {ins.argval!r}; "
                                  f"return the value instead")
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval not in names:
                names.append(ins.argval)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    node = ast.parse(source).body[0]
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    for default in defaults:
        for sub in ast.walk(default):
            if isinstance(sub, ast.Name) and sub.id not in names:
                names.append(sub.id)
    return names


def _import_line(name: str, value: Any) -> str | None:
    """``import x`` / ``from m import y`` giving ``name`` this very object, or None."""
    if isinstance(value, types.ModuleType):
        mod = value.__name__
        if mod == "__main__" or mod.startswith("hermes_nb_"):
            return None
        if name == mod:
            return f"import {mod}"
        if "." in mod and mod.rpartition(".")[2] == name:
            return f"from {mod.rpartition('.')[0]} import {name}"
        return f"import {mod} as {name}"
    owner = getattr(value, "__module__", None)
    qual = getattr(value, "__qualname__", None)
    if not isinstance(owner, str) or owner in ("__main__", "builtins") or not isinstance(qual, str) or "." in qual:
        return None
    import importlib

    try:
        if getattr(importlib.import_module(owner), qual) is not value:
            return None
    except (ImportError, AttributeError):
        return None
    return f"from {owner} import {qual}" + (f" as {name}" if name != qual else "")


def _gather(fns: list[tuple[str, types.FunctionType]]) -> _Carried:
    imports: list[str] = []
    done: dict[str, str] = {}  # function name -> source, in the order they must be written
    seen: set[int] = set()

    def visit(fn: types.FunctionType, who: str) -> None:
        if id(fn) in seen:
            return
        seen.add(id(fn))
        source = _source(fn, who)
        namespace = fn.__globals__
        for name in _global_reads(fn, source):
            if name not in namespace:
                if hasattr(builtins, name):
                    continue
                raise ExportError(f"{who} uses {name!r}, which is not defined in the notebook; "
                                  f"define or import it first")
            value = namespace[name]
            line = _import_line(name, value)
            if line is not None:
                if line not in imports:
                    imports.append(line)
            elif isinstance(value, types.FunctionType) and value.__module__ == fn.__module__:
                visit(value, f"{name} (used by {fn.__name__})")
            elif isinstance(value, type):
                raise ExportError(f"{who} uses the class {name!r} defined in the notebook; "
                                  f"move it into a module you import, or into the function")
            else:
                raise ExportError(f"{who} reads the notebook variable {name!r} ({type(value).__name__}); "
                                  f"pass it as a parameter or define it inside the function")
        if done.get(fn.__name__, source) != source:
            raise ExportError(f"two different functions are named {fn.__name__!r}; rename one")
        done[fn.__name__] = source

    for tool_name, fn in fns:
        visit(fn, tool_name)
    return _Carried(imports=tuple(imports), functions=tuple(done.items()))


# -- writing ------------------------------------------------------------------------------------------

_HELPERS = '''

def _accepted(register, options):
    """The options ``register`` takes: hermes_nb's take every flag, Hermes's only its own."""
    params = inspect.signature(register).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return options
    return {k: v for k, v in options.items() if k in params}


def _call(fn, args, kw):
    """``fn(**args)``, plus the dispatcher's keywords (task_id...) only if ``fn`` takes them."""
    params = inspect.signature(fn).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        kw = {k: v for k, v in kw.items() if k in params}
    return fn(**{**(args or {}), **kw})


def _as_text(result):
    """The result as the model receives it in the notebook: a str as is, anything else as JSON."""
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return json.dumps({"error": f"Tool returned a {type(result).__name__}, which is not "
                                    f"JSON-serialisable ({reason}); return a str or JSON data"},
                          ensure_ascii=False)
'''


def _handler_source(entry: ToolEntry, fn: types.FunctionType) -> str:
    ident = _ident(entry.name)
    if inspect.iscoroutinefunction(fn):
        return (f"\n\nasync def _handle_{ident}(args, **kw):\n"
                f"    return _as_text(await _call({fn.__name__}, args, kw))\n")
    return f"\n\ndef _handle_{ident}(args, **kw):\n    return _as_text(_call({fn.__name__}, args, kw))\n"


def _ident(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _options(entry: ToolEntry, fn: types.FunctionType) -> str:
    """The register() keyword arguments of one tool, as Python source (the handler by name)."""
    opts: dict[str, Any] = {"name": entry.name, "toolset": entry.toolset, "schema": dict(entry.schema)}
    if entry.emoji:
        opts["emoji"] = entry.emoji
    if entry.requires_env:
        opts["requires_env"] = list(entry.requires_env)
    if inspect.iscoroutinefunction(fn):
        opts["is_async"] = True
    if entry.max_result_size_chars is not None and entry.max_result_size_chars != float("inf"):
        opts["max_result_size_chars"] = entry.max_result_size_chars
    for flag in _FLAGS:
        value = getattr(entry, flag)
        if value:
            opts[flag] = list(value) if isinstance(value, tuple) else value
    opts["handler"] = _Raw(f"_handle_{_ident(entry.name)}")
    lines = ["{"]
    for key, value in opts.items():
        text = repr(value) if isinstance(value, _Raw) else pprint.pformat(value, width=96, sort_dicts=False)
        lines.append(f"    {key!r}: " + text.replace("\n", "\n" + " " * (len(repr(key)) + 6)) + ",")
    return "\n".join([*lines, "}"])


class _Raw(str):
    """Source text written as is (a handler's name), not as a string literal."""

    def __repr__(self) -> str:
        return str(self)


def _module(entries: list[ToolEntry], header: str, *, tool_file: bool) -> str:
    fns = [(e.name, _function_of(e)) for e in entries]
    carried = _gather(fns)
    parts = [f'"""{header}"""\n\nfrom __future__ import annotations\n\nimport inspect\nimport json\n']
    if tool_file:
        parts.append("\nfrom tools.registry import registry\n")
    if carried.imports:
        parts.append("\n" + "\n".join(carried.imports) + "\n")
    for _name, source in carried.functions:
        parts.append("\n\n" + source.rstrip() + "\n")
    parts.append(_HELPERS)
    for entry, (_, fn) in zip(entries, fns, strict=True):
        parts.append(_handler_source(entry, fn))
    if tool_file:
        for entry, (_, fn) in zip(entries, fns, strict=True):
            parts.append(f"\n\nregistry.register(**_accepted(registry.register, {_options(entry, fn)}))\n")
    else:
        tools = ",\n".join(textwrap.indent(_options(e, fn), "    ") for e, (_, fn) in zip(entries, fns, strict=True))
        parts.append(f"\n\nTOOLS = [\n{tools},\n]\n")
        parts.append("\n\ndef register(ctx):\n    for tool in TOOLS:\n"
                     "        ctx.register_tool(**_accepted(ctx.register_tool, tool))\n")
    text = "".join(parts)
    compile(text, "<export>", "exec")  # a bug of ours, never the person's: fail before writing
    return text


def _entries(names: list[str], reg: ToolRegistry) -> list[ToolEntry]:
    if not names:
        raise ExportError("name at least one tool to export")
    out = []
    for name in dict.fromkeys(names):
        entry = reg.get_entry(name)
        if entry is None:
            raise ExportError(f"no tool named {name!r} (see %tools)")
        out.append(entry)
    return out


def _writable(path: Path, force: bool) -> None:
    if path.exists() and not force:
        raise ExportError(f"{path} exists; pass --force to overwrite it")


def export_plugin(names: list[str], folder: str | Path, *, force: bool = False,
                  reg: ToolRegistry | None = None) -> Exported:
    """Write the tools ``names`` as a Hermes plugin in ``folder`` (its name is the plugin's)."""
    folder = Path(folder).expanduser()
    plugin = folder.name
    if not _PLUGIN_NAME.match(plugin):
        raise ExportError(f"the plugin folder's name {plugin!r} is the plugin's name: use letters, digits, - and _")
    entries = _entries(names, reg or global_registry)
    source = _module(entries, f"Hermes plugin {plugin!r}: notebook tools exported by hermes_nb's %tools export.",
                     tool_file=False)
    for part in ("__init__.py", "plugin.yaml"):
        _writable(folder / part, force)
    import yaml

    manifest = {"name": plugin, "version": "0.1.0",
                "description": f"Notebook tools exported by hermes_nb: {', '.join(e.name for e in entries)}",
                "kind": "standalone", "provides_tools": [e.name for e in entries]}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True),
                                        encoding="utf-8")
    (folder / "__init__.py").write_text(source, encoding="utf-8")
    return Exported(kind="plugin", path=folder, tools=tuple(e.name for e in entries), plugin_name=plugin)


def export_tool_file(names: list[str], path: str | Path, *, force: bool = False,
                     reg: ToolRegistry | None = None) -> Exported:
    """Write the tools ``names`` as one Hermes-style tool file (``registry.register(...)`` at top level)."""
    path = Path(path).expanduser()
    if path.suffix != ".py":
        raise ExportError(f"{path}: a tool file's name must end in .py")
    entries = _entries(names, reg or global_registry)
    source = _module(entries, "Hermes tool file: notebook tools exported by hermes_nb's %tools export.",
                     tool_file=True)
    _writable(path, force)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    return Exported(kind="file", path=path, tools=tuple(e.name for e in entries))


def export_command(line: str) -> Exported:
    """``NAME [NAME ...] (--plugin DIR | --file PATH) [--force]``, as ``%tools export`` takes it."""
    import argparse

    parser = argparse.ArgumentParser(prog="%tools export", add_help=False, exit_on_error=False)
    parser.add_argument("names", nargs="*")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--plugin", metavar="DIR")
    where.add_argument("--file", metavar="PATH")
    parser.add_argument("--force", action="store_true")
    try:
        args, unknown = parser.parse_known_args(shlex.split(line))
    except (argparse.ArgumentError, ValueError) as exc:
        raise ExportError(f"{exc}; usage: %tools export NAME [NAME ...] --plugin DIR | --file PATH [--force]") from None
    if unknown:
        raise ExportError(f"unknown option {unknown[0]!r}; use --plugin DIR, --file PATH or --force")
    if bool(args.plugin) == bool(args.file):
        raise ExportError("say where: --plugin DIR (a Hermes plugin folder) or --file PATH (one tool file)")
    if args.plugin:
        return export_plugin(args.names, args.plugin, force=args.force)
    return export_tool_file(args.names, args.file, force=args.force)
