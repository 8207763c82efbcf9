"""Why a model turn stopped, and what a server did with what it was asked: which limit ended a ``length``
turn (``length_notice``), a tool call the server cut short yet labelled otherwise (``checked_turn``), and a
named ``tool_choice`` in the form llama.cpp's server takes (``named_as_required``)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

__all__ = ["checked_turn", "length_notice", "named_as_required", "truncated_arguments"]


def length_notice(model: Any, turn: Any = None) -> str:
    """What a run cut at a token limit says: which limit ended it (``turn.length_cause`` when the model knew;
    else judged from the usage: the answer stopped short of ``max_tokens``, so the server's context or its
    own limit did), and the next step."""
    limit = getattr(model, "max_tokens", None)
    cause = turn.length_cause if turn is not None else ""
    if not cause:
        usage = turn.usage if turn is not None else {}
        spent = usage.get("completion_tokens", 0) if not usage.get("unreported") else None
        if limit and spent is not None and 0 < spent < limit:
            cause = (f"the server's context window or its own limit: the answer had {spent} tokens, under "
                     f"max_tokens={limit}")
        else:
            cause = f"max_tokens={limit}" if limit else "the server's own max_tokens"
    if cause.startswith("a runaway call") or cause.startswith("a truncated call"):
        step = "The call was not run. Name the tool, simplify the prompt, or raise Agent(max_tokens=...)."
    elif cause.startswith("the context window") or cause.startswith("the server's context"):
        step = "Start a new conversation (agent.reset()) or offer fewer tools."
    else:
        step = "Raise it with Agent(max_tokens=...) or %%agent --max-tokens N, then run again."
    return f"The answer was cut at a token limit ({cause}): stopped_reason 'length'. {step}"


def named_as_required(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A named ``tool_choice`` as llama.cpp's server takes it: ``"required"``, with only that tool offered."""
    choice = kwargs.get("tool_choice")
    if not isinstance(choice, dict):
        return kwargs
    name = choice["function"]["name"]
    tools = [t for t in kwargs.get("tools") or () if (t.get("function") or {}).get("name") == name]
    return {**kwargs, "tool_choice": "required", "tools": tools or kwargs.get("tools")}


def truncated_arguments(arguments: str) -> bool:
    """Whether a call's arguments are JSON cut short (the text ends before the value does), not malformed."""
    text = arguments.strip()
    if not text:
        return False  # no arguments at all: the tool's own check answers
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.pos >= len(text) or exc.msg.startswith("Unterminated string")
    return False


def checked_turn(turn: Any, max_tokens: int | None) -> Any:
    """A turn whose tool call the server cut at ``max_tokens`` is a ``length`` stop, whatever finish reason
    it gave: its calls are not dispatched (a half call run as invalid JSON is a wrong answer to the model).
    Cut means: arguments that end mid-JSON in an answer that spent all of ``max_tokens``; broken JSON
    written well within the limit is the model's, and goes back to it as an error."""
    usage = turn.usage
    spent = bool(max_tokens) and not usage.get("unreported") and usage["completion_tokens"] >= (max_tokens or 0)
    cut = [c.name for c in turn.tool_calls if truncated_arguments(c.arguments)] if spent else []
    if not cut:
        return turn
    said = f" (the server said finish_reason {turn.finish_reason!r})" if turn.finish_reason != "length" else ""
    return replace(turn, tool_calls=(), finish_reason="length",
                   length_cause=f"a truncated call: the arguments of {cut[0]} end mid-JSON at "
                                f"max_tokens={max_tokens}{said}")
