"""The agent: its loop, the typed events a run emits, and the model seam (OpenAI-compatible, replay, local).

``hermes_nb.agent.Agent`` is the loop's ``Agent`` (imported on first use, so the events stay cheap to import)."""

from __future__ import annotations

from typing import Any

__all__ = ["Agent", "AgentResult"]


def __getattr__(name: str) -> Any:
    """``Agent`` and the other names of the old ``hermes_nb.agent`` module, from the loop (on first use)."""
    import importlib
    import importlib.util

    if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is not None:
        raise AttributeError(name)  # a submodule (or a dunder): the import system's business, not ours
    try:
        return getattr(importlib.import_module("hermes_nb.agent.loop"), name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
