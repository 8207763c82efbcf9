"""What a model server lists at ``/models``: the model to name when none was given, whether a name that was
given is one it serves (servers echo any name they are sent), and what a 404 for chat completions most
likely means (a base URL that lacks ``/v1`` answers 404 to ``/models`` as well)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["is_listed", "listing", "not_found_message"]


async def listing(client: Any) -> tuple[int, list[str]]:
    """``(status, ids)`` of ``GET /models``: 200 and the ids in order, 404 and none, or 0 and none when it
    failed otherwise (no connection, a body that is not a listing)."""
    import openai

    try:
        data = json.loads(await client.get("/models", cast_to=str)).get("data") or []
    except openai.NotFoundError:
        return 404, []
    except (openai.OpenAIError, ValueError, AttributeError):
        return 0, []
    ids = [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str) and m["id"]] \
        if isinstance(data, list) else []
    return 200, ids


def not_found_message(where: str, name: str, *, models_missing: bool, defaulted: bool) -> str:
    """A 404 for chat completions, said as its likely cause."""
    if models_missing:
        hint = f" (try {where.rstrip('/')}/v1)" if not where.rstrip("/").endswith("/v1") else ""
        return (f"the server at {where} answered HTTP 404 to both /models and /chat/completions: the base URL "
                f"is likely missing its API path, /v1{hint}")
    named = (f"model {name!r} (hermes_nb's default: no model was named and the server listed none)" if defaulted
             else f"model {name!r}")
    return f"{named} was not found at {where} (HTTP 404): check HERMES_NB_MODEL or Agent(model=...)"


def is_listed(name: str, ids: list[str]) -> bool:
    """Whether ``name`` is one of the listed ``ids``: the id itself, or its untagged form (Ollama lists
    ``llama3:latest`` and serves ``llama3``)."""
    return any(i == name or i.startswith(name + ":") for i in ids)
