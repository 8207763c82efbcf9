"""Approvals a person gave earlier: "for this session" (in memory) and "always" (a file under the home).

Both remember exactly what was approved, never a pattern shared with other commands: a session scope is
the exact effect (one simple command's words, a whole command line, one piece of code, one tool call's
arguments, with the content of any file the command runs), and an "always" answer is the exact subject the
person saw, per tool. The "always" answers live in ``<home>/always_approved.json`` so the person's
``config.yaml`` (and its comments) is never rewritten by a click.

Session answers belong to who asked: the notebook, or one MCP client of ``%mcp serve`` (``asked_by``).
A client never rides on what the person approved for the notebook, nor on another client's answers,
unless the person says so (``approvals: {session_extends_to_mcp: true}`` in config.yaml).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from hermes_nb.tools.safety.safe_write import write_atomic

__all__ = ["NOTEBOOK", "always_covers", "always_path", "asked_by", "asker", "remember_always", "remember_session",
           "reset_session", "session_covers"]

log = logging.getLogger("hermes_nb.tools.approval")

NOTEBOOK = "notebook"
_lock = threading.Lock()
_session: dict[str, set[str]] = {}
_asker: ContextVar[str] = ContextVar("hermes_nb_approval_asker", default=NOTEBOOK)


@contextmanager
def asked_by(who: str) -> Iterator[None]:
    """Approvals decided in this context are asked for ``who`` (e.g. ``mcp:<session id>``), and their session
    answers are kept for ``who`` alone."""
    token = _asker.set(who)
    try:
        yield
    finally:
        _asker.reset(token)


def asker() -> str:
    """Who the approvals decided here are for: ``NOTEBOOK`` unless ``asked_by`` says otherwise."""
    return _asker.get()


def session_covers(scopes: frozenset[str], *, notebook_too: bool = False) -> bool:
    """True when every exact effect in ``scopes`` was approved for this session, for this asker (and, with
    ``notebook_too``, for the notebook)."""
    who = _asker.get()
    with _lock:
        held = _session.get(who, set())
        if notebook_too and who != NOTEBOOK:
            held = held | _session.get(NOTEBOOK, set())
        return bool(scopes) and scopes <= held


def remember_session(scopes: frozenset[str]) -> None:
    with _lock:
        _session.setdefault(_asker.get(), set()).update(scopes)


def reset_session() -> None:
    with _lock:
        _session.clear()


def always_path() -> Path:
    from hermes_nb.tools.config import hermes_home

    return hermes_home() / "always_approved.json"


def _read() -> dict[str, list[str]]:
    path = always_path()
    try:  # never through a link: a planted `always_approved.json -> file the model wrote` approves nothing
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:
            data = json.loads(fh.read().decode("utf-8"))
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
        try:  # link-safe: a fresh O_EXCL|O_NOFOLLOW name in the open home folder, renamed into place
            text = json.dumps({"version": 1, "tools": tools}, indent=1, ensure_ascii=False)
            write_atomic(path.parent, path.name, text.encode("utf-8"))
        except OSError as exc:
            log.warning("approval: cannot save %s: %s", path, exc)
            return False
    return True
