"""Approvals a person gave earlier: "for this session" (in memory) and "always" (a file under the home).

Both remember exactly what was approved, never a pattern shared with other commands: a session scope is
the exact effect (one simple command's words, a whole command line, one piece of code, one tool call's
arguments), and an "always" answer is the exact subject the person saw, per tool. The "always" answers
live in ``<home>/always_approved.json`` so the person's ``config.yaml`` (and its comments) is never
rewritten by a click.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

__all__ = ["always_covers", "always_path", "remember_always", "remember_session", "reset_session", "session_covers"]

log = logging.getLogger("hermes_nb.tools.approval")

_lock = threading.Lock()
_session: set[str] = set()


def session_covers(scopes: frozenset[str]) -> bool:
    """True when every exact effect in ``scopes`` was approved for this session."""
    with _lock:
        return bool(scopes) and scopes <= _session


def remember_session(scopes: frozenset[str]) -> None:
    with _lock:
        _session.update(scopes)


def reset_session() -> None:
    with _lock:
        _session.clear()


def always_path() -> Path:
    from hermes_nb.tools.config import hermes_home

    return hermes_home() / "always_approved.json"


def _read() -> dict[str, list[str]]:
    path = always_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("approval: cannot read %s: %s", path, exc)
        return {}
    tools = data.get("tools") if isinstance(data, dict) else None
    if not isinstance(tools, dict):
        return {}
    return {k: [s for s in v if isinstance(s, str)] for k, v in tools.items() if isinstance(v, list)}


def _legacy_terminal_list() -> list[str]:
    """Commands an earlier version stored in ``config.yaml`` (``approval: always:``); read, never written."""
    from hermes_nb.tools.config import load_config
    from hermes_nb.tools.errors import ConfigError

    try:
        cfg = load_config(expand=False)  # never expand ${VAR} inside stored commands
    except ConfigError as exc:
        log.warning("approval: cannot read the config: %s", exc)
        return []
    section = cfg.get("approval")
    always = section.get("always") if isinstance(section, dict) else None
    return [c for c in always if isinstance(c, str)] if isinstance(always, list) else []


def always_covers(tool: str, subject: str) -> bool:
    if subject in _read().get(tool, ()):
        return True
    return tool == "terminal" and subject in _legacy_terminal_list()


def remember_always(tool: str, subject: str) -> bool:
    """Append ``subject`` to the tool's "always" list; False (logged) when the file cannot be written."""
    path = always_path()
    with _lock:
        tools: dict[str, Any] = _read()
        subjects = tools.setdefault(tool, [])
        if subject not in subjects:
            subjects.append(subject)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps({"version": 1, "tools": tools}, indent=1, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("approval: cannot save %s: %s", path, exc)
            return False
    return True
