"""Hermes ``main``'s newer names, accepted by the registry (read from its sources; 0.19.0 has neither).

- Renamed tools: ``todo`` → ``todo_list``, ``process`` → ``process_manage``, ``cronjob`` →
  ``cronjob_manage``. A call to the new name reaches the tool hermes_nb ships under the old one (and the
  old name reaches a tool registered under the new one); the model is offered only the registered name.
  An alias never hides a tool actually registered under that name (the agent-loop tools register both
  ``todo`` and ``todo_list`` themselves).
- ``register(..., scope=...)``: a profile overlay (Hermes keys it by the profile's home). hermes_nb has one
  registry per kernel, so a scope other than this home is recorded on the tool and said by
  ``%tools doctor``; the tool is registered as usual.
"""

from __future__ import annotations

import os
from collections.abc import Container, Mapping
from typing import Any

__all__ = ["TOOL_RENAMES", "note_scope", "renamed_target"]

#: Hermes main's new name → the name 0.19.0 (and hermes_nb) uses; read both ways.
TOOL_RENAMES: Mapping[str, str] = {"todo_list": "todo", "process_manage": "process", "cronjob_manage": "cronjob"}
_BOTH_WAYS = {**TOOL_RENAMES, **{old: new for new, old in TOOL_RENAMES.items()}}


def renamed_target(name: Any, tools: Container[str]) -> str | None:
    """The registered name a call to ``name`` means, when ``name`` is one of Hermes's renames; else None."""
    if not isinstance(name, str) or name in tools:
        return None
    target = _BOTH_WAYS.get(name)
    return target if target is not None and target in tools else None


def note_scope(name: str, scope: Any, origin: str | None) -> dict[str, Any]:
    """What ``register(..., scope=scope)`` adds to the tool's metadata; a foreign scope is said in doctor."""
    if scope is None:
        return {}
    from hermes_nb.tools.config import hermes_home
    from hermes_nb.tools.sources.load_report import record_failure

    here = os.path.realpath(hermes_home())
    if isinstance(scope, (str, os.PathLike)) and os.path.realpath(os.path.expanduser(os.fspath(scope))) == here:
        return {"hermes_scope": os.fspath(scope)}
    record_failure("tool", f"{origin or '?'}/{name}/scope",
                   f"tool {name!r} was registered with scope={scope!r} (a Hermes profile overlay); a notebook "
                   "has one registry, so it is registered for every profile here")
    return {"hermes_scope": str(scope)}
