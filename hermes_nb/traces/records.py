"""The records of a run's trace: one ``SpanRecord`` per span, collected in a ``Trace``.

The same records feed the notebook's waterfall (``result.trace``, ``%trace``) and, when a tracer provider is
configured, the OpenTelemetry spans (``hermes_nb.traces.otel``), so the picture and the exported trace never
disagree. Times are ``time.perf_counter()`` seconds, the clock the batch scheduler stamps its events with.
"""

from __future__ import annotations

from collections.abc import Mapping
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Trace:
    """A run's spans, parents before children; shows as a waterfall (HTML, or characters as text)."""

    spans: tuple[SpanRecord, ...]

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
