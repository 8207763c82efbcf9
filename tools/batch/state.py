"""One batch's bookkeeping: the shared thread pool, a slot per call, and settling each call exactly once.

``hermes_nb.tools.batch.scheduling`` drives it. Each call passes the approval gate (``Batch.decide``) before
its clock starts (``Batch.start``). Every call is settled once (finished, timed out or interrupted); a late
settlement is ignored, so a timed-out handler finishing afterwards cannot change the answer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from hermes_nb.tools.batch.plan import BatchSegment, CallView, plan_tool_batch, unpack_call
from hermes_nb.tools.batch.records import INTERRUPTED_MESSAGE, BatchEvent, ToolCallResult
from hermes_nb.tools.registry import ToolEntry, ToolRegistry, tool_error
from hermes_nb.tools.safety import gate
from hermes_nb.tools.safety.gate import current_approver

log = logging.getLogger("hermes_nb.tools.batch.scheduling")  # one logger name for the whole batch machinery

DEFAULT_MAX_WORKERS = 8


def seconds(value: Any) -> float | None:
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


def shared_pool(max_workers: int) -> concurrent.futures.ThreadPoolExecutor:
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

class Slot:
    __slots__ = ("call", "is_async", "timeout", "segment", "parallel", "started", "result", "future", "prepared")

    def __init__(self, call: CallView, is_async: bool, timeout: float | None, segment: int, parallel: bool):
        self.call, self.is_async, self.timeout = call, is_async, timeout
        self.segment, self.parallel = segment, parallel
        self.started: float | None = None
        self.result: ToolCallResult | None = None
        self.future: concurrent.futures.Future[Any] | asyncio.Future[Any] | None = None
        self.prepared: tuple[ToolEntry, dict[str, Any]] | None = None  # set once the gate said yes


class Batch:
    def __init__(self, tool_calls: Sequence[Any], registry: ToolRegistry, timeout: float | None,
                 on_event: Callable[[BatchEvent], Any] | None):
        self.registry = registry
        self.on_event = on_event
        self.cond = threading.Condition()
        # The approver of the run that made this batch (worker threads do not inherit context variables).
        self.approver = current_approver()
        self.ask_lock = threading.Lock()  # one approval prompt at a time
        self.plan = plan_tool_batch(tool_calls, registry=registry)
        calls = [unpack_call(c, i) for i, c in enumerate(tool_calls)]
        self.slots: list[Slot] = [None] * len(calls)  # type: ignore[list-item]
        for seg_no, seg in enumerate(self.plan):
            for i in seg.indices:
                entry = registry.get_entry(calls[i].name)
                limit = timeout if timeout is not None else seconds(entry.metadata.get("timeout") if entry else None)
                self.slots[i] = Slot(calls[i], bool(entry and entry.is_async), limit, seg_no, seg.parallel)

    def segment_slots(self, seg: BatchSegment) -> list[Slot]:
        return [self.slots[i] for i in seg.indices]

    def _emit(self, slot: Slot, kind: Literal["start", "end"], now: float) -> None:
        if self.on_event is None:
            return
        event = BatchEvent(kind=kind, index=slot.call.index, tool_call_id=slot.call.id, name=slot.call.name,
                           time=now, result=slot.result if kind == "end" else None, segment=slot.segment,
                           parallel=slot.parallel)
        try:
            self.on_event(event)
        except Exception:  # display code must never break a batch
            log.exception("on_event callback failed")

    def decide(self, slot: Slot, *, may_ask: bool = True) -> bool | None:
        """Lookup, validation and the approval gate, before the call's clock starts.

        False when the call must not run: invalid, denied, undecided in time, or already settled (an
        interrupt while the prompt waited); a denied or cancelled call can never run later. With
        ``may_ask=False``, None where a person would have to answer.
        """
        if slot.prepared is not None:
            return True
        if slot.result is not None:
            return False
        prepared = self.registry.prepare(slot.call.name, slot.call.arguments)
        if isinstance(prepared, str):
            self.finish(slot, prepared)
            return False
        if may_ask:
            decision: gate.Decision | None = gate.decide(prepared[0], prepared[1], self.approver,
                                                         ask_lock=self.ask_lock)
        else:
            decision = gate.decide_without_asking(prepared[0], prepared[1])
        if decision is None:
            return None
        if not decision.approved:
            self.finish(slot, tool_error(decision.message, blocked=True))
            return False
        with self.cond:
            if slot.result is not None:  # settled while the person was deciding: it never runs
                return False
            slot.prepared = prepared
        return True

    def start(self, slot: Slot) -> bool:
        """Mark a call started; False when it was already settled (interrupted) and must not run."""
        with self.cond:
            if slot.result is not None:
                return False
            slot.started = now = time.perf_counter()
        self._emit(slot, "start", now)
        return True

    def finish(self, slot: Slot, content: str, *, timed_out: bool = False, interrupted: bool = False) -> bool:
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

    def time_out(self, slot: Slot) -> None:
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


def run_sync_call(batch: Batch, slot: Slot) -> None:
    if not batch.decide(slot) or not batch.start(slot):  # (decide returns a bool when it may ask)
        return
    assert slot.prepared is not None
    try:
        content = batch.registry.call(*slot.prepared)
    except BaseException as exc:  # call never raises, except KeyboardInterrupt/SystemExit from a handler
        content = tool_error(f"Tool execution failed: {type(exc).__name__}: {exc}")
    batch.finish(slot, content)


async def decide_async(batch: Batch, slot: Slot) -> bool:
    """``Batch.decide`` for a loop: at once when nobody must answer, else in a thread (a prompt blocks)."""
    quick = batch.decide(slot, may_ask=False)
    if quick is not None:
        return quick
    return bool(await asyncio.to_thread(batch.decide, slot))


async def run_async_call(batch: Batch, slot: Slot) -> None:
    if not await decide_async(batch, slot) or not batch.start(slot):
        return
    assert slot.prepared is not None
    content = await batch.registry.acall(*slot.prepared)
    batch.finish(slot, content)
