"""The records of a tool batch: one result per call, the start/end events, and the interrupt.

``hermes_nb.tools.batch.scheduling`` produces them; the agent loop, the timeline display and ``%tools call`` read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["INTERRUPTED_MESSAGE", "BatchEvent", "BatchInterrupted", "ToolCallResult"]

INTERRUPTED_MESSAGE = "Interrupted by the user before this call finished"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallResult:
    """The answer to one tool call; ``started``/``ended`` are ``time.perf_counter()`` values.

    A call that never started (interrupted first) has ``started == ended``, the moment it was settled.
    """

    index: int
    tool_call_id: str
    name: str
    arguments: Any
    content: str
    started: float
    ended: float
    duration: float
    is_error: bool = False
    timed_out: bool = False
    interrupted: bool = False
    segment: int = 0
    parallel: bool = False

    def to_message(self) -> dict[str, str]:
        """The ``role: tool`` message for the model."""
        return {"role": "tool", "tool_call_id": self.tool_call_id, "name": self.name, "content": self.content}


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchEvent:
    """A call started or ended (``result`` is set on "end")."""

    kind: Literal["start", "end"]
    index: int
    tool_call_id: str
    name: str
    time: float
    result: ToolCallResult | None = None
    segment: int = 0
    parallel: bool = False


class BatchInterrupted(KeyboardInterrupt):
    """A batch was interrupted; ``results`` still holds one result per call, in call order."""

    def __init__(self, results: list[ToolCallResult]) -> None:
        super().__init__(f"tool batch interrupted ({sum(r.interrupted for r in results)} of {len(results)} "
                         "calls unfinished)")
        self.results = results
