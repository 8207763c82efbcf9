"""Serving the notebook's tools over MCP (streamable HTTP): start, status, stop, and the home file.

One server per kernel, owned by one task on hermes_nb's background loop (``tools.async_bridge``): the
SDK's session manager and uvicorn are entered and left in that task (anyio's rule), so ``%mcp serve``
and ``%mcp serve stop`` may come from any cell. The kernel's own loop never waits on the server except
for the moment it takes to start or stop it. How calls run, and why that is safe for notebook state, is
in ``hermes_nb.serve.app``.

``$HERMES_NB_HOME/mcp_serve.json`` (mode 0600) holds ``url``, ``token`` and ``pid`` while serving, for
the stdio proxy (``hermes-nb-mcp-proxy``) and scripts; stopping, unloading the extension or the
kernel's exit removes it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ipaddress
import json
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_nb.tools import async_bridge
from hermes_nb.tools.errors import HermesNbError

__all__ = ["ServeError", "ServeOptions", "ServingServer", "current", "serve_file", "start_serving", "stop_serving"]

log = logging.getLogger(__name__)

SERVE_FILE = "mcp_serve.json"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")

#: Answers an approval a served call asks: (command, pattern_key, description, client) -> choice.
Approver = Callable[[str, str, str, str], str]


class ServeError(HermesNbError):
    """Serving could not start (port taken, mcp too old, another kernel serving from this home)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeOptions:
    """What ``%mcp serve`` was asked for. ``toolsets=None`` follows the picker's selection."""

    toolsets: tuple[str, ...] | None = None
    port: int = 0
    name: str = "hermes-nb"
    host: str = "127.0.0.1"
    #: also serve ``notebook_tools`` / ``notebook_call`` (``hermes_nb.serve.bridge``)
    bridge: bool = False


def serve_file() -> Path:
    """Where the running server's url, token and pid are written."""
    from hermes_nb.tools.config import hermes_home

    return hermes_home() / SERVE_FILE


def is_loopback(host: str) -> bool:
    if host in _LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _require_mcp2() -> None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mcp")
    except PackageNotFoundError:
        found = ""
    if not found or int(found.split(".")[0]) < 2:
        raise ServeError(f"%mcp serve needs the mcp SDK 2.x (found {found or 'none'}); "
                         "install it with: pip install 'mcp>=2,<3'")


def _allowed_hosts(host: str, port: int) -> list[str]:
    """Host header values a request may carry: loopback names, plus the explicit --host (and, for a
    wildcard address, this machine's names), each with the port."""
    names = ["127.0.0.1", "localhost", "[::1]"]
    if not is_loopback(host):
        if host in ("0.0.0.0", "::"):
            with contextlib.suppress(OSError):
                hostname = socket.gethostname()
                names += [hostname, *socket.gethostbyname_ex(hostname)[2]]
        else:
            names.append(f"[{host}]" if ":" in host else host)
    return [f"{n}:{port}" for n in dict.fromkeys(names)]


class ServingServer:
    """A running ``%mcp serve``: its URL, token, clients, call counts, and how to stop it."""

    def __init__(self, options: ServeOptions, *, events: Any = None, approver: Approver | None = None) -> None:
        from hermes_nb.serve.app import ServedApp, ToolView
        from hermes_nb.tools.registry import registry

        self.options = options
        self.approver = approver
        self.token = secrets.token_urlsafe(32)
        self.sock = socket.socket(socket.AF_INET6 if ":" in options.host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind((options.host, options.port))
        except OSError as exc:
            self.sock.close()
            raise ServeError(f"cannot listen on {options.host}:{options.port}: {exc.strerror or exc}") from None
        self.port = self.sock.getsockname()[1]
        shown = "127.0.0.1" if options.host in ("0.0.0.0", "::") else options.host
        shown = f"[{shown}]" if ":" in shown else shown
        self.url = f"http://{shown}:{self.port}/mcp"
        self.started = time.time()
        self.app = ServedApp(view=ToolView(registry=registry, toolsets=options.toolsets), name=options.name,
                             token=self.token, allowed_hosts=_allowed_hosts(options.host, self.port), events=events,
                             bridge=options.bridge)
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._undos: list[Callable[[], None]] = []
        self._pending: set[str] = set()
        self._announcing = False
        self._last_names: set[str] = set()
        self.announcements = 0

    # -- lifecycle --------------------------------------------------------------------------------

    async def _own(self, ready: asyncio.Future[None]) -> None:
        """The owner task: the session manager and uvicorn live and die here."""
        import uvicorn

        self._stop = asyncio.Event()
        # log_config=None: uvicorn must not install stderr handlers, whose lines from this thread would land
        # in whatever cell runs last; its records go to the kernel's logging like everyone's
        config = uvicorn.Config(self.app, log_config=None, access_log=False, lifespan="off",
                                timeout_graceful_shutdown=1, loop="none", http="h11", ws="none")
        listening = asyncio.Event()

        class Web(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets)
                listening.set()

        web = Web(config)
        try:
            async with self.app.manager.run():
                serving = asyncio.ensure_future(web.serve(sockets=[self.sock]))
                up = asyncio.ensure_future(listening.wait())
                await asyncio.wait({serving, up}, return_when=asyncio.FIRST_COMPLETED)
                up.cancel()
                if serving.done():
                    serving.result()
                    raise ServeError("the HTTP server stopped while starting")
                self._last_names = self.app.view.names()
                ready.set_result(None)
                stopped = asyncio.ensure_future(self._stop.wait())
                await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
                web.should_exit = web.force_exit = True  # open SSE streams end with the manager below
                stopped.cancel()
                await serving
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else ServeError(str(exc)))
            if isinstance(exc, asyncio.CancelledError):
                raise
            log.exception("hermes_nb: the MCP server stopped")
        finally:
            self.sock.close()

    def start(self) -> None:
        """Start serving on the background loop and write the home file; ServeError if it cannot."""
        loop = async_bridge.get_loop()
        ready: asyncio.Future[None] | None = None

        async def begin() -> None:
            nonlocal ready
            ready = loop.create_future()
            self._task = loop.create_task(self._own(ready))
            await ready

        self._watch()  # before the first listing, so no change falls between it and the listeners
        try:
            async_bridge.run_sync(begin(), timeout=30)
        except BaseException as exc:
            while self._undos:
                self._undos.pop()()
            if isinstance(exc, Exception) and not isinstance(exc, ServeError):
                raise ServeError(f"the MCP server did not start: {type(exc).__name__}: {exc}") from exc
            raise
        self._undos.append(self._install_approval())
        _write_serve_file(self)

    def _install_approval(self) -> Callable[[], None]:
        """Approvals asked by served calls go to the serving cell's prompt, naming the client; others
        go on to whoever answered before (the inline prompt)."""
        from hermes_nb.serve.app import client_of_this_call
        from hermes_nb.tools import approval

        # whoever answered before us keeps answering everything that is not a served call; should the
        # stack's name change (it is the approval module's own), the extension's inline prompt stands in
        stack = getattr(approval, "_default_callback", None)
        below = stack.current() if stack is not None else None
        if stack is None:
            from hermes_nb.display.prompts import approval_prompt as below
        approver = self.approver

        def answer(command: str, key: str, description: str) -> str:
            client = client_of_this_call(command)
            if client is None:
                return below(command, key, description) if below is not None else "deny"
            return approver(command, key, description, client) if approver is not None else "deny"

        undo_approval = approval.set_default_approval_callback(answer)
        undo_clarify = self._install_clarify()

        def undo() -> None:
            undo_clarify()
            undo_approval()

        return undo

    def _install_clarify(self) -> Callable[[], None]:
        """The ``clarify`` tool called by a client asks in the serving cell too (never in whatever cell
        runs last)."""
        from hermes_nb.serve.app import client_of_this_call
        from hermes_nb.tools import clarify_tool

        stack = getattr(clarify_tool, "_callbacks", None)
        below = stack.current() if stack is not None else None
        if stack is None:
            from hermes_nb.display.prompts import clarify_prompt as below
        ask = getattr(self.app.events, "ask_clarify", None)

        def answer(question: str, choices: list[str] | None = None) -> str:
            client = client_of_this_call("clarify")
            if client is None:
                return below(question, choices) if below is not None else ""
            return ask(question, choices, client) if ask is not None else ""

        return clarify_tool.set_clarify_callback(answer)

    def _watch(self) -> None:
        """Registry and selection changes become tools/list_changed (undone on stop)."""
        from hermes_nb.selection import selection
        from hermes_nb.tools.registry import registry

        loop = async_bridge.get_loop()

        def on_registry(_event: str, name: str) -> None:  # any thread
            loop.call_soon_threadsafe(self._changed, name)

        def on_selection() -> None:
            loop.call_soon_threadsafe(self._changed, None)

        self._undos.append(registry.add_listener(on_registry))
        if self.options.toolsets is None:
            self._undos.append(selection.on_change(on_selection))

    def _changed(self, name: str | None) -> None:
        """On the loop: coalesce a burst of changes (one cell may register several tools) into one check."""
        if name is not None:
            self._pending.add(name)
        if not self._announcing:
            self._announcing = True
            asyncio.get_running_loop().create_task(self._announce())

    async def _announce(self) -> None:
        await asyncio.sleep(0)  # let the rest of this burst's callbacks land first
        self._announcing = False
        try:
            await self._announce_now()
        except Exception:  # boundary: a broken check must not silence later announcements
            log.exception("hermes_nb: tools/list_changed could not be sent")

    async def _announce_now(self) -> None:
        pending, self._pending = self._pending, set()
        names = self.app.view.names()
        # a selection change that leaves the served set alone is no news; a re-run cell of a served tool is
        if names != self._last_names or pending & (names | self._last_names):
            self._last_names = names
            self.announcements += 1
            await self.app.announce_tools_changed()
            self.app.events.changed()

    def stop(self) -> None:
        """Stop serving (idempotent); the home file goes first, so no one reads a dead URL."""
        _remove_serve_file(os.getpid())
        while self._undos:
            self._undos.pop()()
        close = getattr(self.app.events, "close", None)
        if callable(close):
            close()
        task, stop = self._task, self._stop
        if task is None or task.done() or stop is None:
            return
        loop = async_bridge.get_loop()

        async def end() -> None:
            stop.set()
            await asyncio.wait({task}, timeout=10)
            if not task.done():
                task.cancel()

        if async_bridge.in_loop_thread():
            loop.create_task(end())
            return
        try:
            async_bridge.run_sync(end(), timeout=15)
        except (TimeoutError, RuntimeError):  # at exit the loop may already be gone
            log.warning("hermes_nb: the MCP server did not stop cleanly")

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()


# -- the one server of this kernel ----------------------------------------------------------------

_current: ServingServer | None = None
_atexit_installed = False


def current() -> ServingServer | None:
    """The running server, or None."""
    return _current if _current is not None and _current.running else None


def start_serving(options: ServeOptions, *, events: Any = None, approver: Approver | None = None) -> ServingServer:
    """Start the kernel's MCP server; ServeError when one runs already or it cannot start."""
    global _current, _atexit_installed
    _require_mcp2()
    if current() is not None:
        raise ServeError("already serving; %mcp serve shows it, %mcp serve stop stops it")
    other = _serve_file_owner()
    if other is not None and other != os.getpid():
        raise ServeError(f"another kernel (pid {other}) is serving from this home ({serve_file()}); "
                         "stop it there first")
    server = ServingServer(options, events=events, approver=approver)
    server.start()
    _current = server
    if not _atexit_installed:
        atexit.register(stop_serving)
        _atexit_installed = True
    return server


def stop_serving() -> bool:
    """Stop the kernel's MCP server; False when none was running."""
    global _current
    server, _current = _current, None
    if server is None:
        return False
    server.stop()
    return True


# -- the home file --------------------------------------------------------------------------------

def _write_serve_file(server: ServingServer) -> None:
    from hermes_nb.tools.safety.safe_write import write_atomic

    path = serve_file()
    data = {"url": server.url, "token": server.token, "pid": os.getpid(), "name": server.options.name,
            "started": server.started}
    # a fresh 0600 file renamed into place: a link planted under the name is replaced, never followed
    write_atomic(Path(os.path.realpath(path.parent)), path.name, json.dumps(data).encode("utf-8"))


def _serve_file_owner() -> int | None:
    """The pid in the home file if that process still lives (a crashed kernel's file is ignored)."""
    try:
        pid = int(json.loads(serve_file().read_text(encoding="utf-8"))["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


def _remove_serve_file(pid: int) -> None:
    """Remove the home file if this process wrote it."""
    path = serve_file()
    try:
        if int(json.loads(path.read_text(encoding="utf-8")).get("pid", -1)) == pid:
            path.unlink()
    except (OSError, ValueError, AttributeError, TypeError):
        pass
