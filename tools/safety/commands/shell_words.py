"""Bash's words as bash itself reads them: quoting, every expansion a word holds, and the simple commands.

A second reader beside ``bashlex`` (which the classifier walks): written from bash's manual (QUOTING,
EXPANSION, REDIRECTION), it never builds a tree, it only answers what the checks need and fails closed:

- every expansion anywhere that could run something or hide a word (command and process substitution,
  arithmetic, ``${...}`` beyond a bare name, a tilde word with more after ``~``, ANSI-C and locale quoting),
  whatever quoting or node it sits in: tilde words, assignments, redirection targets, here-document bodies;
- each simple command's words after quote removal, with what bash would still change in them (a parameter,
  a glob, a brace), for the person's rules and the per-program checks.

``complete`` is False when the text ends inside a quote or a substitution: nothing in it is proven then.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hermes_nb.tools.safety.commands.quoting import META as _META
from hermes_nb.tools.safety.commands.quoting import Incomplete as _Incomplete
from hermes_nb.tools.safety.commands.quoting import braces as _braces
from hermes_nb.tools.safety.commands.quoting import closes as _closes
from hermes_nb.tools.safety.commands.quoting import decode_ansi_c
from hermes_nb.tools.safety.commands.quoting import escape as _escape
from hermes_nb.tools.safety.commands.quoting import is_assignment as _is_assignment

__all__ = ["Expansion", "Scanned", "Word", "scan"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL = frozenset("0123456789?#@*$!-")
_RESERVED = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "time",
                       "[[", "]]", "function", "coproc", "select", "case", "esac", "for", "in"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Expansion:
    """An expansion that is more than reading one variable: it may run code or make words nobody saw."""

    kind: str  # command-substitution, process-substitution, arithmetic, parameter, tilde, ansi-c, locale
    text: str  # what it looks like in the source (cut to 60 characters)


@dataclass(frozen=True, slots=True, kw_only=True)
class Word:
    """One word of a simple command."""

    raw: str  # as written
    value: str  # after quote removal (an unknown part is kept as written, e.g. ``$HOME``)
    pattern: str  # what it can become, as an fnmatch pattern: literal text escaped, unknown parts ``*``
    exact: bool  # ``value`` is exactly what the program receives (nothing left to expand)
    globbed: bool  # holds an unquoted ``*``, ``?`` or ``[``: bash replaces it with matching file names


@dataclass(frozen=True, slots=True, kw_only=True)
class Scanned:
    commands: tuple[tuple[Word, ...], ...]  # simple commands (assignments, redirections and keywords left out)
    assignments: int  # how many assignment words were seen
    expansions: tuple[Expansion, ...]
    complete: bool




class _Reader:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.commands: list[tuple[Word, ...]] = []
        self.expansions: list[Expansion] = []
        self.assignments = 0
        self.heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, body expands, leading tabs stripped)
        self.unsure = False  # read on, but bash may see it otherwise: the result is not complete

    # -- the top: commands ---------------------------------------------------------------------

    def run(self, stop: str = "") -> None:
        """Read commands until the end, or an unbalanced ``stop`` (``)`` of a substitution)."""
        words: list[Word] = []
        skipping = False  # `for NAME in WORDS`: not a command
        s = self.s
        while True:
            if self.i >= len(s):
                if stop:
                    raise _Incomplete
                break
            ch = s[self.i]
            if ch in " \t":
                self.i += 1
            elif s.startswith("\\\n", self.i):
                self.i += 2
            elif ch == "\n":
                self.i += 1
                self._end(words)
                words, skipping = [], False
                self._bodies()
            elif ch == "#" and (self.i == 0 or s[self.i - 1] in _META):
                while self.i < len(s) and s[self.i] != "\n":
                    self.i += 1
            elif ch == ")" and stop == ")":
                self.i += 1
                self._end(words)
                return
            elif ch in ";&|()":
                if s.startswith(("&>", "&>>"), self.i):
                    self.i += 1
                    self._redirect(">")
                    continue
                self.i += 1
                self._end(words)
                words, skipping = [], False
            elif ch in "<>":
                if s.startswith(("<(", ">("), self.i):
                    start = self.i
                    self.i += 2
                    self._nested(")")
                    self.expansions.append(Expansion(kind="process-substitution", text=s[start:self.i][:60]))
                    words.append(Word(raw=s[start:self.i], value=s[start:self.i], pattern="*", exact=False,
                                      globbed=False))
                    continue
                self._redirect(ch)
            else:
                start = self.i
                word = self._word()
                if skipping:
                    continue
                if self.i < len(s) and s[self.i] in "<>" and word.raw.isdigit():
                    continue  # a file descriptor number: `2>err`
                if not words and word.exact and word.value in _RESERVED:
                    if word.value in ("for", "select"):
                        skipping = True  # until the end of the clause
                    elif word.value == "case":
                        raise _Incomplete  # patterns with `)`: leave it to the parser, which asks
                    continue
                if not words and _is_assignment(s[start:self.i]):
                    self.assignments += 1
                    continue
                words.append(word)
        self._end(words)
        if self.heredocs:
            raise _Incomplete  # a here-document without its body

    def _end(self, words: list[Word]) -> None:
        if words:
            self.commands.append(tuple(words))

    def _nested(self, stop: str) -> None:
        """A substitution's commands, read as commands of their own (they run too)."""
        self.run(stop)

    def _redirect(self, ch: str) -> None:
        s = self.s
        if s.startswith("<<<", self.i):
            self.i += 3
        elif s.startswith("<<", self.i):
            strip = s.startswith("<<-", self.i)
            self.i += 3 if strip else 2
            self._blanks()
            start = self.i
            word = self._word()
            raw = s[start:self.i]
            if not raw:
                raise _Incomplete
            self.heredocs.append((word.value, not any(c in raw for c in "'\"\\"), strip))
            return
        else:
            self.i += 1
            while self.i < len(s) and s[self.i] in "<>&|":
                self.i += 1
        self._blanks()
        if self.i >= len(s) or s[self.i] in _META:
            raise _Incomplete
        self._word()  # the target: its expansions count, it is not an argument

    def _blanks(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def _bodies(self) -> None:
        """The here-documents started on the line just ended, one after another."""
        pending, self.heredocs = self.heredocs, []
        for delimiter, expands, strip in pending:
            s = self.s
            while True:
                if self.i >= len(s):
                    raise _Incomplete
                end = s.find("\n", self.i)
                line = s[self.i:] if end < 0 else s[self.i:end]
                if (line.lstrip("\t") if strip else line) == delimiter:  # `<<-` strips tabs, `<<` does not
                    self.i = len(s) if end < 0 else end + 1
                    break
                if expands:
                    self._body_line(line)
                self.i = len(s) if end < 0 else end + 1

    def _body_line(self, line: str) -> None:
        inner = _Reader(line)
        try:
            inner._dq(body=True)
        except _Incomplete:
            self.expansions.append(Expansion(kind="command-substitution", text=line[:60]))
            self.unsure = True
        self.expansions.extend(inner.expansions)
        self.commands.extend(inner.commands)
        self.unsure = self.unsure or inner.unsure

    # -- words ---------------------------------------------------------------------------------

    def _word(self) -> Word:
        s = self.s
        start = self.i
        value: list[str] = []
        pattern: list[str] = []
        exact, globbed = True, False
        braced = False
        if s.startswith("~", self.i):
            end = self.i + 1
            while end < len(s) and s[end] not in _META and s[end] != "/":
                end += 1
            if end > self.i + 1:  # `~user`, `~+`, `~-`, `~$(...)`: more than the home folder
                self.expansions.append(Expansion(kind="tilde", text=s[self.i:end][:60]))
            self.i += 1  # what follows is read as usual (a substitution in it runs too)
            value.append("~")
            pattern.append("*")
            exact = False
        while self.i < len(s) and s[self.i] not in _META:
            ch = s[self.i]
            if ch == "\\":
                if self.i + 1 >= len(s):
                    self.i += 1
                    continue
                nxt = s[self.i + 1]
                self.i += 2
                if nxt != "\n":
                    value.append(nxt)
                    pattern.append(_escape(nxt))
            elif ch == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise _Incomplete
                text = s[self.i + 1:end]
                value.append(text)
                pattern.append(_escape(text))
                self.i = end + 1
            elif ch == '"':
                self.i += 1
                text, known = self._dq()
                value.append(text)
                pattern.append(_escape(text) if known else "*")
                exact = exact and known
            elif ch == "$":
                text, known = self._dollar(quoted=False)
                value.append(text)
                pattern.append(_escape(text) if known else "*")
                exact = exact and known
            elif ch == "`":
                value.append(self._backtick())
                pattern.append("*")
                exact = False
            else:
                self.i += 1
                if ch in "*?" or (ch == "[" and _closes(s, self.i)):  # `[` alone matches itself
                    globbed = True
                    exact = False
                    pattern.append(ch)
                elif ch in "{}" and _braces(s, start):
                    exact, braced = False, True
                    pattern.append("*")
                else:
                    pattern.append(_escape(ch))
                value.append(ch)
        if braced:  # `{a,b}x` becomes several words: any text, for the rules
            pattern = ["*"]
        return Word(raw=s[start:self.i], value="".join(value), pattern="".join(pattern), exact=exact,
                    globbed=globbed)

    def _dq(self, *, body: bool = False) -> tuple[str, bool]:
        """Inside double quotes (or a here-document body, where ``"`` is plain): up to the closing quote."""
        s = self.s
        out: list[str] = []
        known = True
        while True:
            if self.i >= len(s):
                if body:
                    return "".join(out), known
                raise _Incomplete
            ch = s[self.i]
            if ch == '"' and not body:
                self.i += 1
                return "".join(out), known
            if ch == "\\" and self.i + 1 < len(s) and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] != "\n":
                    out.append(s[self.i + 1])
                self.i += 2
            elif ch == "$":
                text, ok = self._dollar(quoted=True)
                out.append(text)
                known = known and ok
            elif ch == "`":
                out.append(self._backtick())
                known = False
            else:
                out.append(ch)
                self.i += 1

    def _dollar(self, *, quoted: bool) -> tuple[str, bool]:
        """``$...`` at ``self.i``: (its text, known). A bare ``$NAME`` is unknown but harmless; the rest is
        recorded as an expansion."""
        s = self.s
        start = self.i
        nxt = s[self.i + 1] if self.i + 1 < len(s) else ""
        if s.startswith("$((", self.i):
            self.i += 3
            self._arith(")")
            self._note("arithmetic", start)
        elif nxt == "(":
            self.i += 2
            self._nested(")")
            self._note("command-substitution", start)
        elif nxt == "[":
            self.i += 2
            self._arith("]")
            self._note("arithmetic", start)
        elif nxt == "{":
            self.i += 2
            depth = 1
            while depth:
                if self.i >= len(s):
                    raise _Incomplete
                c = s[self.i]
                if c == "\\":
                    self.i += 2
                    continue
                if c in "'\"":  # quoting inside `${...}` differs by context: never proven
                    self.unsure = True
                if c == "'" and not quoted:
                    end = s.find("'", self.i + 1)
                    if end < 0:
                        raise _Incomplete
                    self.i = end + 1
                    continue
                if c == "$" and self.i + 1 < len(s) and s[self.i + 1] in "({[`":
                    self._dollar(quoted=True)
                    continue
                if c == "`":
                    self._backtick()
                    continue
                depth += {"{": 1, "}": -1}.get(c, 0)
                self.i += 1
            inner = s[start + 2:self.i - 1]
            if not (_NAME.fullmatch(inner) or (len(inner) == 1 and inner in _SPECIAL)) or inner == "IFS":
                self._note("parameter", start)
        elif nxt == "'" and not quoted:
            text = self._ansi_c()
            self._note("ansi-c", start)  # decoded exactly (the rules see the text); still a `$` the person
            return text, True  # did not see spelled out, so the classifier asks
        elif nxt == '"' and not quoted:
            self.i += 2
            text, _ = self._dq()
            self._note("locale", start)
            return text, False
        elif nxt and (nxt in _SPECIAL):
            self.i += 2
        elif nxt and _NAME.match(s, self.i + 1):
            self.i = _NAME.match(s, self.i + 1).end()  # type: ignore[union-attr]
        else:
            self.i += 1
            return "$", True  # a lone dollar is literal
        return s[start:self.i], False

    def _note(self, kind: str, start: int) -> None:
        self.expansions.append(Expansion(kind=kind, text=self.s[start:self.i][:60]))

    def _arith(self, close: str) -> None:
        """Skip an arithmetic body to its close (``))`` or ``]``), noting substitutions inside it."""
        s = self.s
        depth = 0
        while True:
            if self.i >= len(s):
                raise _Incomplete
            c = s[self.i]
            if c == "$" and self.i + 1 < len(s) and s[self.i + 1] in "({[":
                self._dollar(quoted=True)
                continue
            if c == "`":
                self._backtick()
                continue
            if c in "'\"\\":
                self.unsure = True  # quoting inside arithmetic: bash's reading is not modelled
            if c in "([":
                depth += 1
            elif c in ")]":
                if depth == 0 and c == close:
                    self.i += 2 if close == ")" and s.startswith("))", self.i) else 1
                    return
                depth -= 1
            self.i += 1

    def _backtick(self) -> str:
        s = self.s
        start = self.i
        self.i += 1
        inner: list[str] = []
        while True:
            if self.i >= len(s):
                raise _Incomplete
            c = s[self.i]
            if c == "\\" and self.i + 1 < len(s) and s[self.i + 1] in "$`\\":
                inner.append(s[self.i + 1])
                self.i += 2
                continue
            if c == "`":
                self.i += 1
                break
            inner.append(c)
            self.i += 1
        self.expansions.append(Expansion(kind="command-substitution", text=s[start:self.i][:60]))
        nested = _Reader("".join(inner))
        try:
            nested.run()
        except _Incomplete:
            self.unsure = True
        self.commands.extend(nested.commands)
        self.expansions.extend(nested.expansions)
        self.unsure = self.unsure or nested.unsure
        return s[start:self.i]

    def _ansi_c(self) -> str:
        text, self.i = decode_ansi_c(self.s, self.i + 2)
        return text


def scan(text: str) -> Scanned:
    """Read ``text`` as bash would, as far as the checks need."""
    reader = _Reader(text)
    complete = True
    try:
        reader.run()
    except _Incomplete:
        complete = False
    complete = complete and not reader.unsure
    return Scanned(commands=tuple(reader.commands), assignments=reader.assignments,
                   expansions=tuple(reader.expansions), complete=complete)
