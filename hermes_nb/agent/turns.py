"""What the model saw: one record per model turn of a run (``AgentResult.turns``).

``turns[i].request`` holds the messages and tool definitions sent, ``turns[i].response`` what came back
(text, tool calls, usage, finish reason). The transcript folds each one under "what the model saw", and
a recording keeps the same request in its cassette, so a replay can show a class the recorded context
and say when the conversation it is asked differs from the recording.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_nb.agent.models import ModelTurn

__all__ = ["Turn", "TurnRequest", "new_turn", "recorded_usage"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRequest:
    """The messages and tool definitions one model call was sent."""

    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...]

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(t.get("function", {}).get("name", "") for t in self.tools)


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One model turn: what it was sent (``request``) and what it answered (``response``)."""

    iteration: int  # 1-based, as the transcript counts
    request: TurnRequest
    response: ModelTurn
    model: str
    #: the usage is a recording's (a replay), not measured now
    recorded: bool = False
    #: a replay's own record of this turn's request (``messages``, ``definitions``, ``tools``): the context
    #: the recording was made in, to show a class beside what was sent now
    recorded_request: Mapping[str, Any] | None = None

    @property
    def usage(self) -> Any:
        return self.response.usage


def recorded_usage(model: Any) -> bool:
    """Whether ``model``'s turns replay recorded usage (a ``ReplayModel``, which says so itself)."""
    return bool(getattr(model, "replays_recording", False))


def new_turn(iteration: int, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]],
             response: ModelTurn, model: Any) -> Turn:
    """The record of a turn, made right after the model answered (``messages`` as they were sent)."""
    recorded = recorded_usage(model)
    return Turn(iteration=iteration, request=TurnRequest(messages=tuple(messages), tools=tuple(tools)),
                response=response, model=str(getattr(model, "name", "")), recorded=recorded,
                recorded_request=getattr(model, "recorded_request", None) if recorded else None)
