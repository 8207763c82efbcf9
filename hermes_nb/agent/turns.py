"""What the model saw: one record per model turn of a run (``AgentResult.turns``).

``turns[i].request`` holds the messages and tool definitions sent, ``turns[i].response`` what came back
(text, tool calls, usage, finish reason). The transcript folds each one under "what the model saw", and
a recording keeps the same request in its cassette, so a replay can show a class the recorded context
and say when the conversation it is asked differs from the recording.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes_nb.models import ModelTurn

__all__ = ["Turn", "TurnRequest", "make_request", "new_turn", "recorded_usage"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRequest:
    """The messages and tool definitions one model call was sent.

    Stored as what changed since the previous turn's request (``previous``), not as a copy of the whole
    conversation: a run of n turns would otherwise hold n² message references. ``messages`` rebuilds the
    request as it was sent."""

    tools: tuple[dict[str, Any], ...]
    count: int  # how many messages were sent
    changes: tuple[tuple[int, dict[str, Any]], ...] = ()  # (index, message) where it differs from ``previous``
    previous: TurnRequest | None = field(default=None, repr=False, compare=False)

    @property
    def messages(self) -> tuple[dict[str, Any], ...]:
        chain: list[TurnRequest] = []
        request: TurnRequest | None = self
        while request is not None:
            chain.append(request)
            request = request.previous
        out: list[dict[str, Any]] = []
        for request in reversed(chain):
            del out[request.count:]
            for index, message in request.changes:
                if index < len(out):
                    out[index] = message
                else:
                    out.append(message)
        return tuple(out)

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(t.get("function", {}).get("name", "") for t in self.tools)


def make_request(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]],
                 previous: TurnRequest | None = None) -> TurnRequest:
    """The request record, sharing with ``previous`` every message (and the tools) it was sent unchanged."""
    if previous is None:
        return TurnRequest(tools=tuple(tools), count=len(messages), changes=tuple(enumerate(messages)))
    before = previous.messages
    changes = tuple((i, m) for i, m in enumerate(messages)
                    if i >= len(before) or (before[i] is not m and before[i] != m))
    same_tools = len(tools) == len(previous.tools) and all(a is b or a == b for a, b in zip(tools, previous.tools, strict=True))
    return TurnRequest(tools=previous.tools if same_tools else tuple(tools), count=len(messages), changes=changes,
                       previous=previous)


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
             response: ModelTurn, model: Any, previous: Turn | None = None) -> Turn:
    """The record of a turn, made right after the model answered (``messages`` as they were sent);
    ``previous``: the run's turn before it, whose request this one shares what it can with."""
    recorded = recorded_usage(model)
    request = make_request(messages, tools, previous.request if previous is not None else None)
    return Turn(iteration=iteration, request=request,
                response=response, model=str(getattr(model, "name", "")), recorded=recorded,
                recorded_request=getattr(model, "recorded_request", None) if recorded else None)
