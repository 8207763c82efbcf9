"""The bashlex walk of a shell line: every node a parser produced, judged; what it does not know asks.

``hermes_nb.tools.safety.commands.classifier`` runs it beside ``shell_words`` (a second reader written from bash's
manual): a command is read-only only when both find nothing.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from hermes_nb.tools.safety.commands.command_rules import INTERPRETERS, SHELLS, check_program, flag_sensitive

__all__ = ["Finding", "TRUSTED_DIRS", "Walker", "glob_can_start_an_option", "unquoted_expansions", "walk"]

log = logging.getLogger("hermes_nb.tools.approval")


@dataclass(frozen=True, slots=True)
class Finding:
    """One reason to ask."""

    key: str
    description: str
    scope: str  # the exact effect "for this session" remembers: one simple command, or the whole line


_SAFE_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
TRUSTED_DIRS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"})
_SIMPLE_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9$?#@*!-]")
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c"})


class Walker:
    """Collects findings in source order; the first one names the command's pattern key."""

    def __init__(self, source: str) -> None:
        self.findings: list[Finding] = []
        self.source = source  # the parsed text, to see which characters of a word were quoted
        self.line_scope = "line:" + source
        self.scope = self.line_scope
        self.commands: list[str] = []  # the text of every simple command, for the person's command rules

    def add(self, key: str, description: str) -> None:
        self.findings.append(Finding(key, description, self.scope))

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
        elif "/" in name and (folder or "/") not in TRUSTED_DIRS:
            self.add("unknown-program", f"`{name}` runs a program from outside the system folders.")

    def expanding_arguments(self, program: str, args: list[Any]) -> tuple[str, str] | None:
        """For a program whose safety depends on its flags: an argument the shell turns into other words."""
        for w in args:
            if _has_parameter(w):
                return ("indirection", f"a variable in the arguments of `{program}` could become an option that "
                                       "writes or runs something.")
            raw = self.source[w.pos[0]:w.pos[1]]
            braces, globs = unquoted_expansions(raw)
            if braces:
                return ("indirection", f"the brace expansion `{raw}` could give `{program}` an option that writes "
                                       "or runs something.")
            if globs and glob_can_start_an_option(raw):
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
        if isinstance(target, int) or (r.type in (">&", "<&") and target == "-"):
            return  # fd duplication such as 2>&1, or closing one (>&-)
        self.word(target, command_position=False)
        if target.word.startswith(("/dev/tcp/", "/dev/udp/")):
            self.add("network", f"the redirection `{r.type} {target.word}` opens a network connection.")
            return
        if r.type in _WRITE_REDIRECTS and target.word not in _SAFE_TARGETS and not (
                r.type == ">&" and (target.word.isdigit() or target.word == "-")):
            self.add("redirect-write", f"the command writes to the file `{target.word}` with `{r.type}`.")


def unquoted_expansions(raw: str) -> tuple[bool, bool]:
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


def glob_can_start_an_option(raw: str) -> bool:
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
        if "$" in raw or "`" in raw or raw.startswith("~") or any(unquoted_expansions(raw)):
            return True
    return False


def _has_parameter(w: Any) -> bool:
    return any(p.kind == "parameter" for p in getattr(w, "parts", None) or [])


def _program(n: Any) -> str:
    for p in n.parts:
        if p.kind == "word":
            return str(p.word).rpartition("/")[2]
    return ""


_WORD_BREAKS = frozenset(" \t\n;&|()<>")


def _unclosed_parameter(text: str) -> bool:
    """Is there a ``${`` with no ``}`` after it in the same word? bashlex loops forever on one (its
    ``_paramexpand`` takes the missing ``}`` as position -1 and starts the word again): ``echo a'${'b``."""
    pending, i = False, 0
    while i < len(text):
        ch = text[i]
        if ch == "$" and text.startswith("${", i):
            pending, i = True, i + 2
            continue
        if ch == "}":
            pending = False
        elif pending and ch in _WORD_BREAKS:
            return True  # the word ended first (a quoted blank counts too: asking is the safe side)
        i += 1
    return pending


def walk(text: str, line_scope: str) -> tuple[list[Finding], list[str]] | None:
    """(findings, the text of each simple command) from bashlex's tree; None when bashlex cannot parse it."""
    import bashlex

    if _unclosed_parameter(text):
        return None
    # `time CMD` (in command position) times CMD: judge CMD; blanks keep every position in place
    text = _TIME_KEYWORD.sub(lambda m: m.group(1) + m.group(2) + " " * len(m.group(3)), text)
    try:
        trees = bashlex.parse(text)
    except Exception as exc:  # bashlex raises ParsingError, NotImplementedError and others: all mean "unknown"
        log.debug("bashlex cannot parse %r: %s", text, exc)
        return None
    walker = Walker(text)
    walker.line_scope = walker.scope = line_scope
    for tree in trees:
        walker.node(tree)
    return walker.findings, walker.commands
