"""Which ``Model`` an ``Agent`` gets: ``replay:PATH`` (offline), ``local`` (embedded), or an endpoint.

Kept apart from ``models`` (the adapters), ``replay`` (the cassettes) and ``local`` (the embedded model) so
none of them imports another.
"""

from __future__ import annotations

import os
from typing import Any

from hermes_nb.models import OpenAIModel, is_local_url
from hermes_nb.models.replay import ReplayModel

__all__ = ["MODEL_OPTIONS", "resolve_model"]

#: The keyword options a model takes beside its name, base URL and key (``Agent``'s and ``evaluate``'s).
MODEL_OPTIONS = ("stream", "temperature", "parallel_tool_calls", "timeout", "max_retries", "turn_timeout",
                 "tool_choice", "max_tokens", "seed", "extra_body")
#: What the embedded model takes of them (the rest concern HTTP).
_LOCAL_OPTIONS = ("stream", "temperature", "tool_choice", "max_tokens", "seed")


def resolve_model(
    model: Any,
    base_url: str | None,
    api_key: str | None,
    **options: Any,
) -> Any:
    """The ``Model`` for these arguments, with defaults from the environment (read now).

    ``replay:PATH`` gives the offline ``ReplayModel``; ``local`` (or ``local:PATH``) the embedded SmolLM2
    (``hermes_nb.models.local``).
    A base URL on 127.0.0.1 or localhost needs no key (a dummy one is sent). With no model named, an endpoint
    at a base URL is asked which model it serves. A missing key is reported when the run starts, not here.
    """
    if model is not None and not isinstance(model, str):
        return model  # a Model object, e.g. ReplayModel(path, on_drift="stop")
    model = model or os.environ.get("HERMES_NB_MODEL") or None
    if model and model.startswith("replay:"):
        return ReplayModel(model.removeprefix("replay:"), stream=bool(options.get("stream", True)))
    if model == "local" or (model or "").startswith("local:"):
        from hermes_nb.models.local import LocalModel

        path = model.removeprefix("local").removeprefix(":") or None
        return LocalModel(path=path, **{k: v for k, v in options.items() if k in _LOCAL_OPTIONS})
    base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
    if not api_key and is_local_url(base_url):
        api_key = "not-needed"
    return OpenAIModel(model=model, base_url=base_url, api_key=api_key,
                       **{k: v for k, v in options.items() if k in MODEL_OPTIONS or k == "aiohttp"})
