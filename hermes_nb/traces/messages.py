"""A model turn's messages as the GenAI conventions write them on a ``chat`` span (content capture only).

``gen_ai.input.messages`` (what the turn was sent), ``gen_ai.output.messages`` (what it answered) and
``gen_ai.system_instructions`` (the system prompt) are JSON strings: each message is ``{"role", "parts"}``, each
part ``{"type": "text" | "tool_call" | "tool_call_response", ...}``; a content part of another kind (an image) is
kept as it was sent, a generic part by the conventions' schema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["chat_content"]

_SYSTEM_ROLES = frozenset({"system", "developer"})  # OpenAI's two names for the instructions' message


def chat_content(sent: Sequence[Mapping[str, Any]], response: Any) -> dict[str, str]:
    """The content attributes of one ``chat`` span: the messages ``sent``, the ``response``, the system prompt."""
    content = {"gen_ai.input.messages": _dumps([_message(m) for m in sent]),
               "gen_ai.output.messages": _output(response)}
    system = [part for m in sent if m.get("role") in _SYSTEM_ROLES for part in _parts(m.get("content"))]
    if system:
        content["gen_ai.system_instructions"] = _dumps(system)
    return content


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    role = str(message.get("role") or "user")
    if role == "tool":  # a call's result: one response part, by the call's id
        return {"role": role, "parts": [{"type": "tool_call_response", "id": message.get("tool_call_id", ""),
                                          "response": _text(message.get("content"))}]}
    parts = _parts(message.get("content"))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append(_tool_call(call.get("id", ""), function.get("name", ""), function.get("arguments", "")))
    return {"role": role, "parts": parts}


def _parts(content: Any) -> list[dict[str, Any]]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": str(content)}]
    parts: list[dict[str, Any]] = []
    for part in content:  # OpenAI content parts
        if isinstance(part, Mapping) and part.get("type") == "text":
            parts.append({"type": "text", "content": str(part.get("text", ""))})
        elif isinstance(part, Mapping):
            parts.append(dict(part))
    return parts


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return str(content)  # a multimodal result's text view, as ``gen_ai.tool.call.result`` has it
    return "\n".join(p["content"] for p in _parts(content) if p["type"] == "text")


def _tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def _output(response: Any) -> str:
    parts: list[dict[str, Any]] = []
    if response.content:
        parts.append({"type": "text", "content": response.content})
    parts += [_tool_call(call.id, call.name, call.arguments) for call in response.tool_calls]
    return _dumps([{"role": "assistant", "parts": parts, "finish_reason": response.finish_reason or "stop"}])


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
