"""A run's recorder from start to end, and the hooks that find it: ``begin`` / ``end`` (the loop's), ``child`` and
``approval_heard`` (the core's, through ``hermes_nb.tools.calls.tracing``), ``tagged`` (evaluate's), and the last
run from a cell (``%trace``).

A sub-agent's run finds its ``delegate_task`` span through a context variable (the same task); work in a worker
thread, which inherits no context, finds its call by the call's id.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any, cast

from hermes_nb.tools.calls.tracing import install as install_core
from hermes_nb.traces.lazy import LazyRecorder
from hermes_nb.traces.recorder import Recorder, approval_events, newest_open, open_recorders
from hermes_nb.traces.records import SpanKind, Trace

__all__ = ["approval_heard", "begin", "child", "end", "last_trace", "remember", "tagged"]

#: The agent name a top-level run reports (``gen_ai.agent.name``); a sub-agent reports its task's label.
AGENT_NAME = "hermes_nb"

_ids = itertools.count(1)
_current: ContextVar[Recorder | LazyRecorder | None] = ContextVar("hermes_nb_trace_recorder", default=None)
_tags: ContextVar[Mapping[str, Any]] = ContextVar("hermes_nb_trace_tags", default=MappingProxyType({}))
_last: list[Trace] = []
# Runs now going that export nothing (they keep events; see ``lazy``), for threads without the run's context.
_lazy_runs: list[LazyRecorder] = []


def _call_of(call_id: str) -> tuple[Recorder | LazyRecorder, Any] | None:
    recorder = _current.get()
    if recorder is not None:
        span = recorder.open_call(call_id)
        if span is not None:
            return recorder, span
    for lazy in reversed(list(_lazy_runs)):  # the newest run first, as ``newest_open``
        if lazy is not recorder and lazy.open_call(call_id) is not None:
            return lazy, call_id
    return newest_open(call_id)


def _running_call() -> tuple[Recorder | LazyRecorder, Any] | None:
    from hermes_nb.tools.calls.call_hooks import call_fields

    call_id = call_fields().get("tool_call_id")
    return _call_of(call_id) if isinstance(call_id, str) else None


# -- the entry points ---------------------------------------------------------------------------------------

def begin(agent: Any) -> tuple[Recorder | LazyRecorder, Any]:
    """A recorder for a run of ``agent`` starting now, and the token that ``end`` gives back. A sub-agent's
    run (inside its parent's ``delegate_task`` call) nests under that call's span."""
    from hermes_nb.traces.otel import sink

    parent = _running_call()
    label = getattr(agent, "_trace_label", "") or AGENT_NAME
    conversation = agent.__dict__.setdefault("_trace_conversation", f"{next(_ids):x}-{time.time_ns():x}")
    model = agent.model
    tags = {**(parent[0].tags if parent else {}), **_tags.get()}
    caller = agent.__dict__.pop("_trace_caller", None)  # run()/arun(): the person's span, if one was open
    run_sink = parent[0].sink if parent else sink(caller)
    meta = {"agent_name": label, "model": model.name, "provider": _provider(model), "conversation": conversation}
    recorder: Recorder | LazyRecorder
    if run_sink is None:  # nothing exports it: keep the events, make the spans if someone reads them
        recorder = LazyRecorder(**meta, parent=parent, tags=tags)  # type: ignore[arg-type]
        _lazy_runs.append(recorder)
    else:
        recorder = Recorder(**meta, sink=run_sink, parent=parent, tags=tags)  # type: ignore[arg-type]
    return recorder, _current.set(recorder)


def end(recorder: Recorder | LazyRecorder, token: Any, stopped_reason: str, error: str | None) -> Trace:
    """End the run's spans (called from the run's ``finally``: an exception on its way out, such as a replay's
    drift, marks the run failed with its class as ``error.type``)."""
    _current.reset(token)
    if isinstance(recorder, LazyRecorder):
        with contextlib.suppress(ValueError):
            _lazy_runs.remove(recorder)
    leaving = sys.exc_info()[1]
    if leaving is not None and not isinstance(leaving, (asyncio.CancelledError, KeyboardInterrupt)):
        return recorder.finish("error", type(leaving).__name__)
    return recorder.finish(stopped_reason, error)


def _provider(model: Any) -> str:
    base = str(getattr(model, "base_url", "") or "")
    if type(model).__name__ == "LocalModel" or "127.0.0.1" in base or "localhost" in base:
        return "hermes_nb.local" if type(model).__name__ == "LocalModel" else "openai"  # a server speaking its API
    return "openai"


@contextlib.contextmanager
def child(kind: SpanKind, name: str, attributes: dict[str, Any]) -> Iterator[Any]:
    """A span inside the tool call running here (an MCP request, a sandboxed command); nothing outside one.
    The span's ``attributes`` may be added to before it ends (``error.type`` marks it failed)."""
    found = _running_call()
    if found is None:
        yield None
        return
    recorder, call = found
    with recorder.child(call, kind, name, attributes) as span:
        yield span


def approval_heard(tool: str, asked: float, answered: float, choice: str, by: str) -> None:
    """The gate asked about a call of ``tool`` and ``by`` answered ``choice``: two events on its span."""
    call_id = None
    from hermes_nb.tools.calls.call_hooks import call_fields

    call_id = call_fields().get("tool_call_id")
    found = _call_of(call_id) if isinstance(call_id, str) else None
    if found is None:
        recorder = _current.get()
        candidates: list[Any] = [recorder] if recorder is not None else []
        for rec in candidates or [*reversed(list(_lazy_runs)), *open_recorders()]:
            span = rec.asking(tool)
            if span is not None:
                found = rec, span
                break
    if found is not None and isinstance(found[0], LazyRecorder):
        found[0].approval(found[1], asked, answered, choice, by)
    elif found is not None:
        approval_events(found[1], asked, answered, choice, by)


@contextlib.contextmanager
def tagged(**tags: Any) -> Iterator[None]:
    """Runs started inside carry ``tags`` as span attributes (``evaluate`` tags each case's run)."""
    token = _tags.set({**_tags.get(), **tags})
    try:
        yield
    finally:
        _tags.reset(token)


def remember(trace: Trace) -> None:
    """The last run from a cell (``%trace`` draws it)."""
    _last[:] = [trace]


def last_trace() -> Trace | None:
    return _last[0] if _last else None


class _CoreTracer:
    """What the core's seam (``hermes_nb.tools.calls.tracing``) calls: this module's two hooks."""

    def child(self, kind: str, name: str, attributes: dict[str, Any]) -> contextlib.AbstractContextManager[Any]:
        return child(cast(SpanKind, kind), name, attributes)

    def approval_heard(self, tool: str, asked: float, answered: float, choice: str, by: str) -> None:
        approval_heard(tool, asked, answered, choice, by)


_undo_core = install_core(_CoreTracer())  # on first use (a run imports this module), never at %load_ext
