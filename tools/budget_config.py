"""The ``budget:`` block of config.yaml, and the one limit that applies before a call is parsed.

Kept apart from ``budget`` (which looks tools up in the registry) so that ``results`` can refuse oversized
arguments without importing the registry back.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULT_ARGUMENT_CHARS", "argument_limit", "budget_config", "number_or_none"]

log = logging.getLogger("hermes_nb.tools.budget")

#: A call's arguments above this many chars are refused unparsed: parsing and the copies around it cost
#: about nine times the size in memory. Four million chars is more than any model writes in one turn.
DEFAULT_ARGUMENT_CHARS = 4_000_000

_config_cache: tuple[tuple[str, int, int], Mapping[str, Any]] | None = None


def budget_config() -> Mapping[str, Any]:
    """The ``budget:`` block of config.yaml, re-read only when the file changes (one stat per call)."""
    global _config_cache
    from hermes_nb.tools.config import config_file, load_config
    from hermes_nb.tools.errors import ConfigError

    path = config_file()
    try:
        st = os.stat(path)
    except OSError:
        return {}
    key = (path, st.st_mtime_ns, st.st_size)
    cached = _config_cache
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        budget = load_config().get("budget")
    except ConfigError as exc:
        log.warning("budget: ignoring the config: %s", exc)
        budget = None
    value: Mapping[str, Any] = budget if isinstance(budget, dict) else {}
    _config_cache = (key, value)
    return value


def number_or_none(value: Any) -> float | None:
    """A non-negative number from the config as a float; anything else is None (the default applies)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return float(value)



def argument_limit() -> float:
    """The most chars a call's arguments may have (``budget.argument_chars`` in the config)."""
    configured = number_or_none(budget_config().get("argument_chars"))
    return configured if configured is not None else DEFAULT_ARGUMENT_CHARS
