"""Watching a live connection: the ping behind a waiting stdio request, and the relay that sees the
transport's read side end by itself (``session.ServerConnection`` uses both)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

__all__ = ["PROBE_FIRST", "PROBE_MAX", "Probe", "watch_end"]

log = logging.getLogger(__name__)

PROBE_FIRST = 1.0  # a stdio request unanswered this long gets a ping behind it, then at doubling intervals
PROBE_MAX = 30.0


class Probe:
    """Pings behind a waiting stdio request, 1 s after it and then at doubling intervals (to 30 s).

    A ping is only a second write: if the server is gone, that write fails and the transport ends, which
    the owner (mcp 1.x: the task group cancels it) or the read relay (mcp 2.x: the writer closes the read
    stream) turns into the connection's end, and the request into "went away". The ping's own answer, or
    its lack (a server busy in a blocking tool answers late), decides nothing. Costs one timer per request
    that ends within a second; nothing is sent for those."""

    __slots__ = ("_delay", "_handle", "_session", "_stop", "_task")

    def __init__(self, session: Any, stop: asyncio.Event) -> None:
        self._session, self._stop = session, stop
        self._delay = PROBE_FIRST
        self._task: asyncio.Task[None] | None = None
        self._handle: asyncio.TimerHandle | None = asyncio.get_running_loop().call_later(self._delay, self._start)

    def _start(self) -> None:
        self._handle = None
        if not self._stop.is_set():
            self._task = asyncio.get_running_loop().create_task(self._pings(), name="mcp-probe")

    async def _pings(self) -> None:
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._session.send_ping(), timeout=self._delay)
            except Exception:  # late, refused or failed: the transport's end, if any, is seen elsewhere
                log.debug("MCP ping unanswered", exc_info=True)
            self._delay = min(self._delay * 2, PROBE_MAX)
            await asyncio.sleep(self._delay)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        if self._task is not None:
            self._task.cancel()


@asynccontextmanager
async def watch_end(read: Any, on_end: Callable[[], None]) -> AsyncIterator[Any]:
    """The transport's read stream, relayed: ``on_end()`` runs when the transport's side ends by itself.

    Not when the session closed its end first (a stop): then the relay finds the stream closed."""
    import anyio

    send, receive = anyio.create_memory_object_stream[Any](0)  # unbuffered, as the SDK's own streams

    async def relay() -> None:
        try:
            async with send:
                async for item in read:
                    await send.send(item)
                on_end()  # before the session sees the end: a reply failed by it finds us failed
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async with anyio.create_task_group() as group:
        group.start_soon(relay)
        try:
            yield receive
        finally:
            group.cancel_scope.cancel()
