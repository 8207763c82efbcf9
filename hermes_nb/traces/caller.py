"""The calling thread's OpenTelemetry context, handed to a run that starts on the background loop.

``Agent.run`` submits its core to another thread, which does not inherit the caller's context variables; a
person's ``with tracer.start_as_current_span("experiment"): agent.run(...)`` would otherwise start a trace of its
own. Light on purpose (``loop`` imports it): nothing is imported unless OpenTelemetry already is.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["caller_context"]


def caller_context() -> Any:
    """The current OpenTelemetry context of this thread, or None (OpenTelemetry not imported: no span is open)."""
    if "opentelemetry.context" not in sys.modules:
        return None
    from opentelemetry import context

    return context.get_current()
