"""The messages of a conversation as the loop keeps them: the assistant turn with its calls (ids made unique,
oversized arguments left out), multimodal results as content parts; and making the history sendable again
when text cannot be encoded or a value JSON cannot carry slipped in."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

from hermes_nb.agent.events import AgentEvent, Emit, Notice, TextDelta, TurnStarted
from hermes_nb.models import ToolCallSpec
from hermes_nb.tools.calls.results import clean_text

__all__ = ["CUT", "assistant_message", "cut_answer", "hearing", "kept", "repair_history", "sendable", "unique_ids", "with_parts"]

#: How a history marks an answer that was cut off (the model reads it next turn: what it said was not all).
CUT = "[cut off: {why}]"


def repair_history(messages: list[dict[str, Any]]) -> bool:
    """Make every message sendable in place (text cleaned, non-JSON values as their text); False when
    there was nothing to repair (the failure had another cause)."""
    try:
        json.dumps(messages, ensure_ascii=False, allow_nan=False).encode()
        return False
    except (TypeError, ValueError, RecursionError):
        messages[:] = [sendable(m) for m in messages]
        return True


def sendable(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if depth > 50:
        return "<nested too deeply>"
    if isinstance(value, dict):
        return {clean_text(str(k)): sendable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sendable(v, depth + 1) for v in value]
    if value is None or isinstance(value, (bool, int)) or (isinstance(value, float) and math.isfinite(value)):
        return value
    try:
        return clean_text(str(value))
    except Exception:  # a broken __str__ must not stop the repair
        return f"<unprintable {type(value).__name__}>"


def unique_ids(calls: tuple[ToolCallSpec, ...], history: list[dict[str, Any]]) -> tuple[ToolCallSpec, ...]:
    """The calls with ids unique in this turn and the history: a model's empty or repeated id would give
    two tool answers one id. Renamed ids get a suffix; the assistant message and the answers both use them."""
    if not calls:
        return calls
    used = {tc.get("id") for m in history if m.get("role") == "assistant" for tc in m.get("tool_calls") or ()}
    out = []
    for i, call in enumerate(calls):
        base = call.id or f"call_{i}"
        new, n = base, 1
        while new in used:
            n += 1
            new = f"{base}_{n}"
        used.add(new)
        out.append(call if new == call.id else replace(call, id=new))
    return tuple(out)


def assistant_message(content: str, calls: tuple[ToolCallSpec, ...]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        from hermes_nb.tools.budget import argument_limit

        limit = argument_limit()
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": kept(c.arguments, limit)}}
            for c in calls
        ]
    return message


def with_parts(message: dict[str, Any]) -> dict[str, Any]:
    """A multimodal result (Hermes's envelope) goes to the model as content parts, not as its text view."""
    from hermes_nb.tools.calls.results import MultimodalResult

    content = message["content"]
    return {**message, "content": list(content.parts)} if isinstance(content, MultimodalResult) else message


def kept(arguments: str, limit: float) -> str:
    """Arguments as the history keeps them: oversized ones (refused by dispatch) are not resent every turn."""
    if len(arguments) <= limit:
        return arguments
    return json.dumps({"omitted": f"{len(arguments):,} chars of arguments, over the limit of {limit:,.0f}; "
                                  "the call was refused"})


def cut_answer(messages: list[dict[str, Any]], partial: str, why: str) -> str:
    """After ■, a failed turn or a server that died mid-stream: the answer so far is kept in the history,
    marked as cut, so the history is what happened and the person's prompt is never left unanswered (the
    next run would send two user messages in a row, and the model answer the old one). What the transcript
    says; "" when the history already ends with an answer."""
    if not messages or messages[-1].get("role") == "assistant":
        return ""
    text = clean_text(partial).rstrip()
    mark = CUT.format(why=why)
    messages.append({"role": "assistant", "content": f"{text}\n{mark}" if text else mark})
    if text:
        return (f"The partial answer ({len(text):,} characters) is kept in the history, marked as cut; "
                "nothing was discarded.")
    return "No answer had come; the history marks the turn as cut, so your next prompt follows an answer."


def hearing(emit: Emit, partial: list[str]) -> Emit:
    """``emit`` that also keeps the text of the model turn under way in ``partial`` (a new turn, or a retry
    that streams the answer again from its start, empties it)."""
    def hear(event: AgentEvent) -> None:
        if isinstance(event, TextDelta):
            partial.append(event.delta)
        elif isinstance(event, TurnStarted) or (isinstance(event, Notice) and event.level == "retry"
                                                 and "retrying in" in event.message):
            partial.clear()
        emit(event)
    return hear
