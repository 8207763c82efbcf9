"""MCP servers as tools: discovery, naming, registration, list_changed refresh, shutdown.

Every enabled server gets a ``ServerConnection`` (hermes_nb.tools.mcp_client.session) whose owner task lives on the
background loop. Each server tool becomes a registry tool ``mcp__<server>__<tool>`` in toolset
``mcp-<server>`` (source ``"mcp"``), whose async handler crosses into that loop. ``tools/list_changed``
only marks a server dirty; ``refresh_pending_mcp_servers()`` applies the change between batches.
"""

from __future__ import annotations

import asyncio
import atexit
import fnmatch
import hashlib
import json
import logging
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hermes_nb.tools import async_bridge
from hermes_nb.tools.config import hermes_home
from hermes_nb.tools.mcp_client import sdk
from hermes_nb.tools.mcp_client.config import MCPServerConfig, load_mcp_server_configs
from hermes_nb.tools.mcp_client.results import MCPAttachment, convert_result, get_mcp_attachment
from hermes_nb.tools.mcp_client.session import MCPServerError, ServerConnection, describe_exception
from hermes_nb.tools.registry import registry, tool_error
from hermes_nb.tools.sources.load_report import clear_failures, record_failure

__all__ = [
    "MCPAttachment",
    "ServerStatus",
    "adiscover_mcp_tools",
    "add_mcp_server",
    "approve_mcp_tool",
    "arefresh_pending_mcp_servers",
    "discover_mcp_tools",
    "get_mcp_attachment",
    "mcp_status",
    "mcp_tool_name",
    "refresh_pending_mcp_servers",
    "remove_mcp_server",
    "shutdown_mcp_servers",
]

log = logging.getLogger(__name__)

MAX_NAME = 64
CHANGED_REASON = "definition changed since approved; run %mcp approve {name}"
SHUTDOWN_TIMEOUT = 20.0

_lock = threading.RLock()
_connections: dict[str, ServerConnection] = {}
_disabled: dict[str, MCPServerConfig] = {}  # configured with enabled: false, listed by mcp_status
_registered: dict[str, dict[str, str]] = {}  # server -> {registered name: server tool name}
_in_flight: Counter[str] = Counter()  # registered name -> running calls
_pending_removal: set[str] = set()  # removed by the server while a call was in flight


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerStatus:
    """One server's line in ``%mcp``."""

    name: str
    transport: str
    status: str  # starting / ready / failed / stopped / disabled
    tool_count: int
    last_error: str = ""
    target: str = ""


# -- naming and approvals -------------------------------------------------------------------------


def _clean(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def mcp_tool_name(server: str, tool: str, *, hashed: bool = False) -> str:
    """``mcp__<server>__<tool>``, characters outside [A-Za-z0-9_-] replaced, clamped to 64 with a hash.

    ``hashed=True`` always adds the hash: for a tool whose cleaned name another tool already holds
    (``a.b`` and ``a_b`` both clean to ``a_b``).
    """
    name = f"mcp__{_clean(server)}__{_clean(tool)}"
    if len(name) <= MAX_NAME and not hashed:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def _holder(name: str) -> tuple[str, str] | None:
    """Which (server, MCP tool) holds a registered name in the registry, if an MCP tool does."""
    entry = registry.get_entry(name)
    if entry is None or entry.source != "mcp":
        return None
    return str(entry.metadata.get("server")), str(entry.metadata.get("mcp_tool"))


def _free_name(server: str, tool: str, current: Mapping[str, str]) -> str:
    """This tool's registered name, hashed when its plain name belongs to a different MCP tool."""
    name = mcp_tool_name(server, tool)
    taken_here = name in current and current[name] != tool
    holder = _holder(name)
    if taken_here or (holder is not None and holder != (server, tool)):
        return mcp_tool_name(server, tool, hashed=True)
    return name


def definition_hash(tool: Any) -> str:
    """What the person approved: description, input schema and annotations."""
    shown = {
        "description": tool.description or "",
        "schema": sdk.field(tool, "input_schema"),
        "annotations": sdk.tool_annotations(tool),
    }
    return hashlib.sha256(json.dumps(shown, sort_keys=True, default=str).encode()).hexdigest()


def _approvals_path() -> Any:
    return hermes_home() / "mcp_approved.json"


def _load_approvals() -> dict[str, str]:
    try:
        data = json.loads(_approvals_path().read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("cannot read %s: %s", _approvals_path(), exc)
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _save_approvals(approvals: Mapping[str, str]) -> None:
    path = _approvals_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(dict(approvals), indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(path)


# -- registration ---------------------------------------------------------------------------------


def _included(cfg: MCPServerConfig, tool: str) -> bool:
    if cfg.include and not any(fnmatch.fnmatchcase(tool, p) for p in cfg.include):
        return False
    return not any(fnmatch.fnmatchcase(tool, p) for p in cfg.exclude)


def _make_handler(server: str, tool: str, name: str) -> Callable[..., Any]:
    async def handler(args: dict[str, Any], **kwargs: Any) -> str:
        with _lock:
            _in_flight[name] += 1
        try:
            return await async_bridge.run_async(_call(server, tool, args, kwargs.get("progress")))
        finally:
            with _lock:
                _in_flight[name] -= 1
                if _in_flight[name] <= 0:
                    del _in_flight[name]

    handler.__name__ = f"mcp_{_clean(tool)}"
    return handler


async def _call(server: str, tool: str, args: dict[str, Any], progress: Callable[..., Any] | None) -> str:
    conn = _connections.get(server)
    if conn is None:
        return tool_error(f"MCP server {server!r} is not running (removed or shut down)")
    callback = None
    if progress is not None:

        async def callback(done: float, total: float | None, message: str | None) -> None:
            try:
                progress(done, total, message)
            except Exception:  # a display callback must not fail the call
                log.exception("progress callback failed")

    from hermes_nb.tools.calls.tracing import child as traced

    try:
        with traced("mcp", f"tools/call {tool}", {"mcp.method.name": "tools/call", "gen_ai.tool.name": tool,
                                                 "gen_ai.operation.name": "execute_tool",
                                                 "hermes_nb.mcp.server": server}):  # a child of its call's span
            result = await conn.call_tool(tool, args, progress=callback)
    except MCPServerError as exc:
        return tool_error(str(exc).split("\n--- stderr")[0], server=server)
    except Exception as exc:  # boundary: any transport or protocol error is a result, never a raise
        log.debug("MCP call %s/%s failed", server, tool, exc_info=True)
        return tool_error(f"MCP server {server!r}: {tool!r} failed: {describe_exception(exc)}", server=server)
    return convert_result(result, server=server, tool=tool)


def _register_tools(conn: ServerConnection) -> list[str]:
    """(Re-)register a server's listed tools; deregister those it no longer lists (unless in flight)."""
    cfg, server = conn.config, conn.name
    approvals = _load_approvals()
    approvals_changed = False
    current: dict[str, str] = {}
    for tool in conn.tools:
        if not _included(cfg, tool.name):
            continue
        name = _free_name(server, tool.name, current)
        digest = definition_hash(tool)
        approved = approvals.get(name)
        if approved is None:  # first sight counts as approval
            approvals[name] = approved = digest
            approvals_changed = True
        ann = sdk.tool_annotations(tool)
        destructive = ann.get("destructive_hint") is True
        try:
            registry.register(
                name,
                f"mcp-{_clean(server)}",
                {
                    "name": name,
                    "description": tool.description or "",
                    "parameters": dict(sdk.field(tool, "input_schema") or {"type": "object", "properties": {}}),
                },
                _make_handler(server, tool.name, name),
                is_async=True,
                description=tool.description or "",
                # annotations may make a tool safer, never less safe, unless the server is trusted
                read_only=cfg.trusted and ann.get("read_only_hint") is True and not destructive,
                needs_approval=destructive,
                source="mcp",
                origin=server,
                disabled_reason=CHANGED_REASON.format(name=name) if approved != digest else None,
                metadata={
                    "server": server,
                    "mcp_tool": tool.name,
                    "title": tool.title or ann.get("title"),
                    "annotations": ann,
                    "timeout": cfg.timeout,
                    "trusted": cfg.trusted,
                    "defer": cfg.defer,  # tool search (tools.search.catalog.is_deferrable)
                    "definition_hash": digest,
                },
            )
        except ValueError as exc:  # the name belongs to another source or toolset: never replace it
            record_failure("mcp", f"{server}/{tool.name}", f"not registered: {exc}")
            continue
        except Exception as exc:  # boundary: a bad schema from a server skips that tool only
            log.warning("MCP tool %s/%s rejected", server, tool.name, exc_info=True)
            record_failure("mcp", f"{server}/{tool.name}", f"not registered: {type(exc).__name__}: {exc}")
            continue
        current[name] = tool.name
    if approvals_changed:
        _save_approvals(approvals)
    with _lock:
        old = _registered.get(server, {})
        _registered[server] = current
        gone = [n for n in old if n not in current]
    _drop(gone)
    return sorted(current)


def _drop(names: Iterable[str]) -> None:
    """Deregister MCP tools, deferring any with a call in flight to the next refresh."""
    for name in names:
        with _lock:
            if _in_flight.get(name):
                _pending_removal.add(name)
                continue
            _pending_removal.discard(name)
        entry = registry.get_entry(name)
        if entry is not None and entry.source == "mcp":
            registry.deregister(name)


def _unregister_server(server: str) -> None:
    with _lock:
        names = list(_registered.pop(server, {}))
    _drop(names)


# -- discovery ------------------------------------------------------------------------------------


async def _start(cfg: MCPServerConfig, force: bool) -> tuple[str, list[str]]:
    conn = _connections.get(cfg.name)
    if conn is not None and conn.config != cfg:
        await conn.close()
        _unregister_server(cfg.name)
        conn = None
    if conn is None:
        conn = ServerConnection(cfg)
        _connections[cfg.name] = conn
        _install_batch_hook()
    try:
        await conn.connect(force=force)
        if conn.dirty:
            await conn.refresh_tools()
    except MCPServerError as exc:
        record_failure("mcp", cfg.name, str(exc).split("\n")[0], detail=conn.stderr_tail)
        return cfg.name, sorted(_registered.get(cfg.name, {}))
    clear_failures("mcp", cfg.name)
    return cfg.name, _register_tools(conn)


async def _discover(configs: list[MCPServerConfig], force: bool) -> dict[str, list[str]]:
    for cfg in configs:
        if not cfg.enabled:
            _disabled[cfg.name] = cfg
            old = _connections.pop(cfg.name, None)
            if old is not None:
                await old.close()
                _unregister_server(cfg.name)
    started = await asyncio.gather(*(_start(c, force) for c in configs if c.enabled))
    for name, _ in started:
        _disabled.pop(name, None)
    return dict(started)


async def adiscover_mcp_tools(
    config: Mapping[str, Any] | Iterable[MCPServerConfig] | None = None, *, force: bool = True
) -> dict[str, list[str]]:
    """Start every enabled server concurrently and register its tools: ``{server: [tool names]}``.

    ``config``: None reads ``config.yaml``; a whole config mapping; or ``MCPServerConfig`` records.
    A server that fails is recorded (``tools.sources.load_report``) with its stderr tail and maps to ``[]``.
    """
    _install_atexit()
    configs = load_mcp_server_configs(config)
    return await async_bridge.run_async(_discover(configs, force))


def discover_mcp_tools(
    config: Mapping[str, Any] | Iterable[MCPServerConfig] | None = None, *, force: bool = True
) -> dict[str, list[str]]:
    """``adiscover_mcp_tools`` from sync code (a cell, a magic)."""
    _install_atexit()
    configs = load_mcp_server_configs(config)
    return async_bridge.run_sync(lambda: _discover(configs, force))


def add_mcp_server(cfg: MCPServerConfig) -> list[str]:
    """Start (or restart with new settings) one server live; its registered tool names."""
    return discover_mcp_tools([cfg]).get(cfg.name, [])


def remove_mcp_server(name: str) -> bool:
    """Stop a server and remove its tools. False when there is no such server."""
    conn = _connections.pop(name, None)
    known = conn is not None or _disabled.pop(name, None) is not None
    if conn is not None:
        async_bridge.run_sync(conn.close(), timeout=SHUTDOWN_TIMEOUT)
    _unregister_server(name)
    clear_failures("mcp", name)
    return known


def server_config(name: str) -> MCPServerConfig | None:
    """The settings a running (or failed) server was started with."""
    conn = _connections.get(name)
    return conn.config if conn is not None else _disabled.get(name)


# -- list_changed ---------------------------------------------------------------------------------


def _needs_refresh() -> bool:
    return bool(_pending_removal) or any(c.dirty and c.status == "ready" for c in list(_connections.values()))


async def _refresh() -> dict[str, list[str]]:
    _drop(list(_pending_removal))
    out: dict[str, list[str]] = {}
    for conn in list(_connections.values()):
        if not (conn.dirty and conn.status == "ready"):
            continue
        try:
            await conn.refresh_tools()
        except Exception as exc:  # boundary: a server that fails to list keeps its old tools
            record_failure(
                "mcp", conn.name, f"refresh after tools/list_changed failed: {describe_exception(exc)}"
            )
            continue
        out[conn.name] = _register_tools(conn)
    return out


def refresh_pending_mcp_servers() -> dict[str, list[str]]:
    """Apply pending ``tools/list_changed`` (call between batches, never during one). Cheap when idle."""
    if not _needs_refresh():
        return {}
    return async_bridge.run_sync(_refresh)


async def arefresh_pending_mcp_servers() -> dict[str, list[str]]:
    """``refresh_pending_mcp_servers`` for async callers (any loop)."""
    if not _needs_refresh():
        return {}
    return await async_bridge.run_async(_refresh())


def approve_mcp_tool(name: str) -> list[str]:
    """Approve the current definition of a tool (by registered name), or of every tool of a server."""
    with _lock:
        names = list(_registered.get(name, {})) if name in _registered else [name]
    entries = [e for e in map(registry.get_entry, names) if e is not None and e.source == "mcp"]
    if not entries:
        raise KeyError(name)
    approvals = _load_approvals()
    for entry in entries:
        approvals[entry.name] = entry.metadata["definition_hash"]
        if entry.disabled_reason == CHANGED_REASON.format(name=entry.name):
            registry.set_disabled(entry.name, None)
    _save_approvals(approvals)
    return [e.name for e in entries]


# -- status and shutdown --------------------------------------------------------------------------


def mcp_status() -> list[ServerStatus]:
    """Every known server: transport, status, registered tool count, last error."""
    out = []
    for name, conn in sorted(_connections.items()):
        out.append(
            ServerStatus(
                name=name,
                transport=conn.config.transport,
                status=conn.status,
                tool_count=len(_registered.get(name, {})),
                last_error=conn.last_error,
                target=conn.config.describe(),
            )
        )
    for name, cfg in sorted(_disabled.items()):
        if name not in _connections:
            out.append(
                ServerStatus(
                    name=name, transport=cfg.transport, status="disabled", tool_count=0, target=cfg.describe()
                )
            )
    return out


async def _close_all() -> None:
    conns = list(_connections.values())
    _connections.clear()
    await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)


def shutdown_mcp_servers() -> None:
    """Close every session, end every server process, remove every MCP tool. Idempotent."""
    if _connections:
        if async_bridge.in_loop_thread():
            log.warning("shutdown_mcp_servers() called on the background loop; scheduling instead")
            asyncio.ensure_future(_close_all())
        else:
            try:
                async_bridge.run_sync(_close_all, timeout=SHUTDOWN_TIMEOUT)
            except TimeoutError:
                log.warning("MCP servers did not all stop within %g s", SHUTDOWN_TIMEOUT)
    for server in list(_registered):
        _unregister_server(server)
    _disabled.clear()
    _remove_batch_hook()


_batch_hook_undo: Callable[[], None] | None = None


def _install_batch_hook() -> None:
    """While servers run, the registry applies their pending list_changed before each batch and turn."""
    global _batch_hook_undo
    if _batch_hook_undo is None:
        _batch_hook_undo = registry.add_batch_hook(refresh_pending_mcp_servers, arefresh_pending_mcp_servers)


def _remove_batch_hook() -> None:
    global _batch_hook_undo
    if _batch_hook_undo is not None:
        _batch_hook_undo()
        _batch_hook_undo = None


_atexit_installed = False


def _install_atexit() -> None:
    global _atexit_installed
    if not _atexit_installed:
        _atexit_installed = True
        atexit.register(shutdown_mcp_servers)
