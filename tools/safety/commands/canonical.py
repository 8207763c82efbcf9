"""The canonical command a person's ``approvals:`` command rule is matched against.

A rule names what runs, not how it is typed: ``cat sec''ret.txt``, ``cat se?ret.txt``, ``/usr/bin/git push``,
``git -C . push`` and ``g''it push`` are ``cat secret.txt`` and ``git push``. Each simple command becomes
its words after quote removal (``shell_words``), globs expanded against the workspace as bash would, the
program's folder dropped and git's global options skipped. What cannot be known exactly (a variable, a
glob matching nothing yet, an option not modelled, text the reader cannot finish) stays a wildcard, and a
deny or ask rule applies when **some** value of the wildcard would match it (fail closed). A command that
runs other commands (``sudo``, ``env``, ``xargs``, ``find -exec``, ``sh -c``, ``eval``) is also matched from
each of its words on; shell code given as a string, or a shell script it runs, is read as commands of its
own, and shell code nobody can read (standard input, an unreadable script) matches every rule.
"""

from __future__ import annotations

import glob
import itertools
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from hermes_nb.tools.safety.commands.programs import SHELLS, WRAPPERS
from hermes_nb.tools.safety.commands.shell_words import Word, scan
from hermes_nb.tools.safety.regular import open_regular

__all__ = ["Candidate", "candidates", "matches"]

log = logging.getLogger("hermes_nb.tools.approval")

_ANY, _ONE = "*", "?"
_RUNS_OTHERS = WRAPPERS | {"find"}  # the classifier's wrappers, and `find -exec`
_GIT_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env",
                        "--exec-path", "--attr-source", "--list-cmds"})
_GIT_FLAGS = frozenset({"-p", "-P", "--paginate", "--no-pager", "--bare", "--no-replace-objects", "--no-lazy-fetch",
                        "--no-optional-locks", "--no-advice", "--literal-pathspecs", "--glob-pathspecs",
                        "--noglob-pathspecs", "--icase-pathspecs"})
_MAX_DEPTH = 3
_MAX_MATCHES = 1000
#: Wildcard levels a glob may have to be expanded now; `cat /*/*/*/*/*/*/*/x` read the whole disk for 40 s
#: before the check answered. A deeper one stays a wildcard (a deny rule meets it whenever it could match).
_MAX_LEVELS = 3
_MAX_SCRIPT = 256 * 1024  # a longer script is not read: it matches every rule

Token = tuple[str, str]  # ("lit", c) | ("one", "") | ("any", "")


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One way a simple command can read, as tokens: literal characters and wildcards."""

    tokens: tuple[Token, ...]
    exact: bool  # no wildcard: the command is known exactly

    @property
    def text(self) -> str:
        return "".join(c if kind == "lit" else _ANY if kind == "any" else _ONE for kind, c in self.tokens)


def _pattern_tokens(pattern: str) -> list[Token]:
    """A word's pattern (``shell_words.Word.pattern``: literals escaped as ``[c]``) as tokens."""
    out: list[Token] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "[":
            end = pattern.find("]", i + 2)
            if end == i + 2:  # an escaped literal: [c]
                out.append(("lit", pattern[i + 1]))
                i += 3
                continue
            out.append(("one", ""))  # a bracket set: some one character
            i = end + 1 if end > 0 else len(pattern)
            continue
        out.append(("any", "") if c == "*" else ("one", "") if c == "?" else ("lit", c))
        i += 1
    return out


def _expand(word: Word, root: Path | None) -> list[list[Token]]:
    """The words one word becomes: itself, the files its glob matches now, or a pattern with wildcards."""
    if word.exact:
        return [[("lit", c) for c in word.value]]
    if word.globbed and root is not None and _only_glob_unknowns(word) and _glob_levels(word.pattern) <= _MAX_LEVELS:
        try:
            hits = glob.iglob(word.pattern) if os.path.isabs(word.pattern) else glob.iglob(word.pattern,
                                                                                       root_dir=root)
            found = sorted(itertools.islice(hits, _MAX_MATCHES + 1))
        except (OSError, ValueError):
            found = []
        # bash sorts the matches; none (or too many to list) leaves the pattern: wildcards, which fail closed
        if found and len(found) <= _MAX_MATCHES:
            return [[("lit", c) for c in f] for f in found]
    return [_pattern_tokens(word.pattern)]


def _glob_levels(pattern: str) -> int:
    """How many folder levels of ``pattern`` hold a wildcard: each one multiplies what expanding it reads."""
    return sum(any(kind != "lit" for kind, _ in _pattern_tokens(part)) for part in pattern.split("/"))


def _only_glob_unknowns(word: Word) -> bool:
    """The word's only unknown parts are glob characters (no variable, brace or tilde): safe to expand."""
    return "$" not in word.raw and "`" not in word.raw and "{" not in word.raw and not word.raw.startswith("~")


def _join(words: list[list[Token]]) -> tuple[Token, ...]:
    out: list[Token] = []
    for i, w in enumerate(words):
        if i:
            out.append(("lit", " "))
        out.extend(w)
    return tuple(out)


def _program(tokens: list[Token]) -> list[Token]:
    """``/usr/bin/git`` → ``git``: the folder never changes which rule names the program."""
    for i in range(len(tokens) - 1, -1, -1):
        if tokens[i] == ("lit", "/"):
            return tokens[i + 1:]
        if tokens[i][0] != "lit":
            break
    return tokens


def _skip_git_globals(words: list[Word]) -> tuple[list[Word], bool]:
    """``git -C . -c a=b --no-pager push`` → ``git push``; False when an option is not understood."""
    i = 1
    while i < len(words) and words[i].value.startswith("-"):
        w = words[i]
        if not w.exact:
            return words, False
        name = w.value.partition("=")[0]
        if w.value in _GIT_FLAGS:
            i += 1
        elif name in _GIT_VALUE:
            i += 1 if "=" in w.value or name in ("--exec-path", "--list-cmds") else 2
        elif w.value.startswith(("-C", "-c")) and len(w.value) > 2:
            i += 1
        else:
            return words, False
    return [words[0], *words[i:]], True


def _of_command(words: tuple[Word, ...], root: Path | None, depth: int) -> list[Candidate]:
    out: list[Candidate] = []
    words_list = list(words)
    program = words_list[0].value.rpartition("/")[2] if words_list[0].exact else ""
    known = True
    if program == "git":
        words_list, known = _skip_git_globals(words_list)
    expanded: list[list[Token]] = []
    for i, w in enumerate(words_list):
        parts = _expand(w, root)
        if i == 0:
            parts = [_program(p) for p in parts]
        expanded.extend(parts)
    if not known:
        expanded = expanded[:1] + [[("any", "")]]
    tokens = _join(expanded)
    out.append(Candidate(tokens=tokens, exact=all(k == "lit" for k, _ in tokens)))
    if program in _RUNS_OTHERS or not words_list[0].exact:
        for k in range(1, len(expanded)):  # the command it runs, from each word on, with words it may add
            rest = _join([*expanded[k:], [("any", "")]])
            out.append(Candidate(tokens=rest, exact=False))
        for k in range(1, len(words_list)):  # `xargs sh -c`: shell code from the input, never seen
            inner = words_list[k].value.rpartition("/")[2] if words_list[k].exact else ""
            code = _shell_code(inner, words_list[k:], root)
            if code == "":
                out.append(_WILD)
                break
            if code is not None and depth < _MAX_DEPTH:  # `env sh -c 'git push'`
                out.extend(_candidates(code, root, depth + 1))
    if depth < _MAX_DEPTH:
        code = _shell_code(program, words_list, root)
        if code is not None:
            out.extend(_candidates(code, root, depth + 1) if code else [_WILD])
    return out


_WILD = Candidate(tokens=(("any", ""),), exact=False)


def _shell_code(program: str, words: list[Word], root: Path | None = None) -> str | None:
    """The shell code a command runs (``sh -c CODE``, ``eval A B``, ``bash script.sh`` read from the file);
    "" when it is unknown (code from standard input, a file that cannot be read); None for no shell."""
    if program == "eval":
        rest = words[1:]
        return " ".join(w.value for w in rest) if all(w.exact for w in rest) else ""
    if program in ("su", "runuser"):  # only `-c CODE` is code; other operands name a user
        for i, w in enumerate(words[1:], start=1):
            if w.exact and w.value in ("-c", "--command"):
                return words[i + 1].value if i + 1 < len(words) and words[i + 1].exact else ""
        return None
    if program not in SHELLS:
        return None
    for i, w in enumerate(words[1:], start=1):
        if not w.exact:
            return ""
        if w.value.startswith("-") and "c" in w.value[1:] and not w.value.startswith("--"):
            return words[i + 1].value if i + 1 < len(words) and words[i + 1].exact else ""
        if w.value == "-s" or w.value == "-":
            return ""  # commands from standard input
        if not w.value.startswith(("-", "+")):
            return _script(w.value, root)
    return ""  # no operand: the shell reads its commands from standard input


def _script(name: str, root: Path | None) -> str:
    path = Path(name) if os.path.isabs(name) or root is None else root / name
    try:  # a pipe or a device (`bash /dev/stdin`) is code nobody can read: it matches every rule
        with open_regular(path) as fh:
            data = fh.read(_MAX_SCRIPT + 1)
    except (OSError, ValueError):  # ValueError: a NUL in the name
        return ""
    return data.decode("utf-8", errors="replace") if len(data) <= _MAX_SCRIPT else ""


def candidates(command: str, *, root: Path | None = None) -> list[Candidate]:
    """Every way the simple commands of ``command`` can read (see the module docstring); a failure inside
    is a command nobody can read, which matches every rule."""
    try:
        return _candidates(command, root, 0)
    except Exception:  # the check's own edge: a deny or ask rule must still meet what it cannot read
        log.exception("the command rules failed to read %r; every deny and ask rule applies", command)
        return [_WILD]


def _candidates(command: str, root: Path | None, depth: int) -> list[Candidate]:
    scanned = scan(command)
    out: list[Candidate] = []
    for words in scanned.commands:
        out.extend(_of_command(words, root, depth))
    if not scanned.complete:
        out.append(_WILD)
    return out


def _pattern_side(pattern: str) -> list[tuple[str, str]]:
    """An fnmatch pattern as tokens: ("any"|"one"|"lit"|"set", text)."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.append(("any", ""))
        elif c == "?":
            out.append(("one", ""))
        elif c == "[":
            j = i + 1
            if j < len(pattern) and pattern[j] == "!":
                j += 1
            if j < len(pattern) and pattern[j] == "]":
                j += 1
            j = pattern.find("]", j)
            if j < 0:
                out.append(("lit", "["))
            else:
                out.append(("set", pattern[i:j + 1]))
                i = j
        else:
            out.append(("lit", c))
        i += 1
    return out


def matches(pattern: str, candidate: Candidate) -> bool:
    """Could some value of the candidate's wildcards make it match the fnmatch ``pattern``?"""
    import fnmatch

    p = _pattern_side(pattern)
    q = candidate.tokens
    n, m = len(p), len(q)
    # reach[i][j]: p[i:] and q[j:] have a common string; computed from the ends
    nxt = [False] * (m + 1)
    nxt[m] = True
    for j in range(m - 1, -1, -1):
        nxt[j] = q[j][0] == "any" and nxt[j + 1]
    for i in range(n - 1, -1, -1):
        cur = [False] * (m + 1)
        kind, text = p[i]
        cur[m] = kind == "any" and nxt[m]
        for j in range(m - 1, -1, -1):
            qk, qc = q[j]
            if kind == "any":
                cur[j] = nxt[j] or cur[j + 1]
            elif qk == "any":
                cur[j] = cur[j + 1] or nxt[j]
            else:
                if qk == "one" or kind == "one":
                    ok = True
                elif kind == "set":
                    ok = fnmatch.fnmatchcase(qc, text)
                else:
                    ok = text == qc
                cur[j] = ok and nxt[j + 1]
        nxt = cur
    return nxt[0]
