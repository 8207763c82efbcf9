"""The magics, one module per family (as IPython's ``core/magics/``): ``tool`` and ``tools`` (``%%tool``,
``%tools``, ``%toolsets``), ``agent``, ``mcp``, ``serve``, ``hermes``; ``registry`` adds and removes them."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """Names of the old ``hermes_nb.magics`` module (``ToolMagics``, ...) still import from here."""
    import importlib
    import importlib.util

    if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is not None:
        raise AttributeError(name)  # a submodule (or a dunder): the import system's business, not ours
    try:
        return getattr(importlib.import_module("hermes_nb.magics.tools"), name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
