"""A run as a trace: spans by the OpenTelemetry GenAI conventions, and a waterfall in the notebook.

Every ``Agent`` run records its spans (``hermes_nb.traces.recorder``; with nothing exporting them, ``lazy`` keeps the
run's events and makes the spans when first read); ``result.trace`` draws them and ``%trace`` draws the last run's.
When a tracer provider is configured (``hermes_nb.traces.otel``) the same spans are exported.
"""

from hermes_nb.traces.records import SpanEvent, SpanRecord, Trace
from hermes_nb.traces.runs import last_trace, tagged

__all__ = ["SpanEvent", "SpanRecord", "Trace", "last_trace", "tagged"]
