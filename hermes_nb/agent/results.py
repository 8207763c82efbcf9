"""The records of an agent run: one tool call (``ToolCallRecord``) and the whole run (``AgentResult``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from hermes_nb.agent.cost import RunCost
from hermes_nb.agent.turns import Turn
from hermes_nb.models import Usage

__all__ = ["INTERRUPTED", "AgentResult", "StoppedReason", "ToolCallRecord", "record_of"]

StoppedReason = Literal["done", "max_iterations", "interrupted", "error", "length", "repeated_failure"]
INTERRUPTED = "interrupted by the user"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallRecord:
    """One tool call of a run: what the model asked, what it got back (after the budget), and when."""

    id: str
    name: str
    arguments: str
    content: str
    iteration: int
    started: float = 0.0
    ended: float = 0.0
    duration: float = 0.0
    is_error: bool = False
    timed_out: bool = False
    interrupted: bool = False
    parallel: bool = False
    segment: int = 0
    changes: tuple[Any, ...] = ()  # the files it changed (tools.safety.writes.lander.ChangedFile: path, kind, diff)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentResult:
    """The outcome of ``Agent.run``; displays as the run's HTML transcript (text in a terminal)."""

    text: str
    messages: list[dict[str, Any]]
    tool_calls: list[ToolCallRecord]
    usage: Usage
    iterations: int
    stopped_reason: StoppedReason
    error: str | None = None
    model: str = ""
    transcript: Any = field(default=None, repr=False, compare=False)
    turns: tuple[Turn, ...] = field(default=(), repr=False)  # what the model saw, turn by turn (.request)
    cost: RunCost | None = None  # per run, per turn, per tool call (hermes_nb.agent.cost)
    todos: tuple[dict[str, str], ...] = ()  # the agent's plan after the run (the todo tool's list)
    children: tuple[AgentResult, ...] = field(default=(), repr=False)  # its sub-agents' runs (in usage and cost)
    trace: Any = field(default=None, repr=False, compare=False)  # its spans (hermes_nb.traces.Trace): a waterfall

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from hermes_nb.display import live
        return {"text/html": live.result_html(self), "text/plain": live.result_text(self)}

    def __str__(self) -> str:
        return self.text


def record_of(result: Any, content: str, iteration: int) -> ToolCallRecord:
    from hermes_nb.tools.safety.writes.lander import take_changes

    args = result.arguments
    return ToolCallRecord(
        id=result.tool_call_id, name=result.name,
        arguments=args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
        content=content, iteration=iteration, started=result.started, ended=result.ended,
        duration=result.duration, is_error=result.is_error, timed_out=result.timed_out,
        interrupted=result.interrupted, parallel=result.parallel, segment=result.segment,
        changes=take_changes(result.tool_call_id))
