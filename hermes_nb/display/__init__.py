"""What the person sees: tool cards and tables (``cards``), the live transcript (``live``), the batch timeline,
inline prompts, model Markdown, asides, the theme's colours and the one HTML escaping function."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """Names of the old ``hermes_nb.display`` module (``Table``, ``tool_card``, ...) still import from here."""
    import importlib
    import importlib.util

    if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is not None:
        raise AttributeError(name)  # a submodule (or a dunder): the import system's business, not ours
    try:
        return getattr(importlib.import_module("hermes_nb.display.cards"), name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
