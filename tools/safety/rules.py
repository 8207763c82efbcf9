"""The person's approval rules: the ``approvals:`` section of ``config.yaml``.

```yaml
approvals:
  always: false                # the "always" answer counts once (nothing is stored)
  tools:
    python: ask                # allow | ask | deny
    "mcp__github__*": {action: deny, reason: "we push to GitHub by hand"}
  commands:                    # shell command patterns (fnmatch), for the terminal tool
    - {pattern: "git push*", action: deny, reason: "pushing is done by a person"}
    - {pattern: "pytest*", action: allow}
```

Deny wins over ask, ask over allow. A command ``deny``/``ask`` pattern matches the whole line or any simple
command in it; an ``allow`` pattern only a line that is one plain command (no ``;``, pipes, substitutions,
redirections), so ``pytest*`` never allows ``pytest; rm -rf ~``. Read at every decision, so edits apply at once.
"""

from __future__ import annotations

import fnmatch
import functools
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Rule", "always_enabled", "rule_for"]

log = logging.getLogger("hermes_nb.tools.approval")

Action = Literal["allow", "ask", "deny"]
_RANK = {"allow": 0, "ask": 1, "deny": 2}
_PLAIN_LINE_BREAKERS = set(";&|<>$`()\n{}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One matching rule: what to do and, for a deny, why (the model receives the reason)."""

    action: Action
    reason: str = ""
    source: str = ""  # e.g. "tools.python" or "commands[0] (git push*)", for messages


_cache: tuple[Any, dict[str, Any]] | None = None  # (the config file's identity, its approvals section)


@functools.lru_cache(maxsize=16)
def _config_file(home_env: str | None, home: str | None) -> str:
    """``config.path()`` as a string, cached per environment (building a Path costs more than the rest)."""
    from hermes_nb.tools.config import config_path

    return str(config_path())


def _section() -> dict[str, Any]:
    """The ``approvals:`` section, parsed again only when the file changed (every tool call asks)."""
    global _cache
    from hermes_nb.tools.config import load_config
    from hermes_nb.tools.errors import ConfigError

    path = _config_file(os.environ.get("HERMES_NB_HOME"), os.environ.get("HOME"))
    try:
        st = os.stat(path)
        identity: Any = (path, st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        identity = (path, None)
    cached = _cache
    if cached is not None and cached[0] == identity:
        return cached[1]
    try:
        section = load_config().get("approvals") if identity[1] is not None else None
    except ConfigError as exc:  # an unreadable config cannot relax anything: no rules then
        log.warning("approval rules: %s", exc)
        section = None
    result = section if isinstance(section, dict) else {}
    _cache = (identity, result)
    return result


def always_enabled() -> bool:
    """False when the person switched "always" off (``approvals: {always: false}``)."""
    return _section().get("always", True) is not False


def _parse(value: Any, source: str) -> Rule | None:
    reason = ""
    if isinstance(value, dict):
        reason = str(value.get("reason") or "")
        value = value.get("action")
    if value in _RANK:
        return Rule(action=value, reason=reason, source=source)
    log.warning("approval rules: %s: expected allow, ask or deny, got %r (ignored)", source, value)
    return None


def _strongest(rules: list[Rule]) -> Rule | None:
    return max(rules, key=lambda r: _RANK[r.action]) if rules else None


def rule_for(tool: str, command: str | None = None, simple_commands: Sequence[str] = ()) -> Rule | None:
    """The strongest rule that matches this call (deny > ask > allow), or None."""
    section = _section()
    found: list[Rule] = []
    tools = section.get("tools")
    if isinstance(tools, dict):
        for pattern, value in tools.items():
            if isinstance(pattern, str) and fnmatch.fnmatchcase(tool, pattern):
                rule = _parse(value, f"tools.{pattern}")
                if rule is not None:
                    found.append(rule)
    commands = section.get("commands")
    if command is not None and isinstance(commands, list):
        line = command.strip()
        plain = not (_PLAIN_LINE_BREAKERS & set(line)) and len(simple_commands) <= 1
        for i, item in enumerate(commands):
            pattern = item.get("pattern") if isinstance(item, dict) else None
            if not isinstance(pattern, str):
                log.warning("approval rules: commands[%d] needs a 'pattern' (ignored)", i)
                continue
            rule = _parse(item, f"commands[{i}] ({pattern})")
            if rule is None:
                continue
            if rule.action == "allow":
                hit = plain and fnmatch.fnmatchcase(line, pattern)
            else:
                hit = any(fnmatch.fnmatchcase(c.strip(), pattern) for c in (line, *simple_commands))
            if hit:
                found.append(rule)
    return _strongest(found)
