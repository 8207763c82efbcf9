"""The approval gate: one function decides, before a handler runs, whether a tool call may run.

Each tool declares how its calls are judged when it registers: ``metadata={"approval_judge": fn}``
(``fn(args) -> Ask | None``; the terminal's shell classifier, the ``python`` tool), or
``needs_approval=True`` (every call asks: MCP tools annotated destructive, notebook tools that say so).
``decide`` then applies the person's rules (``approvals:`` in ``config.yaml``, deny wins), what they
approved earlier (exactly; ``tools.safety.approvals.remembered``) and finally asks the approver.

A tool that never asks by itself (no judge, no ``needs_approval``, no shell line) and has no rule of the
person's passes with one memo look-up (``rules.tool_rule``): the common call stays cheap, and a rule for it
sends it down the full path.

Every path that runs a tool passes here: a batch decides before a call's clock starts
(``tools.batch.state``), ``registry.dispatch`` and ``handle_function_call`` before the handler. The
registry's lookup/validate/call core holds no policy.

The approver belongs to the run: an explicit argument, else the context variable set by
``use_approver`` (each ``Agent.arun`` sets its own, so two concurrent runs get their own answers), else
the process default (``tools.approval.set_default_approval_callback``: the notebook's inline prompt).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, overload

from hermes_nb.tools.interaction import CallbackStack
from hermes_nb.tools.safety.approvals import remembered, rules
from hermes_nb.tools.safety.approvals.visible import make_visible

__all__ = ["COMMAND_PARAM_KEY", "JUDGE_KEY", "ApprovalCallback", "Ask", "Decision", "current_approver", "adecide", "blocked", "decide", "run_approver",
           "decide_ask", "decide_without_asking", "default_approvers", "judge", "use_approver"]

log = logging.getLogger("hermes_nb.tools.approval")

JUDGE_KEY = "approval_judge"
COMMAND_PARAM_KEY = "approval_command_param"
Scope = Literal["once", "session", "always", "safe", "rule"]
ApprovalCallback = Callable[[str, str, str], str]
"""``(subject, pattern_key, description) -> "once" | "session" | "always" | "deny" | "deny: <reason>" |
"no-answer"`` (raising ``TimeoutError`` is "no-answer" too; both deny)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask:
    """What the person is asked about one call."""

    tool: str
    subject: str  # what the person sees: the command, the code, or ``name {arguments}``
    key: str  # the first finding's pattern key, e.g. "rm", "python-code", "tool:NAME"
    description: str  # one or more sentences saying why
    scopes: frozenset[str]  # the exact effects "for this session" remembers
    command: str | None = None  # the shell line, for command rules
    simple_commands: tuple[str, ...] = ()  # its simple commands, for command rules
    bound: str = ""  # what an approval is tied to beyond the subject: the content of files the command runs
    lasting: bool = True  # False: what it runs cannot be tied to files (named at run time): every yes is "once"


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    approved: bool
    scope: Scope | None  # None when denied
    pattern_key: str | None
    message: str  # written for the model


_default: CallbackStack[ApprovalCallback] = CallbackStack()
_run_approver: ContextVar[ApprovalCallback | None] = ContextVar("hermes_nb_run_approver", default=None)


def default_approvers() -> CallbackStack[ApprovalCallback]:
    """The process-wide fallback approvers (the notebook's prompt installs itself here)."""
    return _default


@contextmanager
def use_approver(callback: ApprovalCallback | None) -> Iterator[None]:
    """Let ``callback`` answer the approvals of this context (this run, task or thread) only."""
    token = _run_approver.set(callback)
    try:
        yield
    finally:
        _run_approver.reset(token)


def current_approver(explicit: ApprovalCallback | None = None) -> ApprovalCallback | None:
    """Who answers now: ``explicit``, else the run's, else the process-wide one; one whose ``available()`` says
    False (a sub-agent's, with no one behind it) stands aside, as the process-wide ones do."""
    for callback in (explicit, _run_approver.get()):
        if callback is not None and getattr(callback, "available", lambda: True)():
            return callback
    return _default.current()


def run_approver() -> ApprovalCallback | None:
    """The approver ``use_approver`` set for this run (a context variable), without the process-wide
    fallbacks: those are looked up only when a call really asks (the prompt's ``available()`` tells the
    person once that no one can answer, which a batch that asks nothing must not print)."""
    return _run_approver.get()


# -- judging ----------------------------------------------------------------------------------------

def _tool_ask(entry: Any, args: Mapping[str, Any]) -> Ask:
    shown = json.dumps(dict(args), ensure_ascii=False, sort_keys=True)
    reason = entry.metadata.get("approval_reason") or f"the tool {entry.name} is marked as needing approval."
    return Ask(tool=entry.name, subject=f"{entry.name} {shown}", key=f"tool:{entry.name}",
               description=str(reason), scopes=frozenset({f"tool:{entry.name}:{shown}"}))


def judge(entry: Any, args: Mapping[str, Any]) -> Ask | None:
    """How the tool judges this call: ``None`` when it needs nobody's yes. A failing judge asks."""
    fn = entry.metadata.get(JUDGE_KEY)
    if fn is not None:
        try:
            ask = fn(args)
        except Exception:  # fail closed: a judge that cannot judge asks the person
            log.exception("approval judge of %r failed; asking", entry.name)
            return _tool_ask(entry, args)
        if ask is not None or not entry.needs_approval:
            return ask
    return _tool_ask(entry, args) if entry.needs_approval else None


# -- deciding ---------------------------------------------------------------------------------------

@overload
def decide(entry: Any, args: Mapping[str, Any], approver: ApprovalCallback | None = None,
           *, ask_lock: AbstractContextManager[Any] | None = None, may_ask: Literal[True] = True) -> Decision: ...
@overload
def decide(entry: Any, args: Mapping[str, Any], approver: ApprovalCallback | None = None,
           *, ask_lock: AbstractContextManager[Any] | None = None, may_ask: bool) -> Decision | None: ...
def decide(entry: Any, args: Mapping[str, Any], approver: ApprovalCallback | None = None,
           *, ask_lock: AbstractContextManager[Any] | None = None, may_ask: bool = True) -> Decision | None:
    """The gate for one validated call of ``entry`` (a ``ToolEntry``); may wait for a person.

    With ``may_ask=False``: the decision when it needs nobody (harmless, a rule, an earlier approval), else
    None (callers on an event loop use it to avoid a thread hop for ordinary calls)."""
    # The common case, first and cheap (every dispatch passes here): a tool that never asks by itself and
    # takes no shell line, with no rule of the person's for it; the full path would answer "safe" too. A
    # rule sends it down the full path, so every rule acts as before.
    if not entry.needs_approval and JUDGE_KEY not in entry.metadata and COMMAND_PARAM_KEY not in entry.metadata \
            and rules.tool_rule(entry.name) is None:
        return _SAFE
    return _decide(entry, args, approver, ask_lock, may_ask=may_ask)


def decide_without_asking(entry: Any, args: Mapping[str, Any]) -> Decision | None:
    """``decide(..., may_ask=False)``: None where a person would have to answer."""
    return decide(entry, args, may_ask=False)


async def adecide(entry: Any, args: Mapping[str, Any], approver: ApprovalCallback | None = None) -> Decision:
    """``decide`` for callers on an event loop: at once when nobody must answer; a person's answer is waited
    for in a thread (a prompt blocks), with the caller's context (the run's approver)."""
    decision = decide_without_asking(entry, args) if approver is None else None
    if decision is None:
        import asyncio
        import contextvars

        context = contextvars.copy_context()
        decision = await asyncio.to_thread(context.run, decide, entry, args, approver)
    return decision


def blocked(decision: Decision) -> tuple[str, bool]:
    """What the model gets for a call the gate did not let run: the ``Settled`` pair ``(content, True)``."""
    from hermes_nb.tools.calls.results import tool_error

    return tool_error(decision.message, blocked=True), True


def _decide(entry: Any, args: Mapping[str, Any], approver: ApprovalCallback | None,
            ask_lock: AbstractContextManager[Any] | None, *, may_ask: bool) -> Decision | None:
    ask = judge(entry, args)
    param = entry.metadata.get(COMMAND_PARAM_KEY)  # the argument holding a shell line, for command rules
    command = args.get(param) if param and isinstance(args.get(param), str) else None
    return decide_ask(entry.name, ask, approver, ask_lock=ask_lock, command=command,
                      shown=lambda: _tool_ask(entry, args), may_ask=may_ask)


_SAFE = Decision(approved=True, scope="safe", pattern_key=None, message="No approval needed.")


def _blocked(key: str | None, message: str) -> Decision:
    return Decision(approved=False, scope=None, pattern_key=key, message=message)


@overload
def decide_ask(tool: str, ask: Ask | None, approver: ApprovalCallback | None = None, *,
               ask_lock: AbstractContextManager[Any] | None = None, command: str | None = None,
               shown: Callable[[], Ask] | None = None, may_ask: Literal[True] = True) -> Decision: ...


@overload
def decide_ask(tool: str, ask: Ask | None, approver: ApprovalCallback | None = None, *,
               ask_lock: AbstractContextManager[Any] | None = None, command: str | None = None,
               shown: Callable[[], Ask] | None = None, may_ask: bool) -> Decision | None: ...


def decide_ask(tool: str, ask: Ask | None, approver: ApprovalCallback | None = None, *,
               ask_lock: AbstractContextManager[Any] | None = None, command: str | None = None,
               shown: Callable[[], Ask] | None = None, may_ask: bool = True) -> Decision | None:
    """Rules, then earlier approvals, then the approver; ``ask`` is None for a call judged harmless.

    ``shown`` builds what to ask about such a call when a rule says "ask" (the tool and its arguments).
    With ``may_ask=False`` it returns None where it would ask the person.
    """
    if ask is not None and ask.command is not None:
        command = ask.command
    rule = rules.rule_for(tool, command, ask.simple_commands if ask else ())
    key = ask.key if ask else None
    if rule is not None and rule.action == "deny":
        why = f": {_sentence(rule.reason)}" if rule.reason else "."
        return _blocked(key or f"rule:{tool}", f"BLOCKED by the person's rule {rule.source} in config.yaml{why} "
                                                "Do not try to reach the same effect another way.")
    if rule is not None and rule.action == "allow":
        return Decision(approved=True, scope="rule", pattern_key=key,
                        message=f"Allowed by the person's rule {rule.source}.")
    if ask is None and rule is not None:  # "ask" for a call the tool itself would let through
        subject = command if command is not None else (shown().subject if shown is not None else tool)
        ask = Ask(tool=tool, subject=subject, key=f"rule:{tool}", command=command,
                  description=f"the person's rule {rule.source} asks before this runs"
                              + (f": {_sentence(rule.reason)}" if rule.reason else "."),
                  scopes=frozenset({f"rule:{tool}:{subject}"}))
    if ask is None:
        return _SAFE
    if remembered.always_covers(tool, ask.subject + ask.bound):
        return Decision(approved=True, scope="always", pattern_key=ask.key, message="Approved earlier (always).")
    extends = remembered.asker() != remembered.NOTEBOOK and rules.session_extends_to_mcp()
    if remembered.session_covers(ask.scopes, notebook_too=extends):
        return Decision(approved=True, scope="session", pattern_key=ask.key, message="Approved for this session.")
    if not may_ask:
        return None
    callback = current_approver(approver)
    if callback is None:
        return _blocked(ask.key, f"BLOCKED: this needs a person's approval ({ask.description}) and no one is "
                                 "available to approve it. Do not retry it; tell the person what you wanted to run.")
    # the reason may quote a server's or a tool's own words: shown with hidden characters made visible
    reason = make_visible(ask.description)
    asked = time.perf_counter()
    try:
        if ask_lock is not None:
            with ask_lock:  # one prompt at a time per batch
                answer = callback(ask.subject, ask.key, reason)
        else:
            answer = callback(ask.subject, ask.key, reason)
    except TimeoutError:
        answer = "no-answer"
    except Exception:  # the callback is the person's side of the boundary: a crash there is a "no"
        log.exception("approval callback failed; denying %r", ask.subject)
        answer = "deny"
    # asked, answered, by whom, waited how long: two events on the asking call's span
    from hermes_nb.tools.calls.tracing import approval_heard

    approval_heard(tool, asked, time.perf_counter(), str(answer).partition(":")[0].strip(),
                   "approval_callback" if callback is approver or callback is _run_approver.get() else "person")
    return _answer(tool, ask, answer if isinstance(answer, str) else "deny")


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def _answer(tool: str, ask: Ask, answer: str) -> Decision:
    choice, _, reason = answer.partition(":")
    choice = choice.strip()
    if choice in ("no-answer", "timeout"):  # the prompt gave up waiting: a denial, said as what it was
        return _blocked(ask.key, "BLOCKED: nobody answered the approval prompt in time, so this did not run. "
                                 "Do not retry it; tell the person what you wanted to run.")
    if choice in ("always", "session") and not ask.lasting:
        return Decision(approved=True, scope="once", pattern_key=ask.key,
                        message="Approved by the person (once: what it runs is named only when it runs, so a yes "
                                "cannot be kept for later).")
    if choice == "always" and not rules.always_enabled():
        return Decision(approved=True, scope="once", pattern_key=ask.key,
                        message="Approved by the person (once; \"always\" is switched off in config.yaml).")
    if choice == "always":
        if remembered.remember_always(tool, ask.subject + ask.bound):
            return Decision(approved=True, scope="always", pattern_key=ask.key, message="Approved by the person (always).")
        remembered.remember_session(ask.scopes)
        return Decision(approved=True, scope="always", pattern_key=ask.key,
                        message="Approved by the person (always; it could not be saved, so it holds for this session).")
    if choice == "session":
        remembered.remember_session(ask.scopes)
        return Decision(approved=True, scope="session", pattern_key=ask.key,
                        message="Approved by the person for this session.")
    if choice == "once":
        return Decision(approved=True, scope="once", pattern_key=ask.key, message="Approved by the person (once).")
    said = f" Their reason: {_sentence(reason.strip())}" if choice == "deny" and reason.strip() else ""
    return _blocked(ask.key, f"BLOCKED: the person denied this ({ask.description.rstrip('.')}).{said} Do not run it "
                             "again and do not try to reach the same effect another way; ask the person how to proceed.")
