"""A chat-completions request as the servers people run accept it (llama.cpp, Ollama, vLLM, OpenAI).

Checked against llama-cpp-python 0.3.36's ``llama_cpp.server`` (chat format ``chatml-function-calling``):
an assistant message with tool calls and ``"content": null`` is refused (HTTP 500, a validation error), so
it carries ``""``; ``tool_choice="required"`` fails there (HTTP 500 with no message) while a named function
works, so with exactly one tool offered ``"required"`` is sent as that tool's name (the same demand).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["RequestOptions", "ToolChoice", "check_tool_choice", "request_body", "turn_tool_choice", "wire_message"]

ToolChoice = Literal["auto", "required", "none"] | dict[str, Any]

_CHOICES = ("auto", "required", "none")


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestOptions:
    """What a person may set on every request (``None``: not sent, the server's default)."""

    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    extra_body: Mapping[str, Any] = field(default_factory=dict)


def check_tool_choice(value: Any) -> ToolChoice | None:
    """``value`` if it is a tool choice chat completions takes; a ``ValueError`` naming the forms if not."""
    if value is None or value in _CHOICES:
        return value  # type: ignore[no-any-return]
    if isinstance(value, Mapping) and value.get("type") == "function" \
            and isinstance(value.get("function"), Mapping) and isinstance(value["function"].get("name"), str):
        return dict(value)
    if isinstance(value, str):  # a bare tool name: the forced call people mean
        return {"type": "function", "function": {"name": value}}
    raise ValueError(f"tool_choice must be 'auto', 'required', 'none', a tool's name or "
                     f"{{'type': 'function', 'function': {{'name': ...}}}}, not {value!r}")


def turn_tool_choice(choice: ToolChoice | None, messages: list[dict[str, Any]]) -> ToolChoice | None:
    """The choice for this turn: a forced one (``required``, a named tool) holds until the model has called a
    tool since the person's last message; then the model chooses (``auto``): it may call again or answer, so
    a two-step question does not stop after its first step (``none`` there did). A model that calls forever
    meets ``max_iterations`` and the loop guard (``max_repeated_failures``)."""
    if choice is None or choice in ("auto", "none"):
        return choice
    for message in reversed(messages):
        if message.get("role") == "user":
            return choice
        if message.get("role") == "tool":
            return "auto"
    return choice


def wire_message(message: dict[str, Any]) -> dict[str, Any]:
    """A history message as chat completions takes it: tool messages without their local ``name``, an
    assistant message's missing text as ``""`` (``null`` is refused by llama-cpp-python's server)."""
    role = message.get("role")
    if role == "tool" and "name" in message:
        return {k: v for k, v in message.items() if k != "name"}
    if role == "assistant" and message.get("content") is None:
        return {**message, "content": ""}
    return message


def request_body(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 options: RequestOptions) -> dict[str, Any]:
    """The JSON body of one ``POST /chat/completions`` (``extra_body`` last: the person's word wins)."""
    body: dict[str, Any] = {"model": model, "messages": [wire_message(m) for m in messages]}
    if tools:
        body["tools"] = tools
        choice = turn_tool_choice(options.tool_choice, messages)
        if choice == "required" and len(tools) == 1:
            choice = {"type": "function", "function": {"name": tools[0]["function"]["name"]}}
        if choice is not None:
            body["tool_choice"] = choice
        if options.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = options.parallel_tool_calls
    for key in ("max_tokens", "temperature", "seed"):
        value = getattr(options, key)
        if value is not None:
            body[key] = value
    body.update(options.extra_body)
    return body
