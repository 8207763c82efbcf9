"""Running a batch of tool calls: segment by segment, results in call order, never one failure for all.

``plan_tool_batch`` (``tools.batch_plan``) decides what may share time. Here each parallel segment
runs its sync handlers in one shared thread pool (created lazily, reused across batches) and its async
handlers concurrently on the background loop (``tools.async_bridge``); every call goes through
``registry.dispatch`` / ``dispatch_async``. A failing call is an error result, a timed-out call is
``{"error": "Tool NAME timed out after N s"}``; neither cancels the others.

Callbacks: ``on_event(BatchEvent)`` is called from worker threads, the background loop's thread, or
the waiting thread (for timeouts and interrupts) -- never assume the cell's thread. Updating an IPython
``DisplayHandle`` or a widget property from there is safe; ``print`` is not (it lands in whatever cell
runs last). An exception in ``on_event`` is logged and ignored.

Prompts: while ``run_tool_batch`` waits on the main thread it services ``tools.interaction`` requests, so
an approval or clarify prompt raised by a handler in a worker thread is shown from the main thread
(the only one a widget click can reach during a running cell).

Interrupts: a ``KeyboardInterrupt`` while ``run_tool_batch`` waits (a kernel interrupt) stops the
waiting, cancels what has not started, and raises ``BatchInterrupted`` carrying one result per call
(finished ones keep their content; the others say they were interrupted). It subclasses
``KeyboardInterrupt`` so naive callers still stop; the agent loop catches it to answer every call.
A sync handler already running in a thread cannot be stopped; it finishes in the background and its
late result is dropped. The same holds for a timed-out sync handler (it keeps a pool thread until done).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tools import async_bridge
from tools.batch_plan import (
    BatchSegment,
    CallView,
    plan_tool_batch,
    should_parallelize_tool_batch,
    unpack_call,
)
from tools.errors import BridgeError
from tools.interaction import main_thread_waiting, service
from tools.registry import ToolRegistry, tool_error

__all__ = ["BatchEvent", "BatchInterrupted", "BatchSegment", "ToolCallResult", "arun_tool_batch",
           "plan_tool_batch", "run_tool_batch", "should_parallelize_tool_batch"]

log = logging.getLogger(__name__)

INTERRUPTED_MESSAGE = "Interrupted by the user before this call finished"
DEFAULT_MAX_WORKERS = 8
_WAIT_SLICE = async_bridge.WAIT_SLICE


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallResult:
    """The answer to one tool call; ``started``/``ended`` are ``time.perf_counter()`` values.

    A call that never started (interrupted first) has ``started == ended``, the moment it was settled.
    """

    index: int
    tool_call_id: str
    name: str
    arguments: Any
    content: str
    started: float
    ended: float
    duration: float
    is_error: bool = False
    timed_out: bool = False
    interrupted: bool = False
    segment: int = 0
    parallel: bool = False

    def to_message(self) -> dict[str, str]:
        """The ``role: tool`` message for the model."""
        return {"role": "tool", "tool_call_id": self.tool_call_id, "name": self.name, "content": self.content}


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchEvent:
    """A call started or ended (``result`` is set on "end")."""

    kind: Literal["start", "end"]
    index: int
    tool_call_id: str
    name: str
    time: float
    result: ToolCallResult | None = None
    segment: int = 0
    parallel: bool = False


class BatchInterrupted(KeyboardInterrupt):
    """A batch was interrupted; ``results`` still holds one result per call, in call order."""

    def __init__(self, results: list[ToolCallResult]) -> None:
        super().__init__(f"tool batch interrupted ({sum(r.interrupted for r in results)} of {len(results)} "
                         "calls unfinished)")
        self.results = results


def _seconds(value: Any) -> float | None:
    """A tool's ``metadata["timeout"]`` when it is a positive number, else no timeout."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    return float(value)


def _is_error(content: str) -> bool:
    if not content.startswith("{"):
        return False
    try:
        value = json.loads(content)
    except ValueError:
        return False
    return isinstance(value, dict) and "error" in value


# -- the shared pool ------------------------------------------------------------------------------

_pool_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_size = 0


def _shared_pool(max_workers: int) -> concurrent.futures.ThreadPoolExecutor:
    """The process-wide pool for sync handlers; grown (replaced) only when a caller asks for more."""
    global _pool, _pool_size
    want = max(DEFAULT_MAX_WORKERS, max_workers)
    with _pool_lock:
        if _pool is None or _pool_size < want:
            old = _pool
            _pool = concurrent.futures.ThreadPoolExecutor(max_workers=want, thread_name_prefix="hermes-nb-tool")
            _pool_size = want
            if old is not None:
                old.shutdown(wait=False)  # its running calls finish; new work goes to the new pool
        return _pool


# -- one batch's bookkeeping ----------------------------------------------------------------------

class _Slot:
    __slots__ = ("call", "is_async", "timeout", "segment", "parallel", "started", "result", "future")

    def __init__(self, call: CallView, is_async: bool, timeout: float | None, segment: int, parallel: bool):
        self.call, self.is_async, self.timeout = call, is_async, timeout
        self.segment, self.parallel = segment, parallel
        self.started: float | None = None
        self.result: ToolCallResult | None = None
        self.future: concurrent.futures.Future[Any] | asyncio.Future[Any] | None = None


class _Batch:
    def __init__(self, tool_calls: Sequence[Any], registry: ToolRegistry, timeout: float | None,
                 on_event: Callable[[BatchEvent], Any] | None):
        self.registry = registry
        self.on_event = on_event
        self.cond = threading.Condition()
        self.plan = plan_tool_batch(tool_calls, registry=registry)
        calls = [unpack_call(c, i) for i, c in enumerate(tool_calls)]
        self.slots: list[_Slot] = [None] * len(calls)  # type: ignore[list-item]
        for seg_no, seg in enumerate(self.plan):
            for i in seg.indices:
                entry = registry.get_entry(calls[i].name)
                limit = timeout if timeout is not None else _seconds(entry.metadata.get("timeout") if entry else None)
                self.slots[i] = _Slot(calls[i], bool(entry and entry.is_async), limit, seg_no, seg.parallel)

    def segment_slots(self, seg: BatchSegment) -> list[_Slot]:
        return [self.slots[i] for i in seg.indices]

    def _emit(self, slot: _Slot, kind: Literal["start", "end"], now: float) -> None:
        if self.on_event is None:
            return
        event = BatchEvent(kind=kind, index=slot.call.index, tool_call_id=slot.call.id, name=slot.call.name,
                           time=now, result=slot.result if kind == "end" else None, segment=slot.segment,
                           parallel=slot.parallel)
        try:
            self.on_event(event)
        except Exception:  # display code must never break a batch
            log.exception("on_event callback failed")

    def start(self, slot: _Slot) -> bool:
        """Mark a call started; False when it was already settled (interrupted) and must not run."""
        with self.cond:
            if slot.result is not None:
                return False
            slot.started = now = time.perf_counter()
        self._emit(slot, "start", now)
        return True

    def finish(self, slot: _Slot, content: str, *, timed_out: bool = False, interrupted: bool = False) -> bool:
        """Settle a call once; a later (late) settlement is ignored."""
        with self.cond:
            if slot.result is not None:
                return False
            now = time.perf_counter()
            started = slot.started if slot.started is not None else now
            slot.result = ToolCallResult(
                index=slot.call.index, tool_call_id=slot.call.id, name=slot.call.name, arguments=slot.call.arguments,
                content=content, started=started, ended=now, duration=now - started, is_error=_is_error(content),
                timed_out=timed_out, interrupted=interrupted, segment=slot.segment, parallel=slot.parallel)
            self.cond.notify_all()
        self._emit(slot, "end", now)
        return True

    def time_out(self, slot: _Slot) -> None:
        if self.finish(slot, tool_error(f"Tool {slot.call.name} timed out after {slot.timeout:g} s"), timed_out=True):
            if slot.future is not None:
                slot.future.cancel()

    def interrupt_all(self) -> list[ToolCallResult]:
        for slot in self.slots:
            if slot.result is None:
                if slot.future is not None:
                    slot.future.cancel()
                self.finish(slot, tool_error(INTERRUPTED_MESSAGE), interrupted=True)
        return self.results()

    def results(self) -> list[ToolCallResult]:
        return [s.result for s in self.slots if s.result is not None]


def _run_sync_call(batch: _Batch, slot: _Slot) -> None:
    if not batch.start(slot):
        return
    try:
        content = batch.registry.dispatch(slot.call.name, slot.call.arguments)
    except BaseException as exc:  # dispatch never raises, except KeyboardInterrupt/SystemExit from a handler
        content = tool_error(f"Tool execution failed: {type(exc).__name__}: {exc}")
    batch.finish(slot, content)


async def _run_async_call(batch: _Batch, slot: _Slot) -> None:
    if not batch.start(slot):
        return
    content = await batch.registry.dispatch_async(slot.call.name, slot.call.arguments)
    batch.finish(slot, content)


# -- sync entry point -----------------------------------------------------------------------------

def _run_segment(batch: _Batch, slots: list[_Slot], max_workers: int) -> None:
    waiting = deque(s for s in slots if not s.is_async)
    running: list[_Slot] = []
    for slot in slots:
        if slot.is_async:
            slot.future = async_bridge.submit(_run_async_call(batch, slot))
    while True:
        running = [s for s in running if s.result is None]
        while waiting and len(running) < max_workers:  # the batch's own window on the shared pool
            slot = waiting.popleft()
            slot.future = _shared_pool(max_workers).submit(_run_sync_call, batch, slot)
            running.append(slot)
        now = time.perf_counter()
        wait = _WAIT_SLICE
        for slot in slots:
            if slot.result is None and slot.started is not None and slot.timeout is not None:
                left = slot.started + slot.timeout - now
                if left <= 0:
                    batch.time_out(slot)
                else:
                    wait = min(wait, left)
        with batch.cond:
            if all(s.result is not None for s in slots):
                return
            batch.cond.wait(wait)
        service()  # a worker's approval or clarify prompt runs here, where a click can reach it


def run_tool_batch(tool_calls: Sequence[Any], *, registry: ToolRegistry | None = None,
                   max_workers: int = DEFAULT_MAX_WORKERS, timeout: float | None = None,
                   on_event: Callable[[BatchEvent], Any] | None = None) -> list[ToolCallResult]:
    """Run a batch of tool calls (openai objects or dicts) and return one result per call, in call order.

    Safe from a cell on the kernel's running loop and from plain Python (no ``asyncio.run`` here).
    ``timeout`` (seconds, from each call's start) overrides a tool's ``metadata["timeout"]``.
    Raises ``BatchInterrupted`` (a ``KeyboardInterrupt``) on an interrupt, carrying every result.
    """
    if async_bridge.in_loop_thread():
        raise BridgeError("run_tool_batch() was called on the hermes_nb background loop; "
                          "await arun_tool_batch() instead")
    if registry is None:
        from tools.registry import registry as registry_
        registry = registry_
    _refresh_mcp()
    batch = _Batch(tool_calls, registry, timeout, on_event)
    try:
        with main_thread_waiting():
            for seg in batch.plan:
                _run_segment(batch, batch.segment_slots(seg), max(1, max_workers))
    except KeyboardInterrupt:
        raise BatchInterrupted(batch.interrupt_all()) from None
    return batch.results()


def _refresh_mcp() -> None:
    """Apply MCP ``tools/list_changed`` between batches, never during one (only if MCP is in use)."""
    if "tools.mcp_tool" in sys.modules:
        sys.modules["tools.mcp_tool"].refresh_pending_mcp_servers()


async def _arefresh_mcp() -> None:
    if "tools.mcp_tool" in sys.modules:
        await sys.modules["tools.mcp_tool"].arefresh_pending_mcp_servers()


# -- async entry point ----------------------------------------------------------------------------

async def _arun_call(batch: _Batch, slot: _Slot, pool: concurrent.futures.Executor,
                     limit: asyncio.Semaphore) -> None:
    loop = asyncio.get_running_loop()
    if slot.is_async:
        work: Any = _run_async_call(batch, slot)  # on the caller's loop
        try:
            await asyncio.wait_for(work, slot.timeout)
        except TimeoutError:
            batch.time_out(slot)
        return
    async with limit:
        future = loop.run_in_executor(pool, _run_sync_call, batch, slot)
        slot.future = future
        try:
            await asyncio.wait_for(future, slot.timeout)
        except TimeoutError:
            batch.time_out(slot)


async def arun_tool_batch(tool_calls: Sequence[Any], *, registry: ToolRegistry | None = None,
                          max_workers: int = DEFAULT_MAX_WORKERS, timeout: float | None = None,
                          on_event: Callable[[BatchEvent], Any] | None = None) -> list[ToolCallResult]:
    """``run_tool_batch`` for callers already on a loop: async handlers are awaited on this loop.

    On ``KeyboardInterrupt`` it raises ``BatchInterrupted`` with every result. When the awaiting task is
    cancelled, the calls are cancelled and ``CancelledError`` propagates (asyncio's contract).
    """
    if registry is None:
        from tools.registry import registry as registry_
        registry = registry_
    await _arefresh_mcp()
    batch = _Batch(tool_calls, registry, timeout, on_event)
    pool = _shared_pool(max_workers)
    limit = asyncio.Semaphore(max(1, max_workers))
    tasks: list[asyncio.Task[None]] = []
    try:
        for seg in batch.plan:
            tasks = [asyncio.ensure_future(_arun_call(batch, s, pool, limit)) for s in batch.segment_slots(seg)]
            await asyncio.gather(*tasks)
    except (KeyboardInterrupt, asyncio.CancelledError) as exc:
        for task in tasks:
            task.cancel()
        results = batch.interrupt_all()
        if isinstance(exc, KeyboardInterrupt):
            raise BatchInterrupted(results) from None
        raise
    return batch.results()
