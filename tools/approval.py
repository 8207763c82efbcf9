"""Shell-command classification and the approval policy.

A command is parsed with ``bashlex`` (a real bash parser) and walked node by node. It is safe only when
every simple command in it is a known read-only program with harmless flags (``hermes_nb.tools.safety.command_rules``)
and nothing around those commands runs, hides or writes anything: no command or process substitution,
subshell, function, assignment, variable in command position, pipe into a shell, or redirection to a
file. Anything else, including anything the parser rejects, needs a person's approval.

The policy is the gate's (``hermes_nb.tools.safety.gate``): rules, then earlier approvals, then the
approver. What the answers remember is exact (``hermes_nb.tools.safety.remembered``):
- ``once``: nothing.
- ``session``: each flagged simple command exactly (program and arguments as written), or the whole
  line when the problem is the line's structure or a word expands; never a key another command shares.
- ``always``: the exact command text, in ``<hermes home>/always_approved.json``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from hermes_nb.tools.safety import gate, remembered
from hermes_nb.tools.safety.command_rules import INTERPRETERS, SHELLS, check_program, flag_sensitive
from hermes_nb.tools.safety.visible import hidden_characters, make_visible

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

Scope = Literal["once", "session", "always", "safe", "rule"]
ApprovalCallback = gate.ApprovalCallback


class ApprovalResult(TypedDict):
    approved: bool
    scope: Scope | None  # "safe" when no approval was needed, "rule" when a config rule allowed it; None when denied
    pattern_key: str | None
    message: str  # for the model


@dataclass(frozen=True, slots=True)
class _Finding:
    key: str
    description: str
    scope: str  # the exact effect "for this session" remembers: one simple command, or the whole line


_MAX_CHARS = 20_000
_SAFE_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_TRUSTED_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"})
_SIMPLE_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9$?#@*!-]")
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c"})


class _Walker:
    """Collects findings in source order; the first one names the command's pattern key."""

    def __init__(self, source: str) -> None:
        self.findings: list[_Finding] = []
        self.source = source  # the parsed text, to see which characters of a word were quoted
        self.line_scope = "line:" + source
        self.scope = self.line_scope
        self.commands: list[str] = []  # the text of every simple command, for the person's command rules

    def add(self, key: str, description: str) -> None:
        self.findings.append(_Finding(key, description, self.scope))

    def node(self, n: Any) -> None:
        kind = n.kind
        if kind == "for":
            self.loop_variable(n)
        if kind == "operator" and getattr(n, "op", "") == "&":
            self.add("background", "the command starts a background job, which could outlive the call.")
        if kind in ("list", "for", "while", "until", "if"):
            for part in n.parts:
                self.node(part)
        elif kind == "pipeline":
            self.pipeline(n)
        elif kind == "compound":
            if n.list and n.list[0].kind == "reservedword" and n.list[0].word == "(":
                self.add("subshell", "the command runs part of itself in a subshell.")
            for part in n.list:
                self.node(part)
            for r in getattr(n, "redirects", None) or []:
                self.redirect(r)
        elif kind == "function":
            self.add("function-definition", "the command defines a shell function, which can shadow any program.")
            for part in n.parts:
                self.node(part)
        elif kind == "command":
            self.command(n)
        elif kind == "word":
            self.word(n, command_position=False)
        elif kind == "redirect":
            self.redirect(n)
        elif kind not in ("reservedword", "operator", "pipe"):
            self.add("unparseable", f"the command uses shell syntax ({kind}) this check does not understand.")

    def loop_variable(self, n: Any) -> None:
        """``for PATH in ...``: a loop variable with the name of an environment variable rebinds it for
        every program the loop runs (PATH, LD_PRELOAD, GIT_CONFIG_*...)."""
        words = [p for p in n.parts if p.kind == "word"]
        if words and (not _PRIVATE_NAME.fullmatch(words[0].word) or words[0].word in _LOWER_ENV):
            self.add("assignment", f"the loop variable `{words[0].word}` could be an environment variable that "
                                   "changes what the programs in the loop do.")

    def pipeline(self, n: Any) -> None:
        names = [_program(p) for p in n.parts if p.kind == "command"]
        for name in names[1:]:
            if name in SHELLS or name in INTERPRETERS or name in ("eval", "source", "."):
                if any(earlier in _DOWNLOADERS for earlier in names[: names.index(name)]):
                    self.add("pipe-to-shell", f"a download is piped into `{name}`, which runs it as code.")
                else:
                    self.add("pipe-to-shell", f"output is piped into `{name}`, which runs it as code.")
                break
        for part in n.parts:
            self.node(part)

    def command(self, n: Any) -> None:
        text = " ".join(self.source[p.pos[0]:p.pos[1]] for p in n.parts)
        self.commands.append(text)
        outer = self.scope
        # A session approval holds for this exact simple command only when nothing in it expands.
        self.scope = self.line_scope if _expands(n, self.source) else "cmd:" + text
        try:
            self._command(n)
        finally:
            self.scope = outer

    def _command(self, n: Any) -> None:
        words = [p for p in n.parts if p.kind == "word"]
        for p in n.parts:
            if p.kind == "assignment":
                self.add("assignment", "the command sets a shell variable, which can change what later commands do.")
                self.word(p, command_position=False)
            elif p.kind == "redirect":
                self.redirect(p)
        for i, w in enumerate(words):
            self.word(w, command_position=(i == 0))
        if not words:
            return
        name = words[0].word
        folder, _, base = name.rpartition("/")
        verdict = check_program(base, [w.word for w in words[1:]]) if base else ("unknown-program", "")
        if verdict is None and flag_sensitive(base):
            verdict = self.expanding_arguments(base, words[1:])
        elif verdict is None and base == "printf":  # its first word may be an option (-v NAME)
            verdict = self.expanding_arguments(base, words[1:2])
        if verdict is not None:
            key, sentence = verdict
            self.add(key, sentence or f"`{name}` is not a known read-only program.")
        elif "/" in name and (folder or "/") not in _TRUSTED_DIRS:
            self.add("unknown-program", f"`{name}` runs a program from outside the system folders.")

    def expanding_arguments(self, program: str, args: list[Any]) -> tuple[str, str] | None:
        """For a program whose safety depends on its flags: an argument the shell turns into other words."""
        for w in args:
            if _has_parameter(w):
                return ("indirection", f"a variable in the arguments of `{program}` could become an option that "
                                       "writes or runs something.")
            raw = self.source[w.pos[0]:w.pos[1]]
            braces, globs = _unquoted_expansions(raw)
            if braces:
                return ("indirection", f"the brace expansion `{raw}` could give `{program}` an option that writes "
                                       "or runs something.")
            if globs and _glob_can_start_an_option(raw):
                return ("indirection", f"the pattern `{raw}` could match a file named like an option of `{program}` "
                                       "(for example `--pre=sh`).")
        return None

    def word(self, w: Any, *, command_position: bool) -> None:
        for part in getattr(w, "parts", None) or []:
            if part.kind == "commandsubstitution":
                self.add("command-substitution", "the command runs another command inside `$(...)` or backticks.")
                self.node(part.command)
            elif part.kind == "processsubstitution":
                self.add("process-substitution", "the command runs another command inside `<(...)` or `>(...)`.")
                self.node(part.command)
            elif part.kind == "parameter":
                if command_position:
                    self.add("indirection", "a variable decides which program runs.")
                elif not _SIMPLE_PARAM.fullmatch(part.value) or part.value == "IFS":
                    self.add("indirection", f"the expansion `${{{part.value}}}` can change how the command splits or runs.")
            elif part.kind != "tilde":
                self.node(part)

    def redirect(self, r: Any) -> None:
        target = r.output
        heredoc = getattr(r, "heredoc", None)
        if heredoc is not None and _heredoc_expands(heredoc.value):
            self.add("command-substitution", "the here-document's body has expansions bash evaluates (commands, "
                                             "arithmetic or parameter transformations can run code).")
        if isinstance(target, int):
            return  # fd duplication such as 2>&1
        self.word(target, command_position=False)
        if target.word.startswith(("/dev/tcp/", "/dev/udp/")):
            self.add("network", f"the redirection `{r.type} {target.word}` opens a network connection.")
            return
        if r.type in _WRITE_REDIRECTS and target.word not in _SAFE_TARGETS and not (
                r.type == ">&" and (target.word.isdigit() or target.word == "-")):
            self.add("redirect-write", f"the command writes to the file `{target.word}` with `{r.type}`.")


def _unquoted_expansions(raw: str) -> tuple[bool, bool]:
    """(has an unquoted brace expansion, has an unquoted glob character) in one word's source text."""
    quote, escaped, depth = "", False, 0
    braces = globs = False
    for i, ch in enumerate(raw):
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if ch == quote else quote
        elif ch in ("'", '"'):
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif depth and (ch == "," or raw.startswith("..", i)):
            braces = True
        elif ch in "*?[":
            globs = True
    return braces, globs


_PRIVATE_NAME = re.compile(r"[a-z][a-z0-9_]*")  # lower case: not an environment variable programs read
_LOWER_ENV = frozenset({"http_proxy", "https_proxy", "ftp_proxy", "all_proxy", "no_proxy"})
_HEREDOC_SAFE_DOLLAR = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\}|[0-9#?$!@*-])")


_TIME_KEYWORD = re.compile(r"(^|[;&|\n({!])([ \t]*)(time(?:[ \t]+-p)?)(?=[ \t]+\S)")


def _heredoc_expands(body: str) -> bool:
    """Does an unquoted here-document body hold anything beyond plain ``$NAME`` / ``${NAME}``?"""
    if "`" in body:
        return True
    return "$" in _HEREDOC_SAFE_DOLLAR.sub("", body.replace("\\$", ""))


def _glob_can_start_an_option(raw: str) -> bool:
    """A glob word can expand to an option when nothing literal precedes its first pattern character
    (``*``, ``[-]*``, ``-*``, ``?-x``), or what precedes it starts with a dash."""
    quote, escaped = "", False
    prefix = []
    for ch in raw:
        if escaped:
            escaped = False
            prefix.append(ch)
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            if ch == quote:
                quote = ""
            else:
                prefix.append(ch)
        elif ch in ("'", '"'):
            quote = ch
        elif ch in "*?[":
            break
        else:
            prefix.append(ch)
    return not prefix or prefix[0] == "-"


def _expands(n: Any, source: str) -> bool:
    """Does any part of a simple command expand (variables, substitutions, globs, braces, ~)?"""
    for p in n.parts:
        raw = source[p.pos[0]:p.pos[1]]
        if "$" in raw or "`" in raw or raw.startswith("~") or any(_unquoted_expansions(raw)):
            return True
    return False


def _has_parameter(w: Any) -> bool:
    return any(p.kind == "parameter" for p in getattr(w, "parts", None) or [])


def _program(n: Any) -> str:
    for p in n.parts:
        if p.kind == "word":
            return str(p.word).rpartition("/")[2]
    return ""


def _analyse(command: str) -> tuple[list[_Finding], list[str]]:
    """(findings, the text of each simple command); no findings means proven read-only."""
    line = "line:" + command
    if len(command) > _MAX_CHARS:
        return [_Finding("unparseable", f"the command is longer than {_MAX_CHARS} characters.", line)], []
    text = command.replace("\r\n", "\n")
    if "\r" in text:
        return [_Finding("carriage-return", "the command contains a carriage return, which can hide what runs.",
                         line)], []
    hidden = hidden_characters(text)
    if hidden:
        shown = ", ".join(make_visible(ch) for ch in hidden[:3])
        return [_Finding("hidden-characters", f"the command contains invisible or control characters ({shown}).",
                         line)], []
    if all(not line.strip() or line.lstrip().startswith("#") for line in text.split("\n")):
        return [], []  # only comments: bashlex rejects an empty program
    import bashlex

    # `time CMD` (in command position) times CMD: judge CMD; blanks keep every position in place
    text = _TIME_KEYWORD.sub(lambda m: m.group(1) + m.group(2) + " " * len(m.group(3)), text)
    try:
        trees = bashlex.parse(text)
    except Exception as exc:  # bashlex raises ParsingError, NotImplementedError and others: all mean "unknown"
        log.debug("bashlex cannot parse %r: %s", command, exc)
        return [_Finding("unparseable", "the command uses syntax the bash parser cannot read, so it cannot be checked.",
                         line)], []
    walker = _Walker(text)
    walker.line_scope = walker.scope = line
    for tree in trees:
        walker.node(tree)
    return walker.findings, walker.commands


def detect_dangerous_command(command: str) -> tuple[bool, str | None, str | None]:
    """``(is_dangerous, pattern_key, description)``; the key and sentence describe the first finding."""
    findings, _ = _analyse(command)
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
    """The terminal's judge: ``None`` for a command proven read-only, else what to ask the person."""
    findings, commands = _analyse(command)
    if not findings:
        return None
    reasons = list(dict.fromkeys(f.description for f in findings))
    description = " ".join(r[:1].upper() + r[1:] for r in reasons[:3])
    from hermes_nb.tools.safety import sandbox

    if not sandbox.status().available:
        description += " (Not sandboxed: nothing bounds what it can change.)"
    return gate.Ask(tool="terminal", subject=command, key=findings[0].key, description=description,
                    scopes=frozenset(f.scope for f in findings), command=command, simple_commands=tuple(commands))


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
