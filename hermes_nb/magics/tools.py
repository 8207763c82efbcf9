"""``%%tool``, ``%tools`` and ``%toolsets``: parse, call the core, hand the result to display."""

from __future__ import annotations

import os
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import Bool, Float, Int, Unicode

from hermes_nb import _state
from hermes_nb.call_args import parse_call_args
from hermes_nb.display.cards import DEFAULT_MAX_CHARS, Table, availability_text, render_result, tool_card
from hermes_nb.magics import cells
from hermes_nb.magics.arguments import parse_line
from hermes_nb.magics.comments import uncommented
from hermes_nb.magics.tool import CellToolOptions, defined_functions, pick_function, register_function
from hermes_nb.tools.registry import registry

__all__ = ["ToolMagics", "parse_call_args"]


@magics_class
class ToolMagics(Magics):
    """Build, inspect and call LLM tools from notebook cells."""

    default_toolset = Unicode("notebook", help="Toolset of %%tool cells without --toolset.").tag(config=True)
    expand_schemas = Bool(False, help="Show tool cards with the JSON schema expanded.").tag(config=True)
    result_max_chars = Int(DEFAULT_MAX_CHARS, help="Longest result text shown in the notebook.").tag(config=True)
    call_timeout = Float(60.0, help="Seconds %tools call waits for a tool without a timeout of its own "
                                    "(its registry metadata['timeout'] wins).").tag(config=True)

    @magic_arguments(name="%tool")  # usage line: %%tool (IPython adds one "%")
    @argument("--name", help="The function to turn into a tool (required when the cell defines several).")
    @argument("--as", dest="as_name", default=None, metavar="NAME",
              help="Register the function under this tool name (default: the function's name).")
    @argument("--toolset", default=None, help="Toolset of the tool (default: notebook).")
    @argument("--emoji", default="", help="An emoji shown with the tool.")
    @argument("--description", default=None, help="Tool description (default: the docstring's summary).")
    @argument("--requires-env", action="append", default=[], metavar="VAR",
              help="An environment variable the tool needs (repeatable); its value is never shown.")
    @argument("--requires", action="append", default=[], metavar="PACKAGE",
              help="A package the tool needs, e.g. 'duckdb>=1.1' (repeatable); missing ones are offered for install.")
    @argument("--check", default=None, metavar="EXPR",
              help="A Python expression evaluated in the notebook namespace; the tool is available when true.")
    @argument("--max-chars", type=int, default=None, metavar="N", help="Results longer than N chars spill to a file.")
    @argument("--read-only", action="store_true", help="The tool changes nothing (may run beside any call).")
    @argument("--interactive", action="store_true", help="The tool asks the person (its batch runs serially).")
    @argument("--defer", action="store_true",
              help="Deferrable: with tool search on, the model finds it with tool_search instead of its schema.")
    @argument("--path-param", action="append", default=[], metavar="NAME",
              help="An argument holding a file path (repeatable), for safe parallel scheduling.")
    @argument("--example", action="append", default=[], metavar="'ARGS -> RESULT'",
              help="An example call for %%tools test (repeatable): `a=2 b=3 -> 6`.")
    @cell_magic
    @uncommented
    def tool(self, line: str, cell: str) -> Any:
        """Run the cell, then register the function it defines as an LLM tool and show its card.

        The cell runs in the notebook namespace, so the function stays an ordinary Python function.
        Re-running the cell replaces the tools it registered (and moves them when --toolset changed); a
        renamed function's old tool is removed, said in one line.

        Example:

            %%tool --toolset geometry --emoji 📐
            def area(width: float, height: float = 1.0) -> dict:
                '''Area of a rectangle.'''
                return {"area": width * height}
        """
        args = parse_line(self.tool, line, "%%tool")  # an option's quotes are dropped there
        shell = self.shell
        assert shell is not None
        python = shell.transform_cell(cell)
        names = defined_functions(python)
        if names is not None:  # a syntax error is shown by run_cell below, as Python shows it
            fname = pick_function(names, args.name)
        cell_info = cells.current()
        result = cells.body_run(shell, cell)  # under the cell's own number and line numbers (item 7)
        if not result.success or names is None:
            return None  # the error is already shown
        fn = shell.user_ns.get(fname)
        if not callable(fn):
            raise UsageError(f"%%tool: after running the cell, {fname!r} is not a function")
        options = CellToolOptions(
            name=args.name, tool_name=args.as_name, toolset=args.toolset or self.default_toolset, emoji=args.emoji,
            description=args.description, requires_env=tuple(args.requires_env),
            requires_packages=tuple(r.strip() for item in args.requires for r in item.split(",") if r.strip()),
            check=args.check, max_chars=args.max_chars, read_only=args.read_only,
            interactive=args.interactive, path_params=tuple(args.path_param), defer=args.defer,
            examples=_examples(args.example),
        )
        loop = _kernel_loop() if _state.nest_asyncio_enabled else None
        entry = register_function(fn, options, reg=registry, namespace=shell.user_ns, kernel_loop=loop)
        _drop_replaced(cell_info.cell_id, entry.name)
        _state.cell_functions[fname] = (entry.name, fn)  # a plain cell redefining it hears the tool did not change
        # no return value: nothing lands in `_` or Out for a definition cell
        from IPython.display import display

        from hermes_nb.tools.schema.lint import lint_function

        warnings = lint_function(fn, description=entry.description or "", name=entry.name)
        # the kernel never hears of a deleted cell: say how a tool leaves (issue 35)
        leaving = (f"deleting this cell keeps the tool; %tools rm {entry.name} removes it",)
        display(tool_card(entry, expand_schema=self.expand_schemas, warnings=warnings, extra=leaving))
        if entry.requires_packages:
            _offer_install([entry.name])
        return None

    @line_magic
    @uncommented
    def tools(self, line: str) -> Any:
        """Tools in the kernel.

        %tools                     table of every tool (emoji, name, toolset, source, availability)
        %tools show NAME           card with schema, source and scheduling flags
        %tools call NAME {json}    call it as the model would (also: key=value ...); `_` holds the result
        %tools rm NAME             remove a tool
        %tools doctor              why tools are unavailable, and tools that failed to load
        %tools install NAME [...]  install the packages the tools need (after you approve the exact command)
        %tools export NAME [NAME ...] --plugin DIR | --file PATH [--force]
                                   write cell tools as a Hermes plugin folder or one Hermes tool file
        %tools test [NAME ...]     run the tools' examples; a pass/fail table (the report's .results)
        %tools fuzz NAME [--n 200] [--seed S] [--invalid] [--allow-approval]
                                   call the tool with arguments drawn from its schema; shrunk failures

        Example: %tools call area width=3 height=2   (or: %tools call area {"width": 3, "height": 2})
        """
        command, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        if command in ("", "list", "ls"):
            return _tools_table()
        if command == "show":
            return tool_card(_entry(rest, "show"), expand_schema=True, extra=_origin_lines(rest))
        if command == "call":
            name, _, argtext = rest.partition(" ")
            _entry(name, "call")
            return _call(name, parse_call_args(argtext), self.result_max_chars, self.call_timeout)
        if command == "rm":
            _entry(rest, "rm")
            registry.deregister(rest)
            for fname, (tool, _fn) in list(_state.cell_functions.items()):
                if tool == rest:
                    del _state.cell_functions[fname]
            print(f"removed tool {rest}")
            return None
        if command == "doctor":
            table = _doctor()
            lacking = [n for n, a in registry.get_unavailable().items() if a.missing_packages]
            if not lacking:
                return table
            _offer_install(lacking, table)  # the table, then an Install button under it
            return None
        if command == "install":
            return _install(rest.replace(",", " ").split())
        if command == "export":  # parsing and writing live in hermes_nb.interop.export
            from hermes_nb.interop.export import ExportError, export_command

            try:
                return export_command(rest)
            except ExportError as exc:
                raise UsageError(f"%tools export: {exc}") from None
        if command == "test":  # the tools' examples (hermes_nb.evaluation.examples)
            from hermes_nb.evaluation.examples import run_examples

            return run_examples(rest.replace(",", " ").split(), registry)
        if command == "fuzz":  # arguments drawn from the schema (hermes_nb.evaluation.fuzz)
            from hermes_nb.evaluation.fuzz import fuzz_magic

            return fuzz_magic(rest)
        raise UsageError(f"%tools: unknown subcommand {command!r}; use show, call, rm, doctor, install, export, "
                         f"test or fuzz (see %tools?)")

    @line_magic
    @uncommented
    def toolsets(self, line: str) -> Any:
        """Pick the toolsets the model sees.

        %toolsets                  a checkbox per toolset, with its tool count and the number of tools
                                   the model would see (a text table outside a notebook)
        %toolsets NAME [NAME ...]  enable exactly these toolsets (`all` for every one, `default` for the default)

        The default is your own toolsets (%%tool cells, enabled plugins, MCP servers, Hermes's after
        `%hermes on`), followed as they come; the built-ins (file, terminal, code, ...) only when ticked,
        here or for every notebook in config.yaml: `toolsets: {default: [file, terminal]}`.
        In code: hermes_nb.toolsets.select(["geometry", "text"]) (None for all); the picker follows.
        A static record of the selection is shown under the picker, so saved notebooks keep it.

        Example: %toolsets geometry file   (then %toolsets alone shows the picker with those ticked)
        """
        names = line.replace(",", " ").split()
        if names and names[0] in ("-h", "--help"):  # was "unknown toolset '--help'"
            import inspect

            print("%toolsets [NAME ...]\n\n" + (inspect.getdoc(ToolMagics.toolsets) or ""))
            return None
        if any(n.startswith("-") for n in names):
            raise UsageError("%toolsets takes toolset names and no options; %toolsets? shows its help, "
                             "%toolsets alone the picker")
        if names:
            from hermes_nb.selection import select
            from hermes_nb.tools.errors import UnknownToolsetError

            try:
                select(names)
            except UnknownToolsetError as exc:
                raise UsageError(f"%toolsets: {exc}") from None
        from hermes_nb.display.picker import show_picker

        return show_picker(self.shell)


#: The tools each cell registered: re-running a cell replaces all of them.
_CELL_TOOLS = cells.CellTools()


def _drop_replaced(cell_id: str | None, name: str) -> None:
    """Remove the tools this cell registered before and no longer defines (a renamed function), in one line."""
    removed = []
    for old in _CELL_TOOLS.claim(cell_id, {name}):
        entry = registry.get_entry(old)
        if entry is not None and entry.source == "notebook" and entry.origin == "cell":
            registry.deregister(old)
            removed.append(old)
    if removed:
        print(f"removed {', '.join(removed)}: this cell now defines {name}")


def _examples(texts: list[str]) -> tuple[Any, ...]:
    if not texts:
        return ()
    from hermes_nb.evaluation.examples import parse_example

    return tuple(parse_example(t) for t in texts)


def _kernel_loop() -> Any:
    import asyncio

    return asyncio.get_event_loop()


def _entry(name: str, sub: str) -> Any:
    if not name:
        raise UsageError(f"%tools {sub}: name a tool (see %tools)")
    entry = registry.get_entry(name)
    if entry is None:
        from hermes_nb.tools.schema.lint import did_you_mean

        hint = did_you_mean(name, [e.name for e in registry.entries()])
        raise UsageError(f"%tools {sub}: no tool named {name!r}{hint} (see %tools)")
    return entry


def _origin_lines(name: str) -> tuple[str, ...]:
    entry = registry.get_entry(name)
    if entry is None:
        return ()
    lines = [f"origin: {entry.origin}"] if entry.origin else []
    lines += [f"{k}: {v}" for k, v in entry.metadata.items() if isinstance(v, (str, int, float, bool))]
    # a mapping of plain values (an MCP server's annotations: read_only_hint=True, ...) in one line
    lines += [f"{k}: " + ", ".join(f"{a}={b}" for a, b in v.items()) for k, v in entry.metadata.items()
              if isinstance(v, dict) and v and all(isinstance(b, (str, int, float, bool)) for b in v.values())]
    return tuple(lines)


def _tools_table() -> Table:
    rows = tuple(
        (e.emoji, e.name, e.toolset, e.source, availability_text(e)) for e in registry.entries()
    )
    return Table(headers=("", "name", "toolset", "source", "status"), rows=rows,
                 title=f"{len(rows)} tools", empty="no tools registered")


def _doctor() -> Table:
    from hermes_nb.tools.sources.load_report import failures

    rows: list[tuple[str, ...]] = [
        (name, "tool", registry.get_toolset_for_tool(name) or "", status.reason)
        for name, status in registry.get_unavailable().items()
    ]
    rows += [(f.name, f"load ({f.source})", "", f.message + (f" — {f.detail}" if f.detail else ""))
             for f in failures()]
    if "terminal" in registry:  # issue 10: say whether shell commands are confined
        from hermes_nb.tools.safety.sandbox.box import status

        rows.append(("terminal", "sandbox", registry.get_toolset_for_tool("terminal") or "", status().detail))
    rows += _stuck_rows()
    return Table(headers=("name", "what", "toolset", "why"), rows=tuple(rows), title="%tools doctor",
                 empty="every tool is available and nothing failed to load")


def _offer_install(names: list[str], before: Any = None) -> None:
    """Show ``before`` (a table), then an Install button for those of ``names`` whose packages are missing."""
    from IPython.display import display

    from hermes_nb.display.installs import install_button

    if before is not None:
        display(before)
    button = install_button(names) if names else None
    if button is not None:
        display(button)


def _install(names: list[str]) -> None:
    from hermes_nb.display.installs import install_tools
    from hermes_nb.tools.lazy_deps import LazyInstallError

    if not names:
        raise UsageError("%tools install: name the tools whose packages to install (see %tools doctor)")
    for name in names:
        if not _entry(name, "install").requires_packages:
            raise UsageError(f"%tools install: {name} requires no packages")
    try:
        result = install_tools(names)
    except LazyInstallError as exc:
        raise UsageError(f"%tools install: {exc}") from None
    print(("✓ " if result.ok else "✗ ") + result.message + (f"\n  command: {result.command}" if result.command else ""))
    for name in names:
        print(f"  {name}: {availability_text(_entry(name, 'install'))}")
    return None


def _stuck_rows() -> list[tuple[str, ...]]:
    """Tool calls that outlived their timeout and still hold an (abandoned) thread (issue 11)."""
    import time

    from hermes_nb.tools.batch.state import stuck_calls

    stuck = stuck_calls()
    now = time.monotonic()
    return [(s.name, "stuck call", registry.get_toolset_for_tool(s.name) or "",
             f"call {s.tool_call_id} still running {now - s.started:.0f} s after it started; timed out "
             f"{now - s.abandoned:.0f} s ago, its thread is abandoned and replaced ({len(stuck)} stuck)")
            for s in stuck]


def _call(name: str, args: dict[str, Any], max_chars: int, default_timeout: float = 60.0) -> Any:
    """The same path the agent takes: a batch of one call (gate, timeout, worker), then the budget layer.

    The tool's own ``metadata["timeout"]``, else ``default_timeout``, bounds the call; a countdown shows
    it. A tool the model is never offered (unavailable) still runs here, said in one line."""
    from hermes_nb.display.countdown import Countdown
    from hermes_nb.tools.batch.scheduling import run_tool_batch
    from hermes_nb.tools.batch.state import seconds

    entry = registry.get_entry(name)
    status = registry.availability(name)
    if not status.available:
        print(f"note: {name} is unavailable ({status.reason}): it runs here, but the model is never offered it")
    limit = seconds(entry.metadata.get("timeout") if entry is not None else None) or default_timeout
    call_id = f"nb_{os.urandom(6).hex()}"  # not uuid: importing it costs ~13 ms of %load_ext
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
    from hermes_nb.tools.batch.records import BatchInterrupted

    try:
        with Countdown(name, limit):
            result = run_tool_batch([call], registry=registry, timeout=limit)[0]
    except BatchInterrupted:
        raise KeyboardInterrupt from None  # ■ on one call is the person's interrupt, as before
    content = _budget(result.content, name, call_id)
    from hermes_nb.display.asides import take

    return render_result(content, name=name, call_id=call_id, max_chars=max_chars, aside=take(name),
                         is_error=result.is_error)


def _budget(content: str, name: str, call_id: str) -> str:
    from hermes_nb.tools.budget import maybe_persist_tool_result

    return maybe_persist_tool_result(content, name, call_id)
