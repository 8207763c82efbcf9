"""Chat completions on the wire: a body posted as it is, a body read back as a JSON object, and streamed
text cleaned for display without splitting a character whose halves came in different chunks."""

from __future__ import annotations

import json
from typing import Any

from hermes_nb.tools.calls.results import clean_text

__all__ = ["complete_text", "json_object", "post_body"]


async def post_body(client: Any, body: dict[str, Any], *, stream: bool, as_text: bool = False) -> Any:
    """``POST /chat/completions`` through the client's generic ``post`` (its documented way to send a body
    as is). ``chat.completions.create`` first walks every message through a typed transform that is the
    identity for plain JSON history yet costs about a millisecond per message, every turn: a 1 000-turn
    conversation spent seconds per turn there."""
    from openai import AsyncStream
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    return await client.post("/chat/completions", body=body, cast_to=str if as_text else ChatCompletion,
                             stream=stream, stream_cls=AsyncStream[ChatCompletionChunk])


def json_object(text: str, base_url: str | None) -> dict[str, Any]:
    """A chat completion's JSON body; a body that is not a JSON object is a ValueError saying so."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"the model server at {base_url or 'https://api.openai.com/v1'} answered with text that "
                         f"is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"the model server at {base_url or 'https://api.openai.com/v1'} answered with JSON that "
                         f"is not a chat completion object")
    return data


def complete_text(text: str) -> tuple[str, str]:
    """``text`` cleaned for display, minus a trailing high surrogate (returned apart: the next chunk may
    start with its low half)."""
    if text and "\ud800" <= text[-1] <= "\udbff":
        return clean_text(text[:-1]), text[-1]
    return clean_text(text), ""

