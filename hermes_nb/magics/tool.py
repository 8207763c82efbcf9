"""``%%tool`` without IPython plumbing: find the cell's function, build its check, register it."""

from __future__ import annotations

import ast
import asyncio
import functools
import inspect
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError

from hermes_nb.tools.errors import ToolSchemaError
from hermes_nb.tools.registry import ToolEntry, ToolRegistry

__all__ = ["CellToolOptions", "defined_functions", "make_check", "pick_function", "register_function"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CellToolOptions:
    """The ``%%tool`` options, after parsing."""

    name: str | None = None
    #: ``--as``: the tool's name when it differs from the function's
    tool_name: str | None = None
    toolset: str = "notebook"
    emoji: str = ""
    description: str | None = None
    requires_env: tuple[str, ...] = ()
    requires_packages: tuple[str, ...] = ()  # --requires: packages from an index (tools.lazy_deps)
    check: str | None = None
    max_chars: int | None = None
    read_only: bool = False
    interactive: bool = False
    path_params: tuple[str, ...] = ()
    examples: tuple[Any, ...] = ()  # ToolExample records from --example
    #: ``--defer``: behind tool search's bridge when it is on (``hermes_nb.tools.search``)
    defer: bool = False


def defined_functions(source: str) -> list[str] | None:
    """Names of the top-level ``def``/``async def`` in ``source`` (Python), or None if it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def pick_function(names: list[str], wanted: str | None) -> str:
    """The function the cell turns into a tool: the only one, or ``wanted``; UsageError otherwise."""
    if wanted:
        if wanted not in names:
            found = ", ".join(names) or "none"
            raise UsageError(f"%%tool --name {wanted}: the cell defines no function {wanted!r} (found: {found})")
        return wanted
    if not names:
        raise UsageError("%%tool: the cell defines no function; write one top-level `def` (or `async def`)")
    if len(set(names)) > 1:
        raise UsageError(f"%%tool: the cell defines {len(set(names))} functions ({', '.join(names)}); "
                         f"pick one with --name")
    return names[0]


def make_check(expr: str, namespace: Mapping[str, Any]) -> Callable[[], Any]:
    """A check_fn evaluating ``expr`` lazily in ``namespace``; its name is the expression (for doctor)."""
    code = compile(expr, "<%%tool --check>", "eval")

    def check() -> Any:
        return eval(code, dict(namespace) if not isinstance(namespace, dict) else namespace)

    check.__name__ = check.__qualname__ = f"`{expr}`"
    return check


def _on_kernel_loop(fn: Callable[..., Any], loop: asyncio.AbstractEventLoop) -> Callable[..., Any]:
    """Run async ``fn`` on the kernel loop from sync code (needs nest_asyncio on that loop)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        coro = fn(*args, **kwargs)
        if loop.is_running() and threading.current_thread() is threading.main_thread():
            return loop.run_until_complete(coro)  # re-entrant thanks to nest_asyncio
        # another thread (dispatch_async's worker, the scheduler): hand the coroutine to the kernel loop
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    return run


def register_function(
    fn: Callable[..., Any],
    options: CellToolOptions,
    *,
    reg: ToolRegistry,
    namespace: Mapping[str, Any],
    kernel_loop: asyncio.AbstractEventLoop | None = None,
) -> ToolEntry:
    """Register ``fn`` as a notebook tool; a user mistake is a one-line UsageError."""
    from hermes_nb.display.asides import watched
    from hermes_nb.tools.schema.derive import function_schema, make_handler
    from hermes_nb.tools.schema.lint import variadic_parameters

    variadic = variadic_parameters(fn)
    if variadic:
        raise UsageError(f"%%tool: {fn.__name__}: a model cannot fill {', '.join(variadic)}; "
                         f"name each parameter, or take a list / dict parameter instead")
    try:
        spec = function_schema(fn, name=options.tool_name or options.name, description=options.description)
    except ToolSchemaError as exc:
        raise UsageError(f"%%tool: {fn.__name__}: {exc}") from None
    existing = reg.get_entry(spec.name)
    if existing is not None and existing.source != "notebook":
        raise UsageError(
            f"%%tool: {spec.name!r} is already a {existing.source} tool (toolset {existing.toolset!r}); "
            f"register yours under another tool name with --as NAME"
        )
    try:
        check = make_check(options.check, namespace) if options.check else None
    except SyntaxError as exc:
        raise UsageError(f"%%tool --check: not a Python expression: {exc.msg}") from None
    if options.defer and options.interactive:
        raise UsageError("%%tool --defer: an --interactive tool asks the person, so it is never deferred")
    is_async = inspect.iscoroutinefunction(fn)
    metadata: dict[str, Any] = {"defer": True} if options.defer else {}
    target = watched(fn, spec.name)  # the person sees its traceback and printed text; the model does not
    if is_async and kernel_loop is not None:
        target, is_async = _on_kernel_loop(target, kernel_loop), False  # the watched one: the aside stays
        metadata["runs_on"] = "kernel loop (nest_asyncio)"
    try:
        return reg.register(
            spec.name, options.toolset, spec.to_tool_schema(), make_handler(target), check_fn=check,
            requires_env=options.requires_env, requires_packages=options.requires_packages, is_async=is_async, description=spec.description,
            emoji=options.emoji, max_result_size_chars=options.max_chars, read_only=options.read_only,
            interactive=options.interactive, path_params=options.path_params, source="notebook",
            origin="cell", override=existing is not None, metadata=metadata, examples=options.examples,
        )
    except (ToolSchemaError, ValueError) as exc:
        raise UsageError(f"%%tool: {exc}") from None
