"""Running a batch of tool calls: segment by segment, results in call order, never one failure for all.

``plan_tool_batch`` (``hermes_nb.tools.batch.plan``) decides what may share time; the records it returns live in
``hermes_nb.tools.batch.records`` and one batch's bookkeeping in ``hermes_nb.tools.batch.state``. Here each parallel segment
runs its sync handlers in one shared thread pool (created lazily, reused across batches) and its async
handlers concurrently on the background loop (``tools.async_bridge``); every call goes through
scope (inside a run, only the tools it offered: ``batch.scope``) and the approval gate (before its clock
starts), then ``registry.call`` / ``acall``. A failing call is an error result, a timed-out call is
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
late result is dropped. The same holds for a timed-out sync handler: its thread is abandoned and replaced
(``batch.pool``), so it never holds up later calls.

Timeouts never wait for a call to start: a batch's ``timeout`` counts from the batch's start, a tool's
``metadata["timeout"]`` from its segment's start. A call still waiting (for a worker, or for earlier
segments) when its time runs out comes back as ``{"error": "... never started ...", "not_started": true}``,
so a batch with a timeout returns within it whatever its calls do.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from hermes_nb.tools import async_bridge
from hermes_nb.tools.batch.plan import BatchSegment, plan_tool_batch, should_parallelize_tool_batch
from hermes_nb.tools.batch.pool import ToolPool
from hermes_nb.tools.batch.records import INTERRUPTED_MESSAGE, BatchEvent, BatchInterrupted, ToolCallResult
from hermes_nb.tools.batch.state import (
    DEFAULT_MAX_WORKERS,
    Batch,
    Slot,
    decide_async,
    run_async_call,
    run_sync_call,
    shared_pool,
)
from hermes_nb.tools.errors import BridgeError
from hermes_nb.tools.interaction import main_thread_waiting, service
from hermes_nb.tools.registry import ToolRegistry
from hermes_nb.tools.search.scope import unwrap_calls

__all__ = ["INTERRUPTED_MESSAGE", "BatchEvent", "BatchInterrupted", "BatchSegment", "ToolCallResult",
           "arun_tool_batch", "plan_tool_batch", "run_tool_batch", "should_parallelize_tool_batch"]

_WAIT_SLICE = async_bridge.WAIT_SLICE


# -- sync entry point -----------------------------------------------------------------------------

def _run_segment(batch: Batch, slots: list[Slot], max_workers: int) -> None:
    waiting = deque(s for s in slots if not s.is_async)
    running: list[Slot] = []
    ready = time.perf_counter()
    for slot in slots:
        batch.arm(slot, ready)  # the clock starts with the segment, whether or not a worker is free
    batch.overdue(slots, ready)  # a batch whose time already ran out starts nothing more
    for slot in slots:
        if slot.is_async and slot.result is None:
            slot.future = async_bridge.submit(run_async_call(batch, slot))
    pool = shared_pool(max_workers)
    while True:
        running = [s for s in running if s.result is None]
        while waiting and len(running) < max_workers:  # the batch's own window on the shared pool
            slot = waiting.popleft()
            if slot.result is None:
                slot.future, slot.pool = pool.submit_call((slot.call.name, slot.call.id), run_sync_call, batch, slot), pool
                running.append(slot)
        now = time.perf_counter()
        soonest = batch.overdue(slots, now)
        wait = _WAIT_SLICE if soonest is None else min(_WAIT_SLICE, soonest - now)
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
    ``timeout`` (seconds) bounds the whole batch: calls unfinished when it runs out are timed out, those
    that never started say so. Without it, a tool's ``metadata["timeout"]`` bounds each of its calls
    from the start of the call's segment.
    Raises ``BatchInterrupted`` (a ``KeyboardInterrupt``) on an interrupt, carrying every result.
    """
    if async_bridge.in_loop_thread():
        raise BridgeError("run_tool_batch() was called on the hermes_nb background loop; "
                          "await arun_tool_batch() instead")
    if registry is None:
        from hermes_nb.tools.registry import registry as registry_
        registry = registry_
    registry.before_batch()  # e.g. MCP list_changed: applied between batches, never during one
    # tool search: a `tool_call` of a deferred tool becomes that tool's call here, before the plan and the gate
    batch = Batch(unwrap_calls(tool_calls), registry, timeout, on_event)
    try:
        with main_thread_waiting():
            for seg in batch.plan:
                _run_segment(batch, batch.segment_slots(seg), max(1, max_workers))
    except KeyboardInterrupt:
        raise BatchInterrupted(batch.interrupt_all()) from None
    return batch.results()


# -- async entry point ----------------------------------------------------------------------------

async def _arun_call(batch: Batch, slot: Slot, pool: ToolPool, limit: asyncio.Semaphore) -> None:
    if not await decide_async(batch, slot):  # the person decides before the call's clock starts
        return
    now = time.perf_counter()
    batch.arm(slot, now)
    left = None if slot.deadline is None else slot.deadline - now
    if left is not None and left <= 0:
        batch.time_out(slot)  # the batch's time ran out in earlier segments: it never starts
        return
    try:  # the clock covers waiting for a worker too, so a call that never starts is still bounded
        await asyncio.wait_for(_arun_started(batch, slot, pool, limit), left)
    except TimeoutError:
        batch.time_out(slot)


async def _arun_started(batch: Batch, slot: Slot, pool: ToolPool, limit: asyncio.Semaphore) -> None:
    if slot.is_async:
        await run_async_call(batch, slot)  # on the caller's loop
        return
    async with limit:
        future = pool.submit_call((slot.call.name, slot.call.id), run_sync_call, batch, slot)
        slot.future, slot.pool = future, pool
        await asyncio.wrap_future(future)


async def _gather_servicing(tasks: list[asyncio.Task[None]]) -> None:
    """Await the tasks; awaited on the main thread (top-level ``await`` in a cell), also show the prompts
    that tools in worker threads ask meanwhile, in this cell's context (tools.interaction)."""
    if threading.current_thread() is not threading.main_thread():
        await asyncio.gather(*tasks)
        return
    with main_thread_waiting():
        pending: set[asyncio.Task[None]] = set(tasks)
        while pending:
            _, pending = await asyncio.wait(pending, timeout=async_bridge.WAIT_SLICE)
            service()
    await asyncio.gather(*tasks)


async def arun_tool_batch(tool_calls: Sequence[Any], *, registry: ToolRegistry | None = None,
                          max_workers: int = DEFAULT_MAX_WORKERS, timeout: float | None = None,
                          on_event: Callable[[BatchEvent], Any] | None = None) -> list[ToolCallResult]:
    """``run_tool_batch`` for callers already on a loop: async handlers are awaited on this loop.

    On ``KeyboardInterrupt`` it raises ``BatchInterrupted`` with every result. When the awaiting task is
    cancelled, the calls are cancelled and ``CancelledError`` propagates (asyncio's contract).
    """
    if registry is None:
        from hermes_nb.tools.registry import registry as registry_
        registry = registry_
    await registry.abefore_batch()
    batch = Batch(unwrap_calls(tool_calls), registry, timeout, on_event)  # tool search's tool_call, as above
    pool = shared_pool(max_workers)
    limit = asyncio.Semaphore(max(1, max_workers))
    tasks: list[asyncio.Task[None]] = []
    try:
        for seg in batch.plan:
            tasks = [asyncio.ensure_future(_arun_call(batch, s, pool, limit)) for s in batch.segment_slots(seg)]
            await _gather_servicing(tasks)
    except (KeyboardInterrupt, asyncio.CancelledError) as exc:
        for task in tasks:
            task.cancel()
        results = batch.interrupt_all()
        if isinstance(exc, KeyboardInterrupt):
            raise BatchInterrupted(results) from None
        raise
    return batch.results()
