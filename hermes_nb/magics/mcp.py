"""``%mcp``: MCP servers live in the kernel (status, add, remove, reload, approve), and the extension hook.

``load(ip)`` registers the magic, loads plugins (fast, synchronous) and starts the configured MCP
servers in the background, so ``%load_ext`` returns at once. ``mcp`` itself is imported only when a
server starts, on the background loop.
"""

from __future__ import annotations

import logging
import shlex
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from hermes_nb.magics.arguments import parse_line
from hermes_nb.magics.comments import uncommented

if TYPE_CHECKING:
    from hermes_nb.display.cards import Table

__all__ = ["MCPMagics"]

log = logging.getLogger(__name__)

_ACTIONS = ("add", "remove", "reload", "approve", "show", "attachment", "serve")


def _one_line(text: str, limit: int = 120) -> str:
    from hermes_nb.tools.safety.approvals.visible import make_visible

    text = make_visible(text, keep="")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def status_table() -> Table:
    """Every server: transport, status, tool count, last error (HTML with a text fallback)."""
    from hermes_nb.display.cards import Table
    from hermes_nb.tools.mcp_tool import mcp_status

    rows = tuple(
        (s.name, s.transport, s.status, str(s.tool_count), _one_line(s.target, 60), _one_line(s.last_error))
        for s in mcp_status()
    )
    return Table(
        headers=("server", "transport", "status", "tools", "target", "last error"),
        rows=rows,
        title="MCP servers",
        empty="No MCP servers. Add one with %mcp add NAME -- COMMAND ARGS... or %mcp add NAME --url URL",
    )


def tools_table(server: str) -> Table:
    """A server's registered tools with their descriptions, hidden characters made visible."""
    from hermes_nb.display.cards import Table
    from hermes_nb.tools.mcp_tool import _registered
    from hermes_nb.tools.registry import registry

    rows = []
    for name in sorted(_registered.get(server, {})):
        entry = registry.get_entry(name)
        if entry is None:
            continue
        state = "needs %mcp approve" if entry.disabled_reason else "ok"
        flags = ", ".join(
            f for f, on in (("read-only", entry.read_only), ("needs approval", entry.needs_approval)) if on
        )
        rows.append((name, state, flags, _one_line(entry.description, 200)))
    return Table(
        headers=("tool", "state", "scheduling", "description"), rows=tuple(rows), title=f"MCP server {server}"
    )


@magics_class
class MCPMagics(Magics):
    """Connect MCP servers to the kernel's tool registry."""

    @magic_arguments()
    @argument(
        "action", nargs="?", default="", help="add, remove, reload, approve or show (none: the status table)"
    )
    @argument("name", nargs="?", default=None, help="server name (approve: a tool name or a server name)")
    @argument("--url", default=None, help="add: a streamable HTTP server at this URL (instead of -- COMMAND)")
    @argument(
        "--header", action="append", default=[], metavar="K=V", help="add --url: an HTTP header (repeatable)"
    )
    @argument(
        "--env", action="append", default=[], metavar="K=V", help="add: an environment variable (repeatable)"
    )
    @argument("--timeout", type=float, default=None, help="add: seconds per call (default 120)")
    @argument("--trusted", action="store_true", help="add: let this server's annotations relax scheduling")
    @argument("--defer", action="store_true", help="add: tool search may defer this server's tools (defer: true)")
    @argument("--save", action="store_true", help="add/remove: also write the change to config.yaml")
    @argument("--toolsets", default=None, metavar="A,B", help="serve: these toolsets (default: the picker's selection)")
    @argument("--port", type=int, default=0, help="serve: the port (default: any free one)")
    @argument("--name", dest="serve_name", default="hermes-nb", metavar="NAME", help="serve: the server's name")
    @argument("--host", default=None, help="serve: listen beyond loopback on this address (with a warning)")
    @argument("--bridge", action="store_true",
              help="serve: also notebook_tools / notebook_call, for clients that read the tool list once")
    @line_magic
    @uncommented
    def mcp(self, line: str) -> Any:
        """Show or change the MCP servers of this kernel.

        %mcp                                   status of every server
        %mcp add NAME -- COMMAND [ARGS...]     start a stdio server now (no restart needed)
        %mcp add NAME --url URL                connect a streamable HTTP server
        %mcp remove NAME                       stop it and remove its tools
        %mcp reload [NAME]                     restart from config.yaml (or retry a failed server);
                                               without NAME, plugins and tool files reload too
        %mcp approve NAME                      accept a tool's changed definition (or all of a server's)
        %mcp show NAME                         a server's tools and descriptions
        %mcp attachment ID                     an image or resource from a result ("id=..." in its text)
        %mcp serve [--toolsets A,B] [--port N] [--name NAME] [--host H] [--bridge]
                                               serve this kernel's tools over MCP (streamable HTTP)
        %mcp serve                             (when serving) its URL, clients and call counts
        %mcp serve stop                        stop serving
        %mcp serve token                       the bearer token (not shown otherwise, so not saved)

        Example: %mcp add time -- python -m mcp_server_time   (its tools: mcp__time__get_current_time, ...)
        """
        from hermes_nb.tools.mcp_client.start import wait_for_mcp_start

        wait_for_mcp_start()
        head, dashes, tail = f" {line} ".partition(" -- ")
        words = head.split()
        if not dashes and len(words) > 2 and words[0] == "add" and not words[1].startswith("-") \
                and not words[2].startswith("-"):
            # `%mcp add time mcp-server-time` was "unrecognized arguments: mcp-server-time"
            raise UsageError(f"%mcp add: put the server's command after --: %mcp add {words[1]} -- "
                             f"{' '.join(words[2:])}")
        args = parse_line(self.mcp, head.strip(), "%mcp")
        try:
            command = shlex.split(tail) if dashes else []
        except ValueError as exc:  # an unclosed quote in the server's command
            raise UsageError(f"%mcp: could not split the command after --: {exc}") from None
        action = args.action
        if action in ("", "show"):
            _refresh_between_batches()
        if action == "":
            return status_table()
        if action not in _ACTIONS:
            raise UsageError(f"%mcp: unknown action {action!r}; use {', '.join(_ACTIONS)} (see %mcp?)")
        if action == "reload":
            return _reload(args.name)
        if action == "serve":
            from hermes_nb.magics.serve import serve

            return serve(self.shell, args)
        if not args.name:
            raise UsageError(f"%mcp {action}: a NAME is needed")
        if action == "add":
            return _add(args, command)
        if action == "remove":
            return _remove(args.name, args.save)
        if action == "approve":
            return _approve(args.name)
        if action == "attachment":
            return _attachment(args.name)
        return tools_table(args.name)


def _pairs(values: list[str], what: str) -> dict[str, str]:
    out = {}
    for value in values:
        key, eq, val = value.partition("=")
        if not eq or not key:
            raise UsageError(f"%mcp add: {what} must look like KEY=VALUE, got {value!r}")
        out[key] = val
    return out


def _add(args: Any, command: list[str]) -> Table:
    from hermes_nb.tools.config import update_config
    from hermes_nb.tools.errors import ConfigError
    from hermes_nb.tools.mcp_client.config import parse_server
    from hermes_nb.tools.mcp_tool import add_mcp_server, server_config

    if bool(command) == bool(args.url):
        raise UsageError("%mcp add: give either -- COMMAND [ARGS...] or --url URL")
    raw: dict[str, Any] = {"url": args.url} if args.url else {"command": command[0], "args": command[1:]}
    if args.header:
        raw["headers"] = _pairs(args.header, "--header")
    if args.env:
        raw["env"] = _pairs(args.env, "--env")
    if args.timeout is not None:
        raw["timeout"] = args.timeout
    if args.trusted:
        raw["trusted"] = True
    if args.defer:
        raw["defer"] = True
    try:
        cfg = parse_server(args.name, raw)
    except ConfigError as exc:
        raise UsageError(f"%mcp add: {exc}") from None
    if args.save:
        update_config(lambda c: c.setdefault("mcp_servers", {}).__setitem__(args.name, raw))
    add_mcp_server(cfg)
    if server_config(args.name) is not None:
        return _server_report(args.name)
    return status_table()


def _server_report(name: str) -> Table:
    from hermes_nb.display.cards import Table
    from hermes_nb.tools.sources.load_report import failures

    failure = next((f for f in failures() if f.source == "mcp" and f.name == name), None)
    if failure is not None:
        text = failure.message + (f"\n{failure.detail}" if failure.detail else "")
        return Table(
            headers=("server", "error"), rows=((name, _one_line(text, 2000)),), title="MCP server failed"
        )
    return tools_table(name)


def _remove(name: str, save: bool) -> str:
    from hermes_nb.tools.config import update_config
    from hermes_nb.tools.mcp_tool import remove_mcp_server

    known = remove_mcp_server(name)
    if save:
        update_config(
            lambda c: [
                c.get(k, {}).pop(name, None)
                for k in ("mcp_servers", "mcpServers")
                if isinstance(c.get(k), dict)
            ]
        )
    elif not known:
        raise UsageError(f"%mcp remove: no MCP server named {name!r}")
    return f"removed MCP server {name!r}"


def _reload(name: str | None) -> Table:
    from hermes_nb.tools.mcp_client.config import load_mcp_server_configs
    from hermes_nb.tools.mcp_tool import (
        add_mcp_server,
        discover_mcp_tools,
        mcp_status,
        refresh_pending_mcp_servers,
        server_config,
    )

    configured = {c.name: c for c in load_mcp_server_configs()}
    if name is not None:
        cfg = configured.get(name) or server_config(name)
        if cfg is None:
            raise UsageError(
                f"%mcp reload: no MCP server named {name!r} (in config.yaml or added with %mcp add)"
            )
        add_mcp_server(cfg)
        return _server_report(name)
    from hermes_nb.tools.sources.plugins import discover_plugins

    discover_plugins()  # edited plugins and tool files run again; deleted ones' tools leave
    discover_mcp_tools(list(configured.values()))
    for status in mcp_status():  # retry live-added servers that failed
        cfg = server_config(status.name)
        if status.status == "failed" and status.name not in configured and cfg is not None:
            add_mcp_server(cfg)
    refresh_pending_mcp_servers()
    return status_table()


def _approve(name: str) -> str:
    from hermes_nb.tools.mcp_tool import approve_mcp_tool

    try:
        approved = approve_mcp_tool(name)
    except KeyError:
        raise UsageError(f"%mcp approve: no MCP tool or server named {name!r}") from None
    return "approved: " + ", ".join(approved)


def _refresh_between_batches() -> None:
    """A person running a magic is between batches: apply pending tools/list_changed now."""
    from hermes_nb.tools.mcp_tool import refresh_pending_mcp_servers

    refresh_pending_mcp_servers()


def _attachment(attachment_id: str) -> Any:
    from IPython.display import Image, Pretty

    from hermes_nb.tools.mcp_tool import get_mcp_attachment

    found = get_mcp_attachment(attachment_id)
    if found is None:
        raise UsageError(
            f"%mcp attachment: no attachment {attachment_id!r} (only the most recent ones are kept)"
        )
    if found.kind == "image" and found.mime_type in ("image/png", "image/jpeg"):
        return Image(data=found.data, format=found.mime_type.split("/")[1])
    if found.mime_type.startswith("text/") or found.mime_type in ("application/json", ""):
        return Pretty(found.data.decode("utf-8", "replace"))
    return f"{found.kind}: {found.mime_type}, {len(found.data)} bytes from {found.server}/{found.tool} {found.uri}".strip()
