"""awk, judged as awk reads it: options from a short list, and a program read token by token.

A program passes only when every token is one this check understands and none can write or run: string,
regex and number literals, fields and variables, operators other than ``|`` (``||`` is fine), ``print`` /
``printf`` without a redirection, the pure built-in functions, and control flow. ``system``, ``getline``,
``close``, ``fflush``, user functions, gawk's ``@`` forms, a backslash outside a literal (a line continuation
can hide a token from a simpler reader), a ``>`` at a print statement's own level, or anything unknown → ask.
Options other than ``-F``, ``-v``, ``-e``/``--source`` (and ``--``) → ask: gawk alone has dozens, several of
which write files, load code or run a debugger.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["check_awk"]

Verdict = tuple[str, str] | None

_BUILTINS = frozenset({"length", "substr", "index", "split", "sub", "gsub", "gensub", "match", "sprintf", "tolower",
                       "toupper", "int", "sqrt", "exp", "log", "sin", "cos", "atan2", "rand", "srand", "strftime",
                       "systime", "asort", "asorti", "and", "or", "xor", "compl", "lshift", "rshift", "strtonum"})
_KEYWORDS = frozenset({"BEGIN", "END", "BEGINFILE", "ENDFILE", "if", "else", "while", "for", "do", "in", "next",
                       "nextfile", "exit", "break", "continue", "delete", "print", "printf"})
_NEVER = frozenset({"system", "getline", "close", "fflush", "function", "func", "return"})
_VALUE_LONG = {"--field-separator": "value", "--assign": "value", "--source": "text"}
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+|\|\||&&|[<>!=]=|>>|\+\+|--|"
                    r"[-+*/%^]=|\S")
_OPERAND_END = re.compile(r"[A-Za-z0-9_.\])]")  # a `/` after these divides; elsewhere it starts a regex


def _sentence(key: str, program: str) -> str:
    return {"script-file": f"`{program}` runs a program from a file that was not shown.",
            "awk-option": f"`{program}` with an option this check does not model can write files or load code.",
            "awk-program": "the awk program can run commands or write files (only printing and computing is "
                           "read-only)."}[key]


def _texts(program: str, args: Sequence[str]) -> tuple[list[str], Verdict]:
    """Every program text (``-e X``, ``--source=X``, else the first operand), or a verdict from an option."""
    texts: list[str] = []
    first: str | None = None
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if first is not None or word == "-" or not word.startswith("-"):
            if first is None:
                first = word
            continue  # after the program: input files and var=value assignments
        if word == "--":
            if i < len(args) and not texts:
                first = args[i]
            break
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            kind = _VALUE_LONG.get(name)
            if name in ("--file", "--exec", "--include", "--load"):
                return texts, ("script-file", _sentence("script-file", program))
            if kind is None:
                return texts, ("awk-option", _sentence("awk-option", program))
            if not eq:
                if i >= len(args):
                    return texts, ("awk-option", _sentence("awk-option", program))
                value, i = args[i], i + 1
            if kind == "text":
                texts.append(value)
            continue
        letter, value = word[1], word[2:]
        if letter == "f":
            return texts, ("script-file", _sentence("script-file", program))
        if letter not in "Fve":
            return texts, ("awk-option", _sentence("awk-option", program))
        if not value:
            if i >= len(args):
                return texts, ("awk-option", _sentence("awk-option", program))
            value, i = args[i], i + 1
        if letter == "e":
            texts.append(value)
    if not texts and first is not None:
        texts.append(first)
    return texts, None


def _literal_end(text: str, i: int, close: str) -> int | None:
    """The index after a string or regex literal opened at ``i``; None when it does not end on its line."""
    j = i + 1
    in_class = False
    while j < len(text):
        c = text[j]
        if c == "\n":
            return None
        if c == "\\":
            if j + 1 >= len(text) or text[j + 1] == "\n":
                return None
            j += 2
            continue
        if close == "/" and c == "[":
            in_class = True
        elif close == "/" and c == "]":
            in_class = False
        elif c == close and not in_class:
            return j + 1
        j += 1
    return None


def reads_only(text: str) -> bool:
    """Does this awk program only read input, compute and print to standard output?"""
    i, n = 0, len(text)
    last = ""  # the last significant token
    depth = 0
    print_depth: int | None = None  # inside a print statement: the depth it started at
    while i < n:
        c = text[i]
        if c in " \t":
            i += 1
            continue
        if c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c == "\\":
            return False
        if c in "\n;":
            print_depth, last = None, ";"  # a statement ends
            i += 1
            continue
        divides = bool(_OPERAND_END.match(last)) and last not in _KEYWORDS or last in ("++", "--")
        if c == '"' or (c == "/" and not divides):
            close = _literal_end(text, i, c)
            if close is None or (c == '"' and "/inet" in text[i:close]):
                return False
            i, last = close, "x"
            continue
        m = _TOKEN.match(text, i)
        token = m.group() if m else c
        i += len(token)
        if token[0].isalpha() or token[0] == "_":
            after = text[i:].lstrip(" \t")
            if token in _NEVER or (after.startswith("(") and token not in _BUILTINS and token not in _KEYWORDS):
                return False
            if token in ("print", "printf"):
                print_depth = depth
        elif token in ("|", "@", "|&"):
            return False
        elif token in ("(", "[", "{"):
            depth += 1
        elif token in (")", "]", "}"):
            depth -= 1
            if print_depth is not None and depth < print_depth:
                print_depth = None
        elif token in (">", ">>") and print_depth is not None and depth == print_depth:
            return False  # `print ... > file` writes
        last = token
    return True


def check_awk(program: str, args: Sequence[str]) -> Verdict:
    texts, verdict = _texts(program, args)
    if verdict is not None:
        return verdict
    if not texts or not all(reads_only(t) for t in texts):
        return "awk-program", _sentence("awk-program", program)
    return None
