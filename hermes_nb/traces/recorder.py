"""The one place a run's spans are made: a ``Recorder`` fed by the loop's own events.

``Agent._core`` makes one per run an exporter gets (``hermes_nb.traces.runs.begin``) and passes every event it emits
through ``Recorder.hear``; a run with none keeps its events and replays them into one when its trace is first read
(``hermes_nb.traces.lazy``); the recorder turns them into spans by the OpenTelemetry GenAI conventions: ``invoke_agent
{agent}`` for the run, ``chat {model}`` per model turn, ``execute_tool {tool}`` per call. What no event carries (an
MCP request or a sandboxed command inside a call, an approval) comes through ``child`` and ``approval_events``.

Events come from the background loop, worker threads and the waiting thread at once: one lock per recorder.
A recorder never breaks a run: a failure in it is logged and the run goes on.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from hermes_nb.agent.events import (
    AgentEvent,
    Emit,
    ToolCallQueued,
    ToolEnded,
    ToolStarted,
    TurnDone,
    TurnStarted,
)
from hermes_nb.traces.records import SpanEvent, SpanKind, SpanRecord, Trace

if TYPE_CHECKING:
    from hermes_nb.traces.otel import Sink

__all__ = ["Recorder", "approval_events", "newest_open", "open_recorders"]

log = logging.getLogger(__name__)

_ids = itertools.count(1)
# Calls now open, by the model's call id, for work in threads that do not inherit the run's context. Ids are
# unique within a conversation, not across concurrent runs (an evaluation's cases replay one script): the
# newest open call of that id wins, and the context variable is asked first wherever it is set.
_open_calls: dict[str, list[tuple[Recorder, _Open]]] = {}
_open_lock = threading.Lock()


class _Open:
    """A span still open (mutable until it ends; then frozen into a ``SpanRecord``)."""

    __slots__ = ("arguments", "attributes", "began", "events", "handle", "id", "kind", "name", "parent", "start",
                 "tool")

    def __init__(self, kind: SpanKind, name: str, parent: _Open | None, start: float,
                 attributes: dict[str, Any]) -> None:
        self.id = next(_ids)
        self.kind = kind
        self.name = name
        self.parent = parent
        self.start = start
        self.attributes = attributes
        self.events: list[SpanEvent] = []
        self.began: float | None = None
        self.handle: Any = None  # the OpenTelemetry span, when a provider is configured
        self.arguments = ""  # a tool call's arguments (exported only when content is captured)
        self.tool = ""


class Recorder:
    """Spans of one run (and, once they end, of its sub-agents' runs)."""

    def __init__(self, *, agent_name: str, model: str, provider: str, conversation: str, sink: Sink | None,
                 parent: tuple[Recorder, _Open] | None = None, tags: Mapping[str, Any] | None = None,
                 start: float | None = None) -> None:
        self._lock = threading.Lock()
        self._sink = sink
        self._up = parent
        self._done: list[SpanRecord] = []
        self._calls: dict[str, _Open] = {}
        self._turn: _Open | None = None
        self.model = model
        self.provider = provider
        self.conversation = conversation
        self.tags = dict(tags or {})
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent_name,
                 "gen_ai.provider.name": provider, "gen_ai.request.model": model,
                 "gen_ai.conversation.id": conversation, **self.tags}
        self.root = self._open("agent", f"invoke_agent {agent_name}", parent[1] if parent else None, start, attrs)

    @property
    def sink(self) -> Sink | None:
        """Where its spans are exported (None: kept for the waterfall only); a sub-agent's run shares it."""
        return self._sink

    # -- feeding ---------------------------------------------------------------------------------------

    def hear(self, emit: Emit) -> Emit:
        """``emit`` that records each event first."""
        def both(event: AgentEvent) -> None:
            self.feed(event)
            emit(event)
        return both

    def feed(self, event: AgentEvent) -> None:
        try:
            self._feed(event)
        except Exception:  # a trace must never stop a run
            log.exception("trace recorder failed on %s", type(event).__name__)

    def _feed(self, event: AgentEvent, now: float | None = None) -> None:
        """One event, heard at ``now`` (a replay's time; else now)."""
        if isinstance(event, ToolStarted):  # the most frequent first
            with self._lock:
                call = self._calls.get(event.tool_call_id)
            if call is not None:
                call.began = event.time
                call.attributes["hermes_nb.tool.parallel"] = event.parallel
        elif isinstance(event, ToolEnded):
            self._tool_ended(event)
        elif isinstance(event, ToolCallQueued):
            self._queued(event, time.perf_counter() if now is None else now)
        elif isinstance(event, TurnStarted):
            with self._lock:
                self._turn = self._open("chat", f"chat {self.model}", self.root, now, {
                    "gen_ai.operation.name": "chat", "gen_ai.provider.name": self.provider,
                    "gen_ai.request.model": self.model, "gen_ai.conversation.id": self.conversation})
        elif isinstance(event, TurnDone):
            with self._lock:
                span, self._turn = self._turn, None
            if span is not None:
                response = event.turn.response
                usage = response.usage
                span.attributes.update({
                    "gen_ai.response.model": response.model or self.model,
                    "gen_ai.usage.input_tokens": usage.get("prompt_tokens", 0),
                    "gen_ai.usage.output_tokens": usage.get("completion_tokens", 0),
                    "gen_ai.response.finish_reasons": (response.finish_reason or "stop",),
                    "hermes_nb.turn": event.turn.iteration})
                content = None
                if self._sink is not None and self._sink.content:  # built only when it goes anywhere
                    from hermes_nb.traces.messages import chat_content

                    content = chat_content(event.turn.request.messages, response)
                self._end(span, time.perf_counter() if now is None else now, content=content)

    def _queued(self, event: ToolCallQueued, now: float) -> None:
        attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": event.name,
                                 "gen_ai.tool.call.id": event.id, "gen_ai.tool.type": "function"}
        if self._sink is not None:  # exported only: the waterfall does not show it
            from hermes_nb.tools.registry import registry

            entry = registry.get_entry(event.name)
            if entry is not None and entry.description:
                attrs["gen_ai.tool.description"] = entry.description
            if entry is not None and entry.source == "mcp":  # the conventions' word for a tool run elsewhere
                attrs["gen_ai.tool.type"] = "extension"
        with self._lock:
            parent = self._calls.get(event.parent) if event.parent else None
            span = self._open("tool", f"execute_tool {event.name}", parent or self.root, now, attrs)
            span.arguments, span.tool = event.arguments, event.name
            self._calls[event.id] = span
        with _open_lock:
            _open_calls.setdefault(event.id, []).append((self, span))

    def _tool_ended(self, event: ToolEnded) -> None:
        with self._lock:
            span = self._calls.pop(event.tool_call_id, None)
        if span is None:
            return
        _forget(event.tool_call_id, span)
        result = event.result
        content: dict[str, Any] | None = None
        if self._sink is not None and self._sink.content:  # built only when it goes anywhere
            content = {"gen_ai.tool.call.arguments": span.arguments}
            if result is not None:
                content["gen_ai.tool.call.result"] = result.content
        error = ""
        if result is not None:
            span.attributes["hermes_nb.tool.segment"] = result.segment
            if result.is_error:
                error = "timeout" if result.timed_out else "interrupted" if result.interrupted else "tool_error"
        self._end(span, event.time, content=content, error=error)

    def open_call(self, call_id: str) -> _Open | None:
        with self._lock:
            return self._calls.get(call_id)

    def asking(self, tool: str) -> _Open | None:
        """The call an approval was for: the first of that tool not started yet (the gate asks before the
        clock starts, one prompt at a time per batch)."""
        with self._lock:
            for span in self._calls.values():
                if span.began is None and (not tool or span.tool == tool) \
                        and not any(e.name == "approval.answered" for e in span.events):
                    return span
        return None

    # -- spans -------------------------------------------------------------------------------------------

    def _open(self, kind: SpanKind, name: str, parent: _Open | None, start: float | None = None,
              attributes: dict[str, Any] | None = None) -> _Open:
        span = _Open(kind, name, parent, time.perf_counter() if start is None else start, attributes or {})
        if self._sink is not None:
            try:
                span.handle = self._sink.start(span)
            except Exception:
                log.exception("starting span %s failed", name)
        return span

    def _end(self, span: _Open, end: float, *, content: Mapping[str, Any] | None = None, error: str = "") -> None:
        if error:
            span.attributes["error.type"] = error
        record = SpanRecord(id=span.id, parent=span.parent.id if span.parent else None, kind=span.kind,
                            name=span.name, start=span.start, end=max(end, span.start),
                            attributes=MappingProxyType(span.attributes), events=tuple(span.events),
                            error=error, began=span.began)
        self._done.append(record)  # one append: atomic, no lock needed
        if self._sink is not None and span.handle is not None:
            try:
                self._sink.end(span.handle, record, content or {})
            except Exception:  # an exporter's trouble is not the run's
                log.exception("ending span %s failed", span.name)

    @contextlib.contextmanager
    def child(self, parent: _Open, kind: SpanKind, name: str, attributes: dict[str, Any]) -> Iterator[_Open]:
        span = self._open(kind, name, parent, None, attributes)
        error = ""
        try:
            yield span
        except BaseException as exc:
            error = type(exc).__name__
            raise
        finally:
            self._end(span, time.perf_counter(), error=span.attributes.pop("error.type", error))

    def adopt(self, records: list[SpanRecord]) -> None:
        """A sub-agent's finished spans, so this run's waterfall shows them under their ``delegate_task``."""
        with self._lock:
            self._done.extend(records)

    def finish(self, stopped_reason: str, error: str | None, now: float | None = None) -> Trace:
        """End what is still open (a cut turn, unanswered calls) and the run (at ``now``, else now); its ``Trace``."""
        now = time.perf_counter() if now is None else now
        with self._lock:
            turn, self._turn = self._turn, None
            calls, self._calls = list(self._calls.items()), {}
        if turn is not None:
            self._end(turn, now, error="interrupted" if stopped_reason == "interrupted" else "model_error")
        for call_id, span in calls:
            _forget(call_id, span)
            self._end(span, now, error="interrupted")
        self.root.attributes["hermes_nb.stopped_reason"] = stopped_reason
        bad = {"error": "model_error", "interrupted": "interrupted"}.get(stopped_reason, "")
        if bad == "model_error" and error and " " not in error:  # an exception's class (see ``end``)
            bad = error
        self._end(self.root, now, error=bad)
        with self._lock:
            spans = _ordered(self._done)
        if self._up is not None:
            self._up[0].adopt(list(spans))
        return Trace(spans=spans)


def approval_events(span: _Open, asked: float, answered: float, choice: str, by: str) -> None:
    span.events.append(SpanEvent(name="approval.asked", time=asked))
    span.events.append(SpanEvent(name="approval.answered", time=answered, attributes={
        "hermes_nb.approval.choice": choice, "hermes_nb.approval.by": by,
        "hermes_nb.approval.waited_s": round(answered - asked, 6)}))


def _forget(call_id: str, span: _Open) -> None:
    with _open_lock:
        opened = _open_calls.get(call_id)
        if opened is None:
            return
        for i, (_, open_span) in enumerate(opened):
            if open_span is span:
                del opened[i]
                break
        if not opened:
            del _open_calls[call_id]


def _ordered(records: list[SpanRecord]) -> tuple[SpanRecord, ...]:
    """Parents before children, siblings by start time (a depth-first walk)."""
    kids: dict[int | None, list[SpanRecord]] = {}
    ids = {r.id for r in records}
    for r in records:
        kids.setdefault(r.parent if r.parent in ids else None, []).append(r)
    out: list[SpanRecord] = []
    stack = sorted(kids.get(None, []), key=lambda r: r.start, reverse=True)
    while stack:
        r = stack.pop()
        out.append(r)
        stack.extend(sorted(kids.get(r.id, []), key=lambda c: c.start, reverse=True))
    return tuple(out)


def newest_open(call_id: str) -> tuple[Recorder, _Open] | None:
    """The newest open call of that id in any run (for a thread that did not inherit its run's context)."""
    with _open_lock:
        opened = _open_calls.get(call_id)
        return opened[-1] if opened else None


def open_recorders() -> list[Recorder]:
    """The runs with a call open now."""
    with _open_lock:
        return list(dict.fromkeys(r for opened in _open_calls.values() for r, _ in opened))
