"""Shell-command classification and the approval policy.

A command is read by two parsers (``hermes_nb.tools.safety.commands.classifier``: bashlex's tree, and a reader
written from bash's manual that sees every expansion in every word). It is safe only when every simple
command in it is a known read-only program with harmless flags (``hermes_nb.tools.safety.commands.command_rules``)
and nothing around those commands runs, hides or writes anything: no expansion beyond a bare ``$NAME``,
subshell, function, assignment, variable in command position, pipe into a shell, or redirection to a
file. Anything else, including anything either parser cannot read, needs a person's approval.

The policy is the gate's (``hermes_nb.tools.safety.approvals.gate``): rules, then earlier approvals, then the
approver. What the answers remember is exact (``hermes_nb.tools.safety.approvals.remembered``):
- ``once``: nothing.
- ``session``: each flagged simple command exactly (program and arguments as written), or the whole
  line when the problem is the line's structure or a word expands; never a key another command shares.
- ``always``: the exact command text, in ``<hermes home>/always_approved.json``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypedDict

from hermes_nb.tools.safety.approvals import gate, remembered, rules
from hermes_nb.tools.safety.approvals.visible import make_visible
from hermes_nb.tools.safety.commands.classifier import analyse as _analyse
from hermes_nb.tools.workspace import workspace_root

__all__ = [
    "ApprovalCallback",
    "ApprovalResult",
    "check_dangerous_command",
    "detect_dangerous_command",
    "make_visible",
    "command_ask",
    "request_approval",
    "reset_session_approvals",
    "set_default_approval_callback",
]

log = logging.getLogger(__name__)

rules.set_command_root(workspace_root)  # command rules expand globs where the terminal runs

Scope = gate.Scope
ApprovalCallback = gate.ApprovalCallback


class ApprovalResult(TypedDict):
    approved: bool
    scope: Scope | None  # "safe" when no approval was needed, "rule" when a config rule allowed it; None when denied
    pattern_key: str | None
    message: str  # for the model


def detect_dangerous_command(command: str) -> tuple[bool, str | None, str | None]:
    """``(is_dangerous, pattern_key, description)``; the key and sentence describe the first finding."""
    findings = _analyse(command).findings
    if not findings:
        return False, None, None
    return True, findings[0].key, findings[0].description[:1].upper() + findings[0].description[1:]


# --- the policy (the gate's, for callers that hold a shell line or a subject) -------------------------

def reset_session_approvals() -> None:
    """Forget every "for this session" approval."""
    remembered.reset_session()


def set_default_approval_callback(fn: ApprovalCallback) -> Callable[[], None]:
    """Use ``fn`` when no approver is given and the run set none (``gate.use_approver``); returns an undo."""
    return gate.default_approvers().push(fn)


def _result(decision: gate.Decision) -> ApprovalResult:
    return {"approved": decision.approved, "scope": decision.scope, "pattern_key": decision.pattern_key,
            "message": decision.message}


def command_ask(command: str) -> gate.Ask | None:
    """The terminal's judge: ``None`` for a command proven read-only, else what to ask the person.

    What "for this session" and "always" remember is tied to the content of every file the command runs
    (``bound_files``): a rewritten ``train.py`` asks again."""
    analysis = _analyse(command)
    findings = analysis.findings
    if not findings:
        return None
    reasons = list(dict.fromkeys(f.description for f in findings))
    description = " ".join(r[:1].upper() + r[1:] for r in reasons[:3])
    from hermes_nb.tools.safety.commands.bound_files import fingerprints
    from hermes_nb.tools.safety.sandbox import box as sandbox

    state = sandbox.status()
    if not state.available:
        description += f" (Not sandboxed: nothing bounds what it can change; {state.writes}.)"
    else:
        description += f" (It runs sandboxed: {state.mechanism}; {state.writes}.)"
    files = fingerprints(analysis.words, workspace_root()) if analysis.words else ()
    bound = f"  [runs: {'; '.join(files)}]" if files else ""
    if files:
        names = ", ".join(f"`{f.rpartition(' (')[0]}`" for f in files[:3]) + (", ..." if len(files) > 3 else "")
        still = "stays as it is" if len(files) == 1 else "stay as they are"
        description += f" A yes for the session holds only while {names} {still} now."
    return gate.Ask(tool="terminal", subject=command, key=findings[0].key, description=description,
                    scopes=frozenset(f.scope + bound for f in findings), command=command,
                    simple_commands=analysis.commands, bound=bound)


def check_dangerous_command(command: str, *args: Any, approval_callback: ApprovalCallback | None = None,
                            env_type: str | None = None, has_host_access: bool = False) -> ApprovalResult:
    """Decide whether ``command`` may run through the terminal: the gate's decision for one shell line.

    ``check_dangerous_command(command, approval_callback)``, or Hermes's
    ``check_dangerous_command(command, env_type, approval_callback=None, has_host_access=False)``: a string
    second argument is Hermes's terminal backend. It changes nothing here (no backend skips the check:
    the notebook's terminal is this machine). Returns ``{"approved", "scope", "pattern_key", "message"}``;
    ``message`` is written for the model.
    """
    rest = list(args)
    if rest and (rest[0] is None or isinstance(rest[0], str)) and (len(rest) > 1 or isinstance(rest[0], str)):
        rest.pop(0)  # Hermes's order: (command, env_type, approval_callback, has_host_access); env_type unused
    if rest:
        if approval_callback is not None:
            raise TypeError("check_dangerous_command() got approval_callback twice")
        approval_callback = rest.pop(0)
    if rest:
        rest.pop(0)  # has_host_access: a Hermes container flag, no meaning here
    if rest:
        raise TypeError(f"check_dangerous_command() takes at most 4 positional arguments ({len(args) + 1} given)")
    decision = gate.decide_ask("terminal", command_ask(command), approval_callback, command=command)
    if decision.scope == "safe":
        return {"approved": True, "scope": "safe", "pattern_key": None, "message": "Read-only command; no approval needed."}
    return _result(decision)


def request_approval(
    subject: str, pattern_key: str, description: str, approval_callback: ApprovalCallback | None = None,
    *, tool: str | None = None,
) -> ApprovalResult:
    """Ask for a person's yes for something that is not a shell line (Python code, a destructive MCP tool).

    "session" and "always" hold for this exact ``subject`` only.
    """
    tool = tool or pattern_key
    ask = gate.Ask(tool=tool, subject=subject, key=pattern_key, description=description,
                   scopes=frozenset({f"{tool}:{subject}"}))
    return _result(gate.decide_ask(tool, ask, approval_callback))
