"""Is a shell line proven read-only? Two readers look, and it is only when neither finds a reason to ask.

1. Characters: too long, a bare carriage return, or anything ``visible`` would have to escape → ask.
2. ``shell_words`` (written from bash's manual) reports every expansion anywhere in any word that is more
   than reading a variable, whatever quoting or position it sits in, and gives each simple command's words
   after quote removal; each is judged by ``command_rules`` on those words.
3. ``walker`` walks bashlex's tree (structure: subshells, functions, pipes into shells, redirections).

Where the two readers disagree about what runs, the one that asks wins: a parser that misreads a quote
cannot hide a command from the other.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from hermes_nb.tools.safety.approvals.visible import hidden_characters, make_visible
from hermes_nb.tools.safety.commands import walker
from hermes_nb.tools.safety.commands.bound_files import cd_targets, line_folders
from hermes_nb.tools.safety.commands.command_rules import check_program, flag_sensitive
from hermes_nb.tools.safety.commands.git_rules import repository_programs
from hermes_nb.tools.safety.commands.shell_words import Expansion, Word, scan
from hermes_nb.tools.safety.commands.walker import TRUSTED_DIRS, Finding

__all__ = ["MAX_CHARS", "Analysis", "analyse"]

log = logging.getLogger("hermes_nb.tools.approval")

MAX_CHARS = 20_000
#: Commands that change what the commands after them in the line mean (where they run, what they see).
_CONTEXT = frozenset({"cd", "pushd", "popd", "export", "declare", "typeset", "local", "readonly", "set", "shopt",
                      "alias", "hash", "enable", "umask", "ulimit", "source", ".", "eval", "trap", "unset"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Analysis:
    findings: tuple[Finding, ...]  # in source order; none means proven read-only
    commands: tuple[str, ...]  # the text of each simple command (bashlex's reading)
    words: tuple[tuple[Word, ...], ...] = ()  # each simple command's words (shell_words' reading)

_EXPANSION = {
    "command-substitution": ("command-substitution", "the command runs another command inside `$(...)` or backticks."),
    "process-substitution": ("process-substitution", "the command runs another command inside `<(...)` or `>(...)`."),
    "arithmetic": ("arithmetic", "the arithmetic expansion `{t}` can run commands (array subscripts in it are "
                                 "evaluated)."),
    "parameter": ("indirection", "the expansion `{t}` can assign, run or hide words (only a bare `$NAME` is "
                                 "read-only)."),
    "tilde": ("tilde", "the tilde word `{t}` expands to more than the home folder."),
    "locale": ("indirection", "`{t}` translates its text through a message catalogue."),
    "ansi-c": ("ansi-c-quoting", "`{t}` spells characters by escapes, so the text that runs is not the text shown."),
}


def _expansion(e: Expansion, scope: str) -> Finding:
    key, sentence = _EXPANSION.get(e.kind, ("indirection", "the expansion `{t}` cannot be checked."))
    return Finding(key, sentence.format(t=e.text), scope)


def _judge(words: tuple[Word, ...], line: str) -> Finding | None:
    """One simple command as ``shell_words`` read it."""
    program = words[0]
    exact = all(w.exact for w in words)
    scope = "cmd:" + " ".join(w.raw for w in words) if exact else line
    if not program.exact:
        return Finding("indirection", f"the shell builds the program name from `{program.raw}`, so which program "
                                      "runs is not known.", scope)
    folder, _, base = program.value.rpartition("/")
    if not base:
        return Finding("unknown-program", f"`{program.value}` is not a program this check knows.", scope)
    verdict = check_program(base, [w.value for w in words[1:]])
    if verdict is not None:
        return Finding(verdict[0], verdict[1] or f"`{base}` is not a known read-only program.", scope)
    if flag_sensitive(base) or base == "printf":
        for w in words[1:] if base != "printf" else words[1:2]:
            if w.exact:
                continue
            braces, globs = walker.unquoted_expansions(w.raw)
            if "$" in w.raw or "`" in w.raw or braces or (globs and walker.glob_can_start_an_option(w.raw)):
                return Finding("indirection", f"the word `{w.raw}` could become an option of `{base}` that writes "
                                              "or runs something.", scope)
    if folder and folder not in TRUSTED_DIRS:
        return Finding("unknown-program", f"`{program.value}` runs a program from outside the system folders.", scope)
    return None


def _git_after_cd(commands: tuple[tuple[Word, ...], ...], line: str) -> list[Finding]:
    """``cd there && git status``: the repository git reads is the one ``there`` is in; every folder the line
    may be in (``bound_files.line_folders``) is checked, and git's ``-C`` from each of them."""
    cds = cd_targets(commands)
    gits = [w for w in commands if w[0].value.rpartition("/")[2] == "git"]
    if not cds or not gits:
        return []
    if any(f.startswith(("~", "-")) or "$" in f or "`" in f for f in cds):
        return [Finding("runs-program", "git runs in a folder this check cannot see, whose repository config "
                                        "could name programs.", line)]
    places = line_folders(cds)
    dash_c = [w[i + 1].value for w in gits for i in range(1, len(w) - 1) if w[i].value == "-C"]
    folders = places + [os.path.join(p, c) for p in places for c in dash_c]
    configured = repository_programs(folders)
    if configured:
        return [Finding("runs-program", f"the git config of a repository the command enters names programs "
                                        f"git runs by itself ({configured}).", line)]
    return []


def analyse(command: str) -> Analysis:
    """What both readers find in ``command``; a reader or a rule that fails on it is a reason to ask."""
    try:
        return _analyse(command)
    except Exception:  # the check's own edge: a construct it cannot represent asks, never passes or crashes
        log.exception("the command check failed on %r; asking", command)
        return _only(Finding("unparseable", "the command uses a construct this check failed to read, so it "
                                            "cannot be checked.", "line:" + command))


def _analyse(command: str) -> Analysis:
    line = "line:" + command
    if len(command) > MAX_CHARS:
        return _only(Finding("unparseable", f"the command is longer than {MAX_CHARS} characters.", line))
    text = command.replace("\r\n", "\n")
    if "\r" in text:
        return _only(Finding("carriage-return", "the command contains a carriage return, which can hide what runs.",
                             line))
    hidden = hidden_characters(text)
    if hidden:
        shown = ", ".join(make_visible(ch) for ch in hidden[:3])
        return _only(Finding("hidden-characters", f"the command contains invisible or control characters ({shown}).",
                             line))
    if all(not part.strip() or part.lstrip().startswith("#") for part in text.split("\n")):
        return Analysis(findings=(), commands=())  # only comments: bashlex rejects an empty program
    findings: list[Finding] = []
    commands: list[str] = []
    walked = walker.walk(text, line)
    if walked is None:
        findings.append(Finding("unparseable", "the command uses syntax the bash parser cannot read, so it cannot "
                                               "be checked.", line))
    else:
        findings.extend(walked[0])
        commands = walked[1]
    scanned = scan(text)
    findings.extend(_expansion(e, line) for e in scanned.expansions)
    if not scanned.complete:
        findings.append(Finding("unparseable", "the command ends inside a quote, a substitution or a here-document, "
                                               "so it cannot be checked.", line))
    for words in scanned.commands:
        finding = _judge(words, line)
        if finding is not None:
            findings.append(finding)
    findings.extend(_git_after_cd(scanned.commands, line))
    if scanned.assignments or any(w[0].value in _CONTEXT for w in scanned.commands):
        # `cd /etc && rm a` is not the `rm a` approved before: a session yes covers this whole line only
        findings = [Finding(f.key, f.description, line) for f in findings]
    return Analysis(findings=tuple(dict.fromkeys(findings)), commands=tuple(commands), words=scanned.commands)


def _only(finding: Finding) -> Analysis:
    return Analysis(findings=(finding,), commands=())
