"""The embedded model's side of a conversation: chat-completions messages as one ChatML prompt with the
tools described in Hermes's format, and the model's text read back into tool calls.

SmolLM2's own chat template is plain ChatML and knows nothing of tools, so the prompt says what the tools
are (``<tools>``), how to call one (``<tool_call>``) and how results come back (``<tool_response>``), as the
Hermes models are prompted. Results go into the prompt, so the next turn sees them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_nb.models import ToolCallSpec

__all__ = ["CALL_OPEN", "END", "parse_calls", "render_prompt"]

CALL_OPEN = "<tool_call>"
#: Where a ChatML turn ends (SmolLM2's end-of-generation token).
END = "<|im_end|>"
_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)


def _tools_text(tools: Sequence[Mapping[str, Any]]) -> str:
    listed = "\n".join(json.dumps({"name": t["function"]["name"],
                                   "description": t["function"].get("description", ""),
                                   "parameters": t["function"].get("parameters", {})}, ensure_ascii=False)
                       for t in tools)
    return ("You can call tools. Each one is described by a JSON schema between <tools> and </tools>:\n"
            f"<tools>\n{listed}\n</tools>\n"
            "To call a tool, answer with only this:\n"
            '<tool_call>\n{"name": "<the tool\'s name>", "arguments": {<the arguments as JSON>}}\n</tool_call>\n'
            "The result comes back between <tool_response> and </tool_response>; then answer the person.")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: their text (this model sees no images)
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return "" if content is None else str(content)


def _turn(role: str, text: str) -> str:
    return f"<|im_start|>{role}\n{text}{END}\n"


def render_prompt(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> str:
    """The whole conversation as one ChatML prompt ending where the assistant's next turn begins."""
    system = [_text(m.get("content")) for m in messages if m.get("role") == "system"]
    if tools:
        system.append(_tools_text(tools))
    parts = [_turn("system", "\n\n".join(s for s in system if s))] if any(system) else []
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        if role == "assistant":
            calls = [f"{CALL_OPEN}\n" + json.dumps({"name": c["function"]["name"],
                                                    "arguments": _arguments(c["function"].get("arguments"))},
                                                   ensure_ascii=False) + "\n</tool_call>"
                     for c in message.get("tool_calls") or ()]
            parts.append(_turn("assistant", "\n".join([_text(message.get("content"))] + calls).strip()))
        elif role == "tool":
            parts.append(_turn("tool", f"<tool_response>\n{_text(message.get('content'))}\n</tool_response>"))
        else:
            parts.append(_turn("user", _text(message.get("content"))))
    return "".join(parts) + "<|im_start|>assistant\n"


def _arguments(raw: Any) -> Any:
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return raw  # shown as the text it was: the model sees what it wrote


def parse_calls(text: str, offered: Sequence[str], first_id: int) -> tuple[str, tuple[ToolCallSpec, ...]]:
    """The text before any call, and the well-formed calls of offered tools in ``text`` (others stay text)."""
    calls: list[ToolCallSpec] = []
    for match in _CALL.finditer(text):
        try:
            value = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("name") in offered:
            arguments = value.get("arguments", {})
            calls.append(ToolCallSpec(id=f"call_{first_id + len(calls)}", name=str(value["name"]),
                                      arguments=json.dumps(arguments if isinstance(arguments, dict) else {},
                                                           ensure_ascii=False)))
    if not calls:
        return text, ()
    return text[: text.find(CALL_OPEN)].strip(), tuple(calls)
