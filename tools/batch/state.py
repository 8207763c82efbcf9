"""One batch's bookkeeping: the shared thread pool, a slot per call, and settling each call exactly once.

``hermes_nb.tools.batch.scheduling`` drives it. Each call passes scope (``batch.scope``: inside a run, only
what the run offered) and the approval gate (``Batch.decide``) before its clock starts (``Batch.start``). Every call is settled once (finished, timed out or interrupted); a late
settlement is ignored, so a timed-out handler finishing afterwards cannot change the answer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from hermes_nb.tools.batch.plan import BatchSegment, CallView, plan_tool_batch, unpack_call
from hermes_nb.tools.batch.pool import StuckCall, ToolPool
from hermes_nb.tools.batch.records import INTERRUPTED_MESSAGE, BatchEvent, ToolCallResult
from hermes_nb.tools.batch.scope import current_offer
from hermes_nb.tools.calls.call_hooks import call_context
from hermes_nb.tools.calls.results import execution_failed
from hermes_nb.tools.registry import ToolEntry, ToolRegistry, tool_error
from hermes_nb.tools.safety.approvals import gate
from hermes_nb.tools.safety.approvals.gate import run_approver

log = logging.getLogger("hermes_nb.tools.batch.scheduling")  # one logger name for the whole batch machinery

DEFAULT_MAX_WORKERS = 8


def seconds(value: Any) -> float | None:
    """A tool's ``metadata["timeout"]`` when it is a positive number, else no timeout."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    return float(value)


# -- the shared pool ------------------------------------------------------------------------------

_pool_lock = threading.Lock()
_pool: ToolPool | None = None


def shared_pool(max_workers: int) -> ToolPool:
    """The process-wide pool for sync handlers (``batch.pool``); grown only when a caller asks for more."""
    global _pool
    want = max(DEFAULT_MAX_WORKERS, max_workers)
    with _pool_lock:
        if _pool is None:
            _pool = ToolPool(want)
        elif _pool.size < want:
            _pool.resize(want)
        return _pool


def stuck_calls() -> list[StuckCall]:
    """Calls that outlived their timeout and still hold a thread of the shared pool (``%tools doctor``)."""
    pool = _pool
    return pool.stuck_calls() if pool is not None else []


# -- one batch's bookkeeping ----------------------------------------------------------------------

class Slot:
    __slots__ = ("call", "is_async", "timeout", "segment", "parallel", "ready", "deadline", "started", "result",
                 "future", "pool", "prepared")

    def __init__(self, call: CallView, is_async: bool, timeout: float | None, segment: int, parallel: bool):
        self.call, self.is_async, self.timeout = call, is_async, timeout
        self.segment, self.parallel = segment, parallel
        self.ready: float | None = None  # when its segment began
        self.deadline: float | None = None  # when it is given up, started or not (set by Batch.arm)
        self.started: float | None = None  # when its handler began, if it ever did
        self.result: ToolCallResult | None = None
        self.future: concurrent.futures.Future[Any] | asyncio.Future[Any] | None = None
        self.pool: ToolPool | None = None  # set when ``future`` came from the shared pool
        self.prepared: tuple[ToolEntry, dict[str, Any]] | None = None  # set once the gate said yes


class _PromptClock:
    """The batch's "one prompt at a time" lock, which also stops its clocks while a person decides: a
    call's time starts after the decision (a slow click never times a call out), and every deadline of
    the batch moves on by the time the prompt took."""

    def __init__(self, batch: Batch) -> None:
        self._batch = batch
        self._lock = threading.Lock()
        self.since: float | None = None

    def __enter__(self) -> None:
        self._lock.acquire()
        with self._batch.cond:
            self.since = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        batch = self._batch
        with batch.cond:
            paused = time.perf_counter() - (self.since or time.perf_counter())
            self.since = None
            if batch.deadline is not None:
                batch.deadline += paused
            for slot in batch.slots:
                if slot.result is None and slot.deadline is not None:
                    slot.deadline += paused
            batch.cond.notify_all()
        self._lock.release()


class Batch:
    def __init__(self, tool_calls: Sequence[Any], registry: ToolRegistry, timeout: float | None,
                 on_event: Callable[[BatchEvent], Any] | None):
        self.registry = registry
        self.on_event = on_event
        self.begun = time.perf_counter()
        # an explicit timeout bounds the whole batch; a tool's own metadata timeout bounds its call
        self.deadline = self.begun + timeout if timeout is not None else None
        self.cond = threading.Condition()
        # The approver of the run that made this batch (worker threads do not inherit context variables);
        # the process-wide ones are looked up when a call asks.
        self.approver = run_approver()
        self.offer = current_offer()  # the run's offer this turn (None outside a run: nothing limited)
        self.ask_lock = _PromptClock(self)  # one approval prompt at a time; the batch's clocks stop meanwhile
        self.plan = plan_tool_batch(tool_calls, registry=registry)
        calls = [unpack_call(c, i) for i, c in enumerate(tool_calls)]
        self.slots: list[Slot] = [None] * len(calls)  # type: ignore[list-item]
        for seg_no, seg in enumerate(self.plan):
            for i in seg.indices:
                entry = registry.get_entry(calls[i].name)
                limit = timeout if timeout is not None else seconds(entry.metadata.get("timeout") if entry else None)
                self.slots[i] = Slot(calls[i], bool(entry and entry.is_async), limit, seg_no, seg.parallel)

    def arm(self, slot: Slot, ready: float) -> None:
        """Start a call's clock when its segment begins: a call that never gets a worker is still bounded."""
        slot.ready = ready
        if self.deadline is not None:
            slot.deadline = self.deadline
        elif slot.timeout is not None:
            slot.deadline = ready + slot.timeout

    def overdue(self, slots: Sequence[Slot], now: float) -> float | None:
        """Time out the unsettled calls whose deadline passed; the soonest deadline still ahead, if any.
        Nothing times out while a person is deciding (the clocks stop; the end of the prompt notifies)."""
        if self.ask_lock.since is not None:
            return None
        soonest = None
        for slot in slots:
            if slot.result is None and slot.deadline is not None:
                if slot.deadline <= now:
                    self.time_out(slot)
                elif soonest is None or slot.deadline < soonest:
                    soonest = slot.deadline
        return soonest

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
        except KeyboardInterrupt:
            raise
        except BaseException:  # display code must never break a batch (nor leave a call unsettled)
            log.exception("on_event callback failed")

    def decide(self, slot: Slot, *, may_ask: bool = True) -> bool | None:
        """Scope, lookup, validation and the approval gate, before the call's clock starts.

        False when the call must not run: not offered by the run, invalid, denied, undecided in time, or
        already settled (an interrupt while the prompt waited); a denied or cancelled call can never run
        later. With ``may_ask=False``, None where a person would have to answer.
        """
        if slot.prepared is not None:
            return True
        if slot.result is not None:
            return False
        if self.offer is not None:  # first: a tool the run did not offer is not looked at, asked about or run
            refused = self.offer.refusal(slot.call.name, self.registry)
            if refused is not None:
                self.finish(slot, refused, is_error=True)
                return False
        prepared = self.registry.prepare(slot.call.name, slot.call.arguments)
        if isinstance(prepared, str):
            self.finish(slot, prepared, is_error=True)
            return False
        if may_ask:
            decision: gate.Decision | None = gate.decide(prepared[0], prepared[1], self.approver,
                                                         ask_lock=self.ask_lock)
        else:
            decision = gate.decide_without_asking(prepared[0], prepared[1])
        if decision is None:
            return None
        if not decision.approved:
            content, is_error = gate.blocked(decision)
            self.finish(slot, content, is_error=is_error)
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

    def finish(self, slot: Slot, content: str, *, is_error: bool, timed_out: bool = False, interrupted: bool = False,
               unstarted: str | None = None) -> bool:
        """Settle a call once; a later (late) settlement is ignored. ``is_error`` comes with the content from
        where it was made (the call's ``Settled``), never from reading it. ``unstarted`` replaces ``content``
        when the handler never began (decided under the lock, so a call starting meanwhile is not misnamed)."""
        with self.cond:
            if slot.result is not None:
                return False
            if unstarted is not None and slot.started is None:
                content = unstarted
            now = time.perf_counter()
            started = slot.started if slot.started is not None else now
            slot.result = ToolCallResult(
                index=slot.call.index, tool_call_id=slot.call.id, name=slot.call.name, arguments=slot.call.arguments,
                content=content, started=started, ended=now, duration=now - started, is_error=is_error,
                timed_out=timed_out, interrupted=interrupted, segment=slot.segment, parallel=slot.parallel)
            self.cond.notify_all()
        self._emit(slot, "end", now)
        return True

    def time_out(self, slot: Slot) -> None:
        """Settle a call whose time ran out; a running sync handler's thread is abandoned (``batch.pool``)."""
        name, limit = slot.call.name, slot.timeout or 0.0
        # the model must know a call never ran: nothing to undo, safe to retry
        unstarted = tool_error(f"Tool {name} never started: its {limit:g} s ran out while it waited (for a free "
                               f"worker or for earlier calls of the batch); it did not run", not_started=True)
        content = tool_error(f"Tool {name} timed out after {limit:g} s")  # counted from when it could start
        if self.finish(slot, content, is_error=True, timed_out=True, unstarted=unstarted) and slot.future is not None:
            if slot.pool is not None and isinstance(slot.future, concurrent.futures.Future):
                slot.pool.abandon(slot.future)
            else:
                slot.future.cancel()

    def interrupt_all(self) -> list[ToolCallResult]:
        for slot in self.slots:
            if slot.result is None:
                if slot.future is not None:
                    slot.future.cancel()
                self.finish(slot, tool_error(INTERRUPTED_MESSAGE), is_error=True, interrupted=True)
        return self.results()

    def results(self) -> list[ToolCallResult]:
        return [s.result for s in self.slots if s.result is not None]


def run_sync_call(batch: Batch, slot: Slot) -> None:
    if not batch.decide(slot) or not batch.start(slot):  # (decide returns a bool when it may ask)
        return
    assert slot.prepared is not None
    try:
        with call_context(tool_call_id=slot.call.id):  # plugins' hooks see which call of the model this is
            content, is_error = batch.registry.call_settled(*slot.prepared)
    except BaseException as exc:  # call never raises, except KeyboardInterrupt from a handler
        content, is_error = execution_failed(exc), True
    batch.finish(slot, content, is_error=is_error)


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
    try:
        with call_context(tool_call_id=slot.call.id):
            content, is_error = await batch.registry.acall_settled(*slot.prepared)
    except asyncio.CancelledError:
        raise  # the batch cancelled it (timeout, interrupt); the batch settles it
    except BaseException as exc:  # even a handler's KeyboardInterrupt: raised out of a task, it stops the loop
        content, is_error = execution_failed(exc), True
    batch.finish(slot, content, is_error=is_error)
