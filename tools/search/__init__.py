"""Tool search: deferred tools offered through Hermes's bridge tools ``tool_search`` / ``tool_describe`` /
``tool_call`` instead of their schemas.

``assemble`` builds a turn's definitions (``tools.search.assembly``); the run's catalog travels in a
context variable (``tools.search.scope``), and a batch unwraps ``tool_call`` at its entry
(``unwrap_calls``) so every stage after it sees the real tool. Ranking is SQLite FTS5's ``bm25()``
(``tools.search.index``); settings come from config.yaml's ``tool_search:`` (``tools.search.settings``).
The names below load on first use: a batch that imports ``scope`` does not pay for the rest.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "BRIDGE_NAMES", "Assembly", "Catalog", "CatalogEntry", "SearchSettings", "assemble", "context_window",
    "current_catalog", "is_deferrable", "load_settings", "reset_catalog", "set_catalog", "unwrap_calls",
    "use_catalog", "with_listing",
]

_HOME = {
    "Assembly": "assembly", "assemble": "assembly", "with_listing": "assembly",
    "BRIDGE_NAMES": "catalog", "Catalog": "catalog", "CatalogEntry": "catalog", "is_deferrable": "catalog",
    "current_catalog": "scope", "reset_catalog": "scope", "set_catalog": "scope", "unwrap_calls": "scope",
    "use_catalog": "scope",
    "SearchSettings": "settings", "context_window": "settings", "load_settings": "settings",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
