"""One long-lived connection to an MCP server, owned by one task on the background loop.

anyio requires a transport and a ``ClientSession`` to be entered and exited in the same task, and a
notebook cell is a different task each time. So an *owner task* on ``tools.async_bridge``'s loop opens
the transport and the session, publishes the session, and waits for a stop event; calls from other
tasks on the same loop use the session's methods directly (its request/response matching is
task-safe). When the server dies or closes its output, the owner sees its transport's read side end
(or its task group fail) and the connection becomes ``failed`` at once, with no call needed; a request
still waiting then fails with it rather than waiting out its timeout. The next call reconnects, no
more often than the backoff allows (1 s doubling to 30 s); calls arriving meanwhile wait for that one
start, which the owner bounds itself by ``connect_timeout``.

``mcp`` is imported only inside functions: it costs a noticeable fraction of a second.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import IO, Any, TypeVar

from hermes_nb.tools.errors import HermesNbError
from hermes_nb.tools.mcp_client import sdk
from hermes_nb.tools.mcp_client.config import MCPServerConfig
from hermes_nb.tools.mcp_client.watch import Probe, watch_end

__all__ = ["MCPServerError", "ServerConnection"]

log = logging.getLogger(__name__)

T = TypeVar("T")

BACKOFF_START = 1.0
BACKOFF_MAX = 30.0
STDERR_TAIL = 2000


class MCPServerError(HermesNbError):
    """An MCP server could not be reached, did not start, or went away."""


def _flatten(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _flatten(sub)]
    return [exc]


def describe_exception(exc: BaseException) -> str:
    """One line for a person: the innermost real errors of an anyio exception group."""
    leaves = [e for e in _flatten(exc) if not isinstance(e, asyncio.CancelledError)] or [exc]
    parts = []
    for leaf in leaves[:3]:
        text = str(leaf).strip().splitlines()
        parts.append(f"{type(leaf).__name__}: {text[0]}" if text else type(leaf).__name__)
    return "; ".join(parts)


class ServerConnection:
    """A server's session and tools; every coroutine here runs on the background loop."""

    def __init__(self, config: MCPServerConfig, on_list_changed: Callable[[str], None] | None = None) -> None:
        self.config = config
        self.status = "stopped"  # starting / ready / failed / stopped
        self.last_error = ""
        self.stderr_tail = ""
        self.tools: list[Any] = []  # mcp Tool records from the last listing
        self.dirty = False  # tools/list_changed seen since the last listing
        self.list_changed_count = 0
        self.session: Any = None
        self._on_list_changed = on_list_changed
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._starting: asyncio.Future[None] | None = None
        self._errlog: IO[str] | None = None
        self._backoff = BACKOFF_START
        self._next_attempt = 0.0
        self._was_ready = False

    @property
    def name(self) -> str:
        return self.config.name

    # -- life cycle -------------------------------------------------------------------------------

    async def connect(self, *, force: bool = False) -> None:
        """Be ready: start the owner task if needed and wait for initialize + the first tool listing.

        Raises ``MCPServerError`` (with the stderr tail) when the server does not come up in
        ``connect_timeout``, or when the backoff since the last failure has not passed (unless forced).
        Callers arriving while a start is under way wait for that same start: one owner at a time.
        """
        if self.status == "ready" and self.session is not None:
            return
        starting = self._starting
        if starting is None or starting.done():
            starting = self._begin(force)
        await asyncio.shield(starting)  # a caller that gives up (cancelled) leaves the start running

    def _begin(self, force: bool) -> asyncio.Future[None]:
        """Claim the next start, with no await before the claim: concurrent callers cannot start two."""
        loop = asyncio.get_running_loop()
        if not force and loop.time() < self._next_attempt:
            wait = self._next_attempt - loop.time()
            raise MCPServerError(
                f"MCP server {self.name!r} is unavailable ({self.last_error or 'failed'}); "
                f"next reconnect attempt in {wait:.1f} s"
            )
        self.status, self.last_error, self.stderr_tail = "starting", "", ""
        self._stop = stop = asyncio.Event()
        ready: asyncio.Future[None] = loop.create_future()
        ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved even if nobody waits
        self._starting = ready
        previous = self._task  # still closing after a failure, perhaps: the new owner waits for it
        self._task = loop.create_task(self._own(ready, stop, previous), name=f"mcp-owner-{self.name}")
        return ready

    async def close(self) -> None:
        """Stop the owner task (it closes the session and ends the process) and wait for it."""
        if self._stop is not None:
            self._stop.set()
        starting = self._starting is not None and not self._starting.done()
        await self._join_owner(cancel=starting)  # a start in progress would not look at the stop event
        self.status = "stopped"
        self.session = None

    async def _join_owner(self, cancel: bool = False) -> None:
        task, self._task = self._task, None
        await _join(task, self.name, cancel=cancel)

    async def _own(
        self, ready: asyncio.Future[None], stop: asyncio.Event, previous: asyncio.Task[None] | None
    ) -> None:
        """The owner task: enter transport and session, serve until stopped, exit in this same task.

        The owner bounds its own start (``connect_timeout``): no caller's patience, or cancellation,
        decides whether a start is abandoned, so a start is never left without a deadline.
        """
        from contextlib import AsyncExitStack

        loop = asyncio.get_running_loop()
        me = asyncio.current_task()
        timed_out = False

        def time_out() -> None:
            nonlocal timed_out
            if not ready.done() and me is not None:
                timed_out = True
                me.cancel()

        watchdog = None
        try:
            await _join(previous, self.name, cancel=False)  # already stopping; its shutdown is bounded
            await _import_mcp()
            from mcp import ClientSession

            watchdog = loop.call_later(self.config.connect_timeout, time_out)
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                try:
                    # the transport's read side ends when the server exits or closes its stdout; mcp 1.x's
                    # session then answers only the requests pending at that moment, and any later request
                    # waited its whole timeout. Watching the read side ends the connection at once instead.
                    read = await stack.enter_async_context(watch_end(read, lambda: self._hung_up(stop)))
                    session = await stack.enter_async_context(
                        ClientSession(read, write, message_handler=self._on_message)
                    )
                    await session.initialize()
                    self.tools = await _list_all_tools(session)
                    watchdog.cancel()
                    # after a reconnect the server may offer other tools (an upgrade, a restart): the next
                    # refresh between batches registers them again, through the changed-definition guard
                    self.dirty = self._was_ready
                    self._was_ready = True
                    if stop.is_set():  # the server hung up during the start
                        raise MCPServerError(self.last_error or "stopped while starting")
                    self.session = session
                    self.status = "ready"
                    self._backoff = BACKOFF_START
                    self._next_attempt = 0.0
                    if not ready.done():
                        ready.set_result(None)
                    await stop.wait()
                finally:
                    # Served and now ended without a stop being asked for (the transport failed a write, its
                    # task group cancelled us): say so now. Leaving the transport can still wait long, e.g.
                    # for a pipe a child of the server keeps open, and callers must not wait with it.
                    if ready.done():
                        self._hung_up(stop)
        except asyncio.CancelledError:
            if timed_out:
                self._owner_failed(me, f"did not start within {self.config.connect_timeout:g} s")
            else:
                self._owner_failed(me, "cancelled while starting" if not ready.done() else "stopped")
            if not ready.done():
                ready.set_exception(MCPServerError(self._failure_text()))
            if not timed_out:
                raise
        except BaseException as exc:  # boundary: whatever ended the transport becomes the server's status
            log.debug("MCP server %r ended", self.name, exc_info=True)
            self._owner_failed(me, describe_exception(exc))
            if not ready.done():
                ready.set_exception(MCPServerError(self._failure_text()))
        else:
            if not ready.done():
                ready.set_exception(MCPServerError(self._failure_text()))
        finally:
            if watchdog is not None:
                watchdog.cancel()
            current = self._task is me  # not replaced by a newer owner, nor detached by close()
            if current:
                self.session = None
                if self.status in ("ready", "starting"):
                    self.status = "stopped"
            self._close_errlog(keep_tail=current)

    def _owner_failed(self, owner: asyncio.Task[None] | None, message: str) -> None:
        """An owner's failure, recorded only while it is the current owner (a newer one owns the status)."""
        if self._task is owner:
            self._failed(message)

    def _hung_up(self, stop: asyncio.Event) -> None:
        """The owner's transport stopped delivering messages: the server exited or closed its output."""
        if stop.is_set() or self._stop is not stop:
            return  # a requested stop, or an owner already replaced
        self.session = None
        self._failed("the server closed the connection (exited or closed its stdout)")
        stop.set()

    def _transport(self) -> Any:
        cfg = self.config
        if cfg.transport == "http":
            from mcp.shared._httpx_utils import create_mcp_http_client

            client = create_mcp_http_client(headers=dict(cfg.headers))
            return _http_transport(sdk.streamable_http_client(), cfg.url or "", client)
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        # stderr goes to a real file (the SDK passes it to the child as a file descriptor); its tail
        # explains a failed start.
        self._close_errlog()
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        params = StdioServerParameters(
            command=resolve_command(cfg.command or ""),
            args=list(cfg.args),
            env=dict(cfg.env) or None,
            cwd=cfg.cwd,
            encoding_error_handler="replace",  # junk bytes on stdout must not end the session
        )
        return stdio_client(params, errlog=self._errlog)

    async def _on_message(self, message: Any) -> None:
        if sdk.is_tool_list_changed(message):
            self.dirty = True
            self.list_changed_count += 1
            if self._on_list_changed is not None:
                self._on_list_changed(self.name)
        elif isinstance(message, Exception):  # e.g. a line of junk on the server's stdout
            log.debug("MCP server %r sent something unreadable: %s", self.name, message)

    # -- failures and backoff ---------------------------------------------------------------------

    def _failed(self, message: str) -> None:
        self.stderr_tail = self._read_stderr_tail() or self.stderr_tail
        if self.status != "failed":  # one backoff step per failed connection, however many report it
            self._schedule_retry()
            if self.status != "stopped" or not self.last_error:
                self.last_error = message
        self.status = "failed"

    def _schedule_retry(self) -> None:
        try:
            now = asyncio.get_running_loop().time()
        except RuntimeError:
            return
        self._next_attempt = now + self._backoff
        self._backoff = min(self._backoff * 2, BACKOFF_MAX)

    def _failure_text(self) -> str:
        text = f"MCP server {self.name!r} failed: {self.last_error}"
        if self.stderr_tail:
            text += f"\n--- stderr (last lines) ---\n{self.stderr_tail}"
        return text

    def _read_stderr_tail(self) -> str:
        errlog = self._errlog
        if errlog is None or errlog.closed:
            return ""
        try:
            errlog.flush()
            fd = errlog.fileno()
            size = os.fstat(fd).st_size
            data = os.pread(fd, STDERR_TAIL, max(0, size - STDERR_TAIL))
        except OSError:
            return ""
        return data.decode("utf-8", "replace").strip()

    def _close_errlog(self, keep_tail: bool = True) -> None:
        if self._errlog is not None:
            tail = self._read_stderr_tail()
            if tail and keep_tail:
                self.stderr_tail = tail
            self._errlog.close()
            self._errlog = None

    def connection_lost(self, message: str) -> None:
        """A call found the connection dead: fail it now so the next call reconnects (after backoff)."""
        self._failed(message)
        if self._stop is not None:
            self._stop.set()

    # -- requests ---------------------------------------------------------------------------------

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], *, timeout: float | None = None, progress: Any = None
    ) -> Any:
        """``tools/call`` on this server (reconnecting first if it went away); ``MCPServerError`` on
        a lost connection or a timeout, naming the server."""
        await self.connect()
        timeout = self.config.timeout if timeout is None else timeout
        session = self.session
        gone = MCPServerError(
            f"MCP server {self.name!r} went away during the call to {tool!r}; the next call reconnects"
        )
        try:
            return await self._while_connected(
                lambda s: s.call_tool(
                    tool, arguments, read_timeout_seconds=sdk.timeout(timeout), progress_callback=progress
                )
            )
        except _ConnectionEnded:
            raise gone from None
        except Exception as exc:
            failure = sdk.request_failure(exc)
            if failure == "closed":
                if self.session is session:  # not a connection made since, by another call
                    self.connection_lost(f"connection closed during a call to {tool!r}")
                raise gone from None
            if failure == "timeout":
                raise MCPServerError(
                    f"MCP server {self.name!r}: {tool!r} timed out after {timeout:g} s"
                ) from None
            raise

    async def refresh_tools(self) -> list[Any]:
        """List the tools again (after tools/list_changed)."""
        await self.connect()
        self.dirty = False
        try:
            self.tools = await self._while_connected(_list_all_tools)
        except _ConnectionEnded:
            raise MCPServerError(f"MCP server {self.name!r} went away while listing its tools") from None
        return self.tools

    async def _while_connected(self, request: Callable[[Any], Awaitable[T]]) -> T:
        """``request(session)``, ended at once (``_ConnectionEnded``) if the connection ends first.

        The SDK does not always answer a request whose connection is gone (mcp 1.x: one sent after
        its reader saw the end waits out its whole timeout), so the request races the owner task.
        And a stdio write into a server that has just exited can succeed as far as asyncio tells its
        writer (the broken pipe is noticed one step later, by nobody): both SDK majors fail the transport
        only at the *next* write. So a stdio request that waits gets a ping behind it (``watch.Probe``)."""
        session, owner, stop = self.session, self._task, self._stop
        if session is None or owner is None or owner.done() or stop is None or stop.is_set():
            raise _ConnectionEnded
        call = asyncio.ensure_future(request(session))
        ended = asyncio.ensure_future(stop.wait())  # set as the connection ends, before the owner has left it
        probe = Probe(session, stop) if self.config.transport != "http" else None
        try:
            await asyncio.wait((call, owner, ended), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # the caller gave up: so does the request
            call.cancel()
            raise
        finally:
            ended.cancel()
            if probe is not None:
                probe.cancel()
        if not call.done():
            call.cancel()
            raise _ConnectionEnded
        return call.result()


class _ConnectionEnded(Exception):
    """The connection a request was sent on ended before the answer came."""


async def _join(task: asyncio.Task[None] | None, name: str, *, cancel: bool) -> None:
    """Wait (bounded) for an owner task to end; cancel it first if asked, or if it overruns."""
    if task is None or task.done():
        return
    if cancel:
        task.cancel()
    try:
        # stdio shutdown is bounded inside the SDK (close stdin, wait, terminate, kill)
        await asyncio.wait_for(asyncio.shield(task), timeout=15)
    except TimeoutError:
        task.cancel()
        log.warning("MCP server %r: owner task did not stop in time; cancelled", name)
    except BaseException:  # the owner already recorded its own failure
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise


async def _import_mcp() -> None:
    """Import the SDK in a worker thread the first time: about a second that must not freeze the loop."""
    import sys

    if "mcp.client.streamable_http" not in sys.modules:
        await asyncio.to_thread(_import_modules)


def _import_modules() -> None:
    import mcp
    import mcp.client.stdio
    import mcp.client.streamable_http  # noqa: F401


async def _list_all_tools(session: Any) -> list[Any]:
    """Every page of tools/list."""
    from mcp import types

    tools: list[Any] = []
    cursor = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = sdk.field(page, "next_cursor")
        if not cursor:
            return tools


def _http_transport(factory: Any, url: str, client: Any) -> Any:
    """The streamable HTTP transport with its own httpx client, closed with it."""

    @asynccontextmanager
    async def transport() -> Any:
        async with client, factory(url, http_client=client) as streams:
            yield streams[0], streams[1]

    return transport()


def resolve_command(command: str) -> str:
    """A bare command found on PATH, else next to this interpreter (a kernel started from an
    un-activated virtualenv has the venv's console scripts there but not on PATH)."""
    if not command or os.sep in command or shutil.which(command):
        return command
    return shutil.which(command, path=os.path.dirname(sys.executable)) or command
