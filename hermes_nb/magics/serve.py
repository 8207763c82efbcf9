"""``%mcp serve``: start serving (in this cell, which then shows the served calls), show status, stop."""

from __future__ import annotations

import sys
from typing import Any

from IPython.core.error import UsageError

from hermes_nb import _state
from hermes_nb.display.cards import Table

__all__ = ["serve", "status_table"]


def serve(shell: Any, args: Any) -> Table | str:
    """What ``%mcp serve [stop]`` does; a user's mistake is a one-line UsageError."""
    from hermes_nb.serve import server as mcp_serve
    if args.name == "stop":
        return "stopped serving" if mcp_serve.stop_serving() else "not serving"
    if args.name == "token":  # on demand only: the started table does not put it in the saved notebook
        running = mcp_serve.current()
        if running is None:
            raise UsageError("%mcp serve token: not serving; start with %mcp serve")
        return str(running.token)
    if args.name is not None:
        raise UsageError(f"%mcp serve: unknown argument {args.name!r}; use %mcp serve [stop | token] (see %mcp?)")
    running = mcp_serve.current()
    asked = (args.toolsets is not None or args.port or args.host is not None or args.serve_name != "hermes-nb"
             or args.bridge)
    if running is not None:
        if asked:
            raise UsageError("%mcp serve: already serving; %mcp serve stop first to serve with other options")
        return status_table(running)
    options = _options(args)
    if not mcp_serve.is_loopback(options.host):
        print(f"warning: %mcp serve --host {options.host} listens beyond this machine's loopback; anyone who "
              "can reach it and holds the token can run the served tools", file=sys.stderr)
    panel = None
    from hermes_nb.display.kernel import in_kernel

    if in_kernel(shell):
        from hermes_nb.serve.panel import ServePanel

        panel = ServePanel(title=f"MCP server {options.name}: served calls", widgets=True)
    try:
        server = mcp_serve.start_serving(options, events=panel, approver=panel.ask_approval if panel else None)
    except mcp_serve.ServeError as exc:
        raise UsageError(f"%mcp serve: {exc}") from None
    _state.undos.append(_stop)  # unloading the extension stops serving
    return _started_table(server)


def _stop() -> None:
    from hermes_nb.serve import server as mcp_serve
    mcp_serve.stop_serving()


def _options(args: Any) -> Any:
    from hermes_nb.serve.server import ServeOptions
    from hermes_nb.tools.toolsets import validate_toolset

    toolsets = None
    if args.toolsets is not None:
        toolsets = tuple(t.strip() for t in args.toolsets.split(",") if t.strip())
        bad = [t for t in toolsets if not validate_toolset(t)]
        if not toolsets or bad:
            raise UsageError(f"%mcp serve --toolsets: unknown toolset {(bad or [args.toolsets])[0]!r} (see %toolsets)")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"%mcp serve --port: {args.port} is not a port number")
    return ServeOptions(toolsets=toolsets, port=args.port, name=args.serve_name, host=args.host or "127.0.0.1",
                        bridge=bool(args.bridge))


def _toolsets_text(server: Any) -> str:
    sets = server.options.toolsets
    return ", ".join(sets) if sets is not None else "the picker's selection (follows it live)"


def _started_table(server: Any) -> Table:
    from hermes_nb.serve.server import serve_file

    tools = sorted(server.app.view.names())
    rows = (
        ("url", server.url),
        ("token", f"{server.token[:4]}…  (not written into the notebook: %mcp serve token shows it, in a cell you "
                  f"delete after; it is also in {serve_file()}, readable only by you)"),
        ("tools", f"{len(tools)}: {', '.join(tools)}" if tools else "none yet"),
        ("toolsets", _toolsets_text(server)),
        *_bridge_rows(server),
        ("stdio clients", "hermes-nb-mcp-proxy  (reads the url and token from the file above)"),
    )
    return Table(headers=("", ""), rows=rows, title=f"Serving MCP server {server.options.name}")


def _bridge_rows(server: Any) -> tuple[tuple[str, str], ...]:
    if not server.options.bridge:
        return ()
    return (("bridge", "notebook_tools, notebook_call: clients that list tools once still find and call "
                       "tools defined later"),)


def status_table(server: Any) -> Table:
    """URL, the token (masked), clients and call counts of the running server."""
    from hermes_nb.serve.server import serve_file

    app = server.app
    clients = [c for c in app.clients.values()]
    who = "; ".join(
        f"{c.name}: {c.calls} call{'s' if c.calls != 1 else ''}"
        + (f", {c.running} running" if c.running else "") + ("" if c.connected else " (gone)")
        for c in clients) or "none yet"
    rows = (
        ("url", server.url),
        ("token", f"{server.token[:4]}… (full token in {serve_file()})"),
        ("toolsets", _toolsets_text(server)),
        ("tools", str(len(app.view.names()))),
        *_bridge_rows(server),
        ("clients", who),
        ("calls", str(app.calls)),
        ("tools/list_changed sent", str(server.announcements)),
    )
    return Table(headers=("", ""), rows=rows, title=f"MCP server {server.options.name}")
