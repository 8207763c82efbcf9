"""The served MCP app: which tools a client sees, how a call runs, who is connected, and the door checks.

Built on the ``mcp`` SDK's low-level ``Server`` and ``StreamableHTTPSessionManager`` (mcp 2.x): the tool
list is computed per request from the registry, so a re-run ``%%tool`` cell needs no server-side copy
to keep in step. Imported only by ``%mcp serve``; ``%load_ext`` never loads the SDK's server side.

How a served call runs (and why that is safe for notebook state): ``on_call_tool`` runs on hermes_nb's
background loop and hands the call to ``arun_tool_batch`` -- the agent's own path -- so an async handler
is awaited on the background loop and a sync handler runs in the shared worker pool, never on the
kernel's main thread. A running cell is therefore never interrupted or re-entered, and a cell busy with a
long computation does not stop sync tools from being served. A handler sees the notebook's objects exactly
as it would in an agent's parallel batch: concurrently with whatever the main thread is running. The
server itself reads only frozen ``ToolEntry`` records (the registry's lock guards the maps), never the
person's namespace, and shows output only through display handles made in the serving cell.
"""

from __future__ import annotations

import asyncio
import contextvars
import hmac
import itertools
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings

from hermes_nb.serve import bridge as served_bridge
from hermes_nb.tools.registry import ToolRegistry
from hermes_nb.tools.safety.approvals.remembered import asked_by
from hermes_nb.tools.safety.approvals.visible import make_visible

__all__ = ["CallEvents", "ClientStats", "ServedApp", "ToolView", "asking_client"]

log = logging.getLogger(__name__)

#: The MCP client a served call belongs to, for the approval prompt ("asked by ...").
asking_client: contextvars.ContextVar[str | None] = contextvars.ContextVar("hermes_nb_asking_client", default=None)
#: The same for sync handlers, which run in pool threads that do not inherit the context.
_thread_client = threading.local()


def client_of_this_call(subject: str) -> str | None:
    """The client whose served call is asking for approval now (``subject`` starts with the tool name).

    Async handlers carry the client in a context variable. Sync handlers run in pool threads that do not
    inherit it, so the batch's start event (emitted in that very thread) tags the thread, and its end
    event clears it. A call that timed out ends from another thread, leaving its tag until the thread's
    next served call; the tool-name check keeps that stale tag from naming a client for another tool.
    """
    name = asking_client.get()
    if name is not None:
        return name
    tagged = getattr(_thread_client, "value", None)
    if tagged is not None and (subject == tagged[1] or subject.startswith(tagged[1] + " ")):
        return str(tagged[0])
    return None


class CallEvents(Protocol):
    """Where a served call's progress goes (the notebook panel, or nowhere)."""

    def call_started(self, call_id: str, client: str, name: str, arguments: str) -> None: ...
    def call_running(self, call_id: str) -> None: ...
    def call_ended(self, call_id: str, content: str, is_error: bool, note: str = "") -> None: ...
    def changed(self) -> None: ...


class NoEvents:
    def call_started(self, call_id: str, client: str, name: str, arguments: str) -> None:
        pass

    def call_running(self, call_id: str) -> None:
        pass

    def call_ended(self, call_id: str, content: str, is_error: bool, note: str = "") -> None:
        pass

    def changed(self) -> None:
        pass


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolView:
    """The served tool set: fixed toolsets, or (``toolsets is None``) the picker's live selection."""

    registry: ToolRegistry
    toolsets: tuple[str, ...] | None = None

    def definitions(self) -> list[dict[str, Any]]:
        from hermes_nb.tools.model_tools import get_tool_definitions
        from hermes_nb.tools.toolsets import validate_toolset

        if self.toolsets is not None:
            enabled: list[str] | None = list(self.toolsets)
        else:
            from hermes_nb.selection import selection

            enabled = selection.enabled_toolsets()
        # a served toolset whose last tool was removed (%tools rm) is empty, not an error: it may come back
        if enabled is not None:
            enabled = [t for t in enabled if validate_toolset(t)]
            if not enabled:
                return []
        return get_tool_definitions(enabled, None, quiet_mode=True)

    def names(self) -> set[str]:
        return {d["function"]["name"] for d in self.definitions()}


@dataclass(slots=True, kw_only=True)
class ClientStats:
    """One connected client: its name, how many calls it made, how many run now."""

    name: str
    calls: int = 0
    running: int = 0
    errors: int = 0
    connected: bool = True
    first_seen: float = field(default_factory=time.time)


def _tool(defn: dict[str, Any], registry: ToolRegistry) -> types.Tool:
    fn = defn["function"]
    entry = registry.get_entry(fn["name"])
    hints = None
    if entry is not None and entry.read_only:
        hints = types.ToolAnnotations(read_only_hint=True)
    return types.Tool(name=fn["name"], description=fn.get("description") or None,
                      input_schema=fn.get("parameters") or {"type": "object", "properties": {}}, annotations=hints)


class _ServedServer(Server[Any]):
    """The low-level server, advertising ``tools.listChanged`` to handshake-era clients too."""

    def create_initialization_options(self, notification_options: NotificationOptions | None = None,
                                      *args: Any, **kwargs: Any) -> Any:
        options = notification_options or NotificationOptions(tools_changed=True)
        return super().create_initialization_options(options, *args, **kwargs)


class ServedApp:
    """The ASGI app of one ``%mcp serve``: door checks, then the SDK's streamable HTTP session manager."""

    def __init__(self, *, view: ToolView, name: str, token: str, allowed_hosts: list[str],
                 events: CallEvents | None = None, path: str = "/mcp", bridge: bool = False) -> None:
        self.view, self.token, self.path = view, token, path
        self.bridge = bridge  # also serve notebook_tools / notebook_call (hermes_nb.serve.bridge)
        self.events: CallEvents = events or NoEvents()
        self.clients: dict[str, ClientStats] = {}
        self.calls = 0
        self._ids = itertools.count(1)
        self._run = secrets.token_hex(3)  # call ids name spill files: unique across serving runs
        # handshake-era clients by mcp-session-id: the latest request's session proxy reaches the client's
        # standalone stream (GET), where tools/list_changed goes; a DELETE forgets the client
        self._sessions: dict[str, Any] = {}
        self._bus = InMemorySubscriptionBus()  # 2026-era clients listen on subscriptions/listen
        self._lock = threading.Lock()
        self.allowed_hosts = allowed_hosts
        origins = [f"http://{h}" for h in allowed_hosts] + [f"https://{h}" for h in allowed_hosts]
        self.allowed_origins = origins
        self.server = _ServedServer(name, version=_version(), on_list_tools=self._list_tools,
                                    on_call_tool=self._call_tool, on_subscriptions_listen=ListenHandler(self._bus))
        security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts,
                                             allowed_origins=origins)
        # a client killed without ending its session is forgotten after an idle hour (an open GET stream,
        # which every listening client keeps, is not idle)
        self.manager = StreamableHTTPSessionManager(app=self.server, security_settings=security,
                                                    session_idle_timeout=3600)

    # -- the door ---------------------------------------------------------------------------------

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        refusal = self.refusal(scope.get("path", ""), headers)
        if refusal is not None:
            status, message = refusal
            extra = [(b"www-authenticate", b'Bearer realm="hermes_nb"')] if status == 401 else []
            await _respond(send, status, message, extra)
            return
        await self.manager.handle_request(scope, receive, send)
        if scope.get("method") == "DELETE":  # the client ended its session
            self.forget(headers.get("mcp-session-id", ""))

    def forget(self, key: str) -> None:
        with self._lock:
            self._sessions.pop(key, None)
            stats = self.clients.get(key)
            if stats is not None:
                stats.connected = False

    def refusal(self, path: str, headers: dict[str, str]) -> tuple[int, str] | None:
        """Why a request is turned away (status, message), or None. Host/Origin first: a rebinding page
        must learn nothing, not even whether its token guess was right."""
        if headers.get("host", "") not in self.allowed_hosts:
            return 421, "Invalid Host header"
        origin = headers.get("origin")
        if origin is not None and origin not in self.allowed_origins:
            return 403, "Invalid Origin header"
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.token.encode()):
            return 401, "Missing or wrong bearer token"
        if path.rstrip("/") != self.path:
            return 404, "Not found"
        return None

    # -- handlers (background loop) ---------------------------------------------------------------

    def _client(self, ctx: Any) -> tuple[str, ClientStats]:
        session = ctx.session
        request = getattr(ctx, "request", None)
        key = request.headers.get("mcp-session-id", "") if request is not None else ""
        if key:
            with self._lock:
                self._sessions[key] = session
        params = getattr(session, "client_params", None)
        info = getattr(params, "client_info", None)
        label = getattr(info, "name", None) or (request.headers.get("user-agent", "") if request is not None else "")
        # the client chooses its name: every prompt and card shows it with hidden characters made visible
        label = make_visible(str(label)[:80], keep="") or "client"
        # a handshake-era client is its session; a 2026-era client has none (each request stands alone),
        # so its requests are counted under its name
        key = key or f"{label} (no session)"
        with self._lock:
            stats = self.clients.get(key)
            if stats is None:
                shown = key if key.startswith(label) else f"{label} ({key[:8]})"
                stats = self.clients[key] = ClientStats(name=shown)
        return key, stats

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        self._client(ctx)
        tools = [_tool(d, self.view.registry) for d in self.view.definitions()]
        if self.bridge:  # the bridge's names are its own: a served tool of that name is reached through it
            tools = [t for t in tools if t.name not in served_bridge.BRIDGE_TOOLS] + served_bridge.bridge_tools()
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        from hermes_nb.tools.batch.scheduling import BatchEvent, arun_tool_batch
        from hermes_nb.tools.budget import maybe_persist_tool_result

        key, stats = self._client(ctx)
        name, arguments = params.name, json.dumps(params.arguments or {}, ensure_ascii=False)
        if self.bridge and name in served_bridge.BRIDGE_TOOLS:
            if name == served_bridge.NOTEBOOK_TOOLS:  # a listing, as tools/list is: no call to count
                return _text_result(served_bridge.listing(self.view.definitions()), is_error=False)
            parsed = served_bridge.parse_call(params.arguments or {})
            if isinstance(parsed, str):
                return _text_result(json.dumps({"error": parsed}), is_error=True)
            # from here on, exactly a direct call of the named tool: selection check, batch, gate, budget
            name, arguments = parsed[0], json.dumps(parsed[1], ensure_ascii=False)
        call_id = f"mcp-{self._run}-{next(self._ids)}"
        with self._lock:
            self.calls += 1
            stats.calls += 1
            stats.running += 1
        self.events.call_started(call_id, stats.name, name, arguments)
        content, is_error, note = "", True, ""
        token = asking_client.set(stats.name)
        try:
            if name not in self.view.names():  # a client never reaches a tool outside the served toolsets
                content = json.dumps({"error": f"Unknown tool: {name}"})
            else:
                def on_event(event: BatchEvent) -> None:  # runs in the thread that runs the handler
                    if event.kind == "start":
                        _thread_client.value = (stats.name, name)
                        self.events.call_running(call_id)
                    elif getattr(_thread_client, "value", None) == (stats.name, name):
                        _thread_client.value = None

                call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
                with asked_by(f"mcp:{key}"):  # its "for this session" answers are its own, not the notebook's
                    [result] = await arun_tool_batch([call], registry=self.view.registry, on_event=on_event)
                content = maybe_persist_tool_result(result.content, name, call_id)
                is_error = result.is_error
        except BaseException as exc:  # the client went away (cancelled) or the batch broke: the card still ends
            gone = isinstance(exc, asyncio.CancelledError)
            note = "cancelled: the client disconnected" if gone else f"failed: {type(exc).__name__}"
            content = content or json.dumps({"error": "Tool call cancelled" if gone else f"Tool call failed: {exc}"})
            raise
        finally:
            asking_client.reset(token)
            with self._lock:
                stats.running -= 1
                stats.errors += is_error
            self.events.call_ended(call_id, content, is_error, note)
        return _text_result(content, is_error=is_error)

    # -- tools/list_changed -----------------------------------------------------------------------

    async def announce_tools_changed(self) -> int:
        """Send ``notifications/tools/list_changed`` to every client; returns how many sessions got it."""
        await self._bus.publish(ToolsListChanged())
        with self._lock:
            sessions = list(self._sessions.items())
        sent = 0
        for key, session in sessions:
            try:
                await session.send_tool_list_changed()
                sent += 1
            except Exception:  # a closed session: forget it
                log.debug("tools/list_changed to a closed session dropped", exc_info=True)
                with self._lock:
                    self._sessions.pop(key, None)
        return sent


def _text_result(text: str, *, is_error: bool) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


async def _respond(send: Callable[..., Any], status: int, message: str, extra: list[tuple[bytes, bytes]]) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *extra]})
    await send({"type": "http.response.body", "body": body})


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hermes-nb")
    except PackageNotFoundError:
        return "0"
