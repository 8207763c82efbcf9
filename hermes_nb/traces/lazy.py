"""A run's trace when nothing exports it: the loop's events kept as they come, the spans made on first read.

With no tracer provider the spans serve only the waterfall (``result.trace``, ``%trace``), which most runs never
draw; so a run keeps each event with the time it was heard (one append) and ``Trace.later`` replays them into a
``Recorder`` when the trace is first read. What no event carries is kept the same way, by the call's id: an MCP
request or a sandboxed command inside a call, an approval, a sub-agent's finished trace. Finding a call still
open (for those) reads the kept events: rare, and each of those costs far more than the reading.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any

from hermes_nb.agent.events import (
    AgentEvent,
    Emit,
    ToolCallQueued,
    ToolEnded,
    ToolStarted,
    TurnDone,
    TurnStarted,
)
from hermes_nb.traces.recorder import Recorder, _Open, approval_events
from hermes_nb.traces.records import SpanKind, SpanRecord, Trace

__all__ = ["LazyRecorder"]

log = logging.getLogger(__name__)

# The events a span is made from (``Recorder._feed``); the rest (a streamed reply's pieces, progress) are not kept.
_SPAN_EVENTS = frozenset({ToolCallQueued, ToolStarted, ToolEnded, TurnStarted, TurnDone})


class _Child:
    """What the core asked to record inside a call: a span, an approval or a sub-agent's trace."""

    __slots__ = ("args", "call_id", "what")

    def __init__(self, what: str, call_id: str, *args: Any) -> None:
        self.what, self.call_id, self.args = what, call_id, args


class LazyRecorder:
    """A ``Recorder``'s interface for a run with no exporter: it keeps events, and builds spans when read."""

    sink = None  # nothing is exported; a sub-agent's run is lazy too

    def __init__(self, *, agent_name: str, model: str, provider: str, conversation: str,
                 parent: tuple[LazyRecorder, str] | None = None, tags: Mapping[str, Any] | None = None) -> None:
        self._meta = {"agent_name": agent_name, "model": model, "provider": provider, "conversation": conversation}
        self._up = parent
        self.tags = dict(tags or {})
        self.start = time.perf_counter()
        self._kept: list[Any] = []  # (event, heard) or _Child, in the order heard

    def hear(self, emit: Emit) -> Emit:
        """``emit`` that keeps each event first (one append: atomic across the threads that emit)."""
        keep, clock, kinds = self._kept.append, time.perf_counter, _SPAN_EVENTS

        def both(event: AgentEvent) -> None:
            if type(event) in kinds:
                keep((event, clock()))
            emit(event)
        return both

    # -- what the core asks while the run goes -----------------------------------------------------------

    def open_call(self, call_id: str) -> str | None:
        """The call's id when that call is queued and not ended yet."""
        state = None
        for item in list(self._kept):
            if isinstance(item, tuple):
                event = item[0]
                if isinstance(event, ToolCallQueued) and event.id == call_id:
                    state = call_id
                elif isinstance(event, ToolEnded) and event.tool_call_id == call_id:
                    state = None
        return state

    def asking(self, tool: str) -> str | None:
        """The call an approval was for: the first of that tool queued, not started, not yet answered."""
        waiting: dict[str, str] = {}
        for item in list(self._kept):
            if isinstance(item, _Child):
                if item.what == "approval":
                    waiting.pop(item.call_id, None)
                continue
            event = item[0]
            if isinstance(event, ToolCallQueued):
                waiting[event.id] = event.name
            elif isinstance(event, (ToolStarted, ToolEnded)):
                waiting.pop(event.tool_call_id, None)
        return next((cid for cid, name in waiting.items() if not tool or name == tool), None)

    @contextlib.contextmanager
    def child(self, call_id: str, kind: SpanKind, name: str, attributes: dict[str, Any]) -> Iterator[_Open]:
        span = _Open(kind, name, None, time.perf_counter(), attributes)
        error = ""
        try:
            yield span
        except BaseException as exc:
            error = type(exc).__name__
            raise
        finally:
            self._kept.append(_Child("span", call_id, span, time.perf_counter(),
                                     span.attributes.pop("error.type", error)))

    def approval(self, call_id: str, asked: float, answered: float, choice: str, by: str) -> None:
        self._kept.append(_Child("approval", call_id, asked, answered, choice, by))

    def adopt_trace(self, call_id: str, trace: Trace) -> None:
        self._kept.append(_Child("trace", call_id, trace))

    # -- the end -------------------------------------------------------------------------------------------

    def finish(self, stopped_reason: str, error: str | None) -> Trace:
        now = time.perf_counter()
        trace = Trace.later(lambda: self._build(stopped_reason, error, now))
        if self._up is not None:
            self._up[0].adopt_trace(self._up[1], trace)
        return trace

    def _build(self, stopped_reason: str, error: str | None, now: float) -> tuple[SpanRecord, ...]:
        """The spans, by replaying what was kept into a ``Recorder`` with no sink."""
        recorder = Recorder(sink=None, tags=self.tags, start=self.start, agent_name=self._meta["agent_name"],
                            model=self._meta["model"], provider=self._meta["provider"],
                            conversation=self._meta["conversation"])
        subs: list[tuple[str, Trace]] = []
        for item in self._kept:
            try:
                if isinstance(item, tuple):
                    recorder._feed(item[0], item[1])
                    continue
                call = recorder.open_call(item.call_id)
                if call is None:
                    continue
                if item.what == "span":
                    span, end, failed = item.args
                    span.parent = call
                    recorder._end(span, end, error=failed)
                elif item.what == "approval":
                    approval_events(call, *item.args)
                else:
                    subs.append((str(call.id), item.args[0]))
            except Exception:  # a trace must never stop anything: the span is left out
                log.exception("trace replay failed on %r", item)
        for parent_id, sub in subs:  # a sub-agent's spans under its delegate_task call's
            recorder.adopt([_under(r, int(parent_id)) for r in sub.spans])
        return recorder.finish(stopped_reason, error, now).spans


def _under(record: SpanRecord, parent: int) -> SpanRecord:
    from dataclasses import replace

    return replace(record, parent=parent) if record.parent is None else record
