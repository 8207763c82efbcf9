"""Whether a replay is asked the conversation it recorded: the prompt, the system prompt, the tools offered.

A cassette turn keeps the request it was recorded with (``messages`` and tool ``definitions``, beside the
older ``tools`` names). At the first turn of each run (the request ends with the person's prompt) the
replay compares that request with the one it is asked now and names what differs, e.g. ``the prompt
was “What is 2 + 3?” then, “What is the capital of France?” now``; the replay shows it as drift.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["conversation_note", "request_record", "short", "tool_names"]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: their text
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


def short(text: str, limit: int = 80) -> str:
    """``text`` on one line, cut to ``limit`` characters (a drift note quotes then and now with it)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """The offered tools' names, sorted."""
    return sorted(str(t.get("function", {}).get("name", "")) for t in tools)


def request_record(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What a cassette keeps of a request besides its digest: the messages and tool definitions sent."""
    plain = json.loads(json.dumps(list(messages), ensure_ascii=False, default=str))
    return {"tools": tool_names(tools), "messages": plain, "definitions": json.loads(json.dumps(list(tools), default=str))}


def conversation_note(recorded: Mapping[str, Any], messages: Sequence[Mapping[str, Any]],
                      tools: Sequence[Mapping[str, Any]]) -> str | None:
    """What differs between the recorded request and this one (None when nothing does, or when this is
    not the first turn of a run). Cassettes without messages are compared by the tools' names only."""
    if not messages or messages[-1].get("role") != "user":
        return None  # a later turn of the run: tool results are compared elsewhere
    differences = []
    then = recorded.get("messages")
    if isinstance(then, list) and then:
        prompt_then = _text(then[-1].get("content")) if then[-1].get("role") == "user" else ""
        prompt_now = _text(messages[-1].get("content"))
        if prompt_then.strip() != prompt_now.strip():
            differences.append(f"the prompt was “{short(prompt_then)}” then, “{short(prompt_now)}” now")
        system_then = [_text(m.get("content")) for m in then if m.get("role") == "system"]
        system_now = [_text(m.get("content")) for m in messages if m.get("role") == "system"]
        if system_then != system_now:
            differences.append(f"the system prompt was “{short(' '.join(system_then)) or '(none)'}” then, "
                               f"“{short(' '.join(system_now)) or '(none)'}” now")
    names_then = recorded.get("tools")
    if isinstance(names_then, list):
        added = sorted(set(tool_names(tools)) - set(names_then))
        gone = sorted(set(names_then) - set(tool_names(tools)))
        if added or gone:
            change = ", ".join([f"+{n}" for n in added] + [f"−{n}" for n in gone])
            differences.append(f"the tools offered differ ({change})")
    return "; ".join(differences) or None
