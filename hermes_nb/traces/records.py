"""The records of a run's trace: one ``SpanRecord`` per span, collected in a ``Trace``.

The same records feed the notebook's waterfall (``result.trace``, ``%trace``) and, when a tracer provider is
configured, the OpenTelemetry spans (``hermes_nb.traces.otel``), so the picture and the exported trace never
disagree. Times are ``time.perf_counter()`` seconds, the clock the batch scheduler stamps its events with.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["SpanEvent", "SpanKind", "SpanRecord", "Trace"]

#: What a span is: the run (``invoke_agent``), a model turn (``chat``), a tool call (``execute_tool``), an MCP
#: request or a sandboxed command made inside a tool call.
SpanKind = Literal["agent", "chat", "tool", "mcp", "sandbox"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SpanEvent:
    """Something that happened at one moment of a span (an approval asked, answered)."""

    name: str
    time: float
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class SpanRecord:
    """One finished span: its place in the tree, its times and its standard attributes."""

    id: int
    parent: int | None  # None: the root of this trace
    kind: SpanKind
    name: str  # the standard span name: "execute_tool read_file", "chat gpt-4o-mini"
    start: float
    end: float
    attributes: Mapping[str, Any] = field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()
    error: str = ""  # error.type when it failed, else ""
    began: float | None = None  # a tool call's clock start (after its approval and its wait for a worker)

    @property
    def duration(self) -> float:
        return self.end - self.start


class Trace:
    """A run's spans, parents before children; shows as a waterfall (HTML, or characters as text).

    ``Trace(spans=...)`` holds them; ``Trace.later(build)`` makes them on first read (a run without an exporter
    keeps only its events, and pays for the spans only if someone looks)."""

    __slots__ = ("_build", "_lock", "_spans")

    def __init__(self, *, spans: tuple[SpanRecord, ...]) -> None:
        self._spans: tuple[SpanRecord, ...] | None = tuple(spans)
        self._build: Callable[[], tuple[SpanRecord, ...]] | None = None
        self._lock = threading.Lock()

    @classmethod
    def later(cls, build: Callable[[], tuple[SpanRecord, ...]]) -> Trace:
        trace = cls(spans=())
        trace._spans, trace._build = None, build
        return trace

    @property
    def spans(self) -> tuple[SpanRecord, ...]:
        if self._spans is None:
            with self._lock:  # built once, whoever reads first
                if self._spans is None:
                    build, self._build = self._build, None
                    self._spans = build() if build is not None else ()
        return self._spans

    def __len__(self) -> int:
        return len(self.spans)

    def named(self, prefix: str) -> list[SpanRecord]:
        """The spans whose name starts with ``prefix`` (``"execute_tool"``, ``"chat"``...)."""
        return [s for s in self.spans if s.name.startswith(prefix)]

    def children(self, span: SpanRecord) -> list[SpanRecord]:
        return [s for s in self.spans if s.parent == span.id]

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from hermes_nb.traces.waterfall import waterfall_html, waterfall_text
        return {"text/html": waterfall_html(self), "text/plain": waterfall_text(self)}

    def __str__(self) -> str:
        from hermes_nb.traces.waterfall import waterfall_text
        return waterfall_text(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))
