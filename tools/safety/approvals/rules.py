"""The person's approval rules: the ``approvals:`` section of ``config.yaml``.

```yaml
approvals:
  always: false                # the "always" answer counts once (nothing is stored)
  session_extends_to_mcp: false  # notebook "for this session" answers do not cover MCP clients (the default)
  tools:
    python: ask                # allow | ask | deny
    "mcp__github__*": {action: deny, reason: "we push to GitHub by hand"}
  commands:                    # shell command patterns (fnmatch), for the terminal tool
    - {pattern: "git push*", action: deny, reason: "pushing is done by a person"}
    - {pattern: "pytest*", action: allow}
```

Deny wins over ask, ask over allow. A command ``deny``/``ask`` pattern matches the whole line, any simple
command in it, or any of its **canonical** commands (``tools.safety.commands.canonical``: quotes removed, globs
expanded against the workspace, ``/usr/bin/git`` → ``git``, ``git -C . push`` → ``git push``, what runs
under ``sudo``/``env``/``xargs``/``sh -c``; a word that cannot be known exactly matches whatever it could be),
so ``cat se?ret.txt`` meets a ``*secret*`` deny and ``g''it push`` a ``git push*`` deny. An ``allow`` pattern
holds only for a line that is one plain command known exactly (no ``;``, pipes, substitutions,
redirections, variables), so ``pytest*`` never allows ``pytest; rm -rf ~``.

Rules that cannot be read are not dropped (a deny among them would stop holding): a ``config.yaml`` that
does not parse, or an ``approvals:`` section of the wrong shape, makes every call ask until it is fixed,
and a rule whose action is not ``allow``, ``ask`` or ``deny`` asks.

Every tool call asks for its tool's rule, so the parsed section is kept: for that question the file is
looked at again (``stat``: identity, size, mtime) at most every ``RECHECK_SECONDS``, at once when hermes_nb
itself wrote it (``config.save_config``) or when the home folder changed, and ``reread()`` forces it.
Command rules and full decisions (``rule_for``, ``always_enabled``) look every time: a cell that writes a
``deny`` for ``git push*`` and then checks a push must see it (a stat is cheap next to parsing a command).
"""

from __future__ import annotations

import fnmatch
import functools
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hermes_nb.tools import config
from hermes_nb.tools.errors import ConfigError

__all__ = ["RECHECK_SECONDS", "Rule", "always_enabled", "reread", "rule_for", "session_extends_to_mcp", "set_command_root",
           "tool_rule"]

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


#: How long a look at config.yaml stands (seconds). A stat costs more than the rest of a dispatch.
RECHECK_SECONDS = 0.25


class _Read:
    """The approvals section as last read, what it was read from, and the per-tool answers made from it."""

    __slots__ = ("home", "identity", "generation", "until", "section", "unread", "tool_rules")

    def __init__(self, home: Any, identity: Any, generation: int, section: dict[str, Any], unread: tuple[Rule, ...]):
        self.home, self.identity, self.generation, self.section = home, identity, generation, section
        self.unread = unread  # an "ask" for every call when the rules cannot be read (what they say is unknown)
        self.until = time.monotonic() + RECHECK_SECONDS
        self.tool_rules: dict[str, Rule | None] = {}  # tool_rule's memo; dropped with the read


_read: _Read | None = None


@functools.lru_cache(maxsize=16)
def _config_file(home_env: str | None, home: str | None) -> str:
    """``config.path()`` as a string, cached per environment (building a Path costs more than the rest)."""
    return str(config.config_path())


def _home() -> tuple[str | None, str | None]:
    env = os.environ.get("HERMES_NB_HOME")
    return (env, None) if env is not None else (None, os.environ.get("HOME"))


def _public_env_get(key: Any) -> Any:
    return os.environ.get(key)


try:  # os.environ's own table: a dict look-up notices a moved home (``os.environ.get`` decodes; 10x slower)
    _env_get: Callable[[Any], Any] = os.environ._data.get  # type: ignore[attr-defined]
    _HOME_ENV = os.environ.encodekey("HERMES_NB_HOME")  # type: ignore[attr-defined]
    _USER_HOME = os.environ.encodekey("HOME")  # type: ignore[attr-defined]
except AttributeError:  # not CPython's os.environ: the public way
    _env_get, _HOME_ENV, _USER_HOME = _public_env_get, "HERMES_NB_HOME", "HOME"


def _home_marker() -> Any:
    """Something that changes whenever ``HERMES_NB_HOME`` or ``HOME`` does (``HOME`` counts only without the
    first), as cheaply as possible."""
    home = _env_get(_HOME_ENV)
    return (home, None) if home is not None else (None, _env_get(_USER_HOME))


def reread() -> None:
    """Look at config.yaml again at the next decision (after writing it by other means than ``save_config``)."""
    global _read
    _read = None


def _current(*, look: bool = False) -> _Read:
    """The current read: reused while fresh, same home and no write of ours since; else checked by stat.
    ``look``: check by stat now (a decision that is about to ask or refuse, where a stat is cheap next to
    the rest and a rule written a moment ago must count)."""
    global _read
    cached = _read
    home = _home_marker()
    if not look and cached is not None and cached.home == home and cached.generation == config.generation \
            and time.monotonic() < cached.until:
        return cached
    generation = config.generation
    path = _config_file(*_home())
    try:
        st = os.stat(path)
        identity: Any = (path, st.st_mtime_ns, st.st_size, st.st_ino)
    except (FileNotFoundError, NotADirectoryError):
        identity = (path, None)  # no config: no rules
    except OSError as exc:  # there, but not to be looked at (a link loop, EACCES, EIO): read it to say why
        identity = (path, exc.errno)
    if cached is not None and cached.identity == identity and cached.home == home:
        cached.until, cached.generation = time.monotonic() + RECHECK_SECONDS, generation
        return cached
    problem = ""
    try:
        section = config.load_config().get("approvals") if identity[1] is not None else None
    except ConfigError as exc:
        section, problem = None, (str(exc).splitlines() or [""])[0]
    if section is not None and not isinstance(section, dict):
        problem = f"approvals: must be a mapping, not {type(section).__name__}"
    elif isinstance(section, dict):
        for key, kind, shape in (("tools", dict, "a mapping"), ("commands", list, "a list")):
            if section.get(key) is not None and not isinstance(section[key], kind):
                problem = f"approvals.{key} must be {shape}, not {type(section[key]).__name__}"
    unread: tuple[Rule, ...] = ()
    if problem:  # a deny nobody can read is still the person's deny: every call asks until the file reads
        log.warning("approval rules: %s; every call asks until it is fixed", problem)
        unread = (Rule(action="ask", source="approvals in config.yaml",
                       reason=f"the rules cannot be read ({problem}), so every call asks until they can"),)
    _read = _Read(home, identity, generation, section if isinstance(section, dict) else {}, unread)
    return _read


def _section() -> dict[str, Any]:
    """The ``approvals:`` section as the file says now: commands and full decisions look every time (only
    ``tool_rule``, on every tool call, trusts a look for ``RECHECK_SECONDS``)."""
    return _current(look=True).section


def tool_rule(tool: str) -> Rule | None:
    """``rule_for(tool)`` for a call with no shell command: answered once per tool per read of the file."""
    read = _read
    # _current()'s fast path, inline and cheapest test first: this runs on every tool call
    if read is not None and read.generation == config.generation and _monotonic() < read.until:
        home = _env_get(_HOME_ENV)
        if home == read.home[0] and (home is not None or _env_get(_USER_HOME) == read.home[1]):
            rule = read.tool_rules.get(tool, _UNSET)
            if rule is not _UNSET:
                return rule  # type: ignore[return-value]
    read = _current()
    memo = read.tool_rules
    if tool not in memo:
        memo[tool] = _strongest([*_tool_rules(read.section, tool), *read.unread])
    return memo[tool]


_UNSET = object()
_monotonic = time.monotonic


def always_enabled() -> bool:
    """False when the person switched "always" off (``approvals: {always: false}``)."""
    return _section().get("always", True) is not False


def session_extends_to_mcp() -> bool:
    """True only when the person said that what they approve for the notebook "for this session" holds for
    the MCP clients of ``%mcp serve`` too (``approvals: {session_extends_to_mcp: true}``)."""
    return _section().get("session_extends_to_mcp") is True


def _parse(value: Any, source: str) -> Rule:
    reason = ""
    if isinstance(value, dict):
        reason = str(value.get("reason") or "")
        value = value.get("action")
    if value in _RANK:
        return Rule(action=value, reason=reason, source=source)
    # a mistyped action may have meant deny: it asks (never passes silently)
    log.warning("approval rules: %s: expected allow, ask or deny, got %r (it asks)", source, value)
    return Rule(action="ask", reason=f"its action {value!r} is not allow, ask or deny", source=source)


def _strongest(rules: list[Rule]) -> Rule | None:
    return max(rules, key=lambda r: _RANK[r.action]) if rules else None


def _tool_rules(section: dict[str, Any], tool: str) -> list[Rule]:
    found: list[Rule] = []
    tools = section.get("tools")
    if isinstance(tools, dict):
        for pattern, value in tools.items():
            if isinstance(pattern, str) and fnmatch.fnmatchcase(tool, pattern):
                found.append(_parse(value, f"tools.{pattern}"))
    return found


def _no_root() -> Path | None:
    return None


_command_root: Callable[[], Path | None] = _no_root


def set_command_root(fn: Callable[[], Path | None]) -> None:
    """Where shell commands run, for expanding their globs as bash will (``tools.approval`` sets the workspace
    root; without it a glob stays a wildcard, which a deny rule meets whenever it could match)."""
    global _command_root
    _command_root = fn


def rule_for(tool: str, command: str | None = None, simple_commands: Sequence[str] = ()) -> Rule | None:
    """The strongest rule that matches this call (deny > ask > allow), or None."""
    read = _current(look=True)
    found = [*_tool_rules(read.section, tool), *read.unread]
    commands = read.section.get("commands")
    if command is not None and isinstance(commands, list) and commands:
        found.extend(_command_rules(commands, command, simple_commands))
    return _strongest(found)


def _command_rules(commands: list[Any], command: str, simple_commands: Sequence[str]) -> list[Rule]:
    """The command rules that match: deny and ask against the line as typed and its canonical commands
    (``tools.safety.commands.canonical``: a wildcard there matches when some value of it would); allow only a
    plain line of one command known exactly, whose typed and canonical forms both match."""
    from hermes_nb.tools.safety.commands.canonical import candidates, matches

    line = command.strip()
    forms = candidates(command, root=_command_root())
    plain = not (_PLAIN_LINE_BREAKERS & set(line)) and len(simple_commands) <= 1
    exact = forms[0].text if plain and len(forms) == 1 and forms[0].exact else None
    found: list[Rule] = []
    for i, item in enumerate(commands):
        pattern = item.get("pattern") if isinstance(item, dict) else None
        if not isinstance(pattern, str):
            log.warning("approval rules: commands[%d] needs a 'pattern' (ignored)", i)
            continue
        rule = _parse(item, f"commands[{i}] ({pattern})")
        if rule.action == "allow":
            hit = exact is not None and fnmatch.fnmatchcase(line, pattern) and fnmatch.fnmatchcase(exact, pattern)
        else:
            hit = any(fnmatch.fnmatchcase(c.strip(), pattern) for c in (line, *simple_commands)) \
                or any(matches(pattern, form) for form in forms)
        if hit:
            found.append(rule)
    return found
