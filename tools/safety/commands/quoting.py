"""Bash's quoting rules that ``shell_words`` reads words with: metacharacters, escaping for patterns,
brace and bracket detection, assignment words, and ANSI-C quoting (``$'...'``) decoded as bash decodes it."""

from __future__ import annotations

import re

__all__ = ["META", "Incomplete", "braces", "closes", "decode_ansi_c", "escape", "is_assignment"]

META = frozenset(" \t\n;&|()<>")
_HEX = {"x": r"[0-9A-Fa-f]{1,2}", "u": r"[0-9A-Fa-f]{1,4}", "U": r"[0-9A-Fa-f]{1,8}"}
_ANSI = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
         "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")


class Incomplete(Exception):
    """The text ends inside a quote, a substitution or a here-document."""


def escape(text: str) -> str:
    """Literal text as an fnmatch pattern (``*``, ``?``, ``[`` bracketed)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def is_assignment(raw: str) -> bool:
    return bool(_ASSIGNMENT.match(raw))


def decode_ansi_c(s: str, i: int) -> tuple[str, int]:
    """The text of ``$'...'`` whose body starts at ``i``, and the index after its closing quote."""
    out: list[str] = []
    while True:
        if i >= len(s):
            raise Incomplete
        c = s[i]
        if c == "'":
            i += 1
            return "".join(out), i
        if c != "\\" or i + 1 >= len(s):
            out.append(c)
            i += 1
            continue
        e = s[i + 1]
        i += 2
        if e in _ANSI:
            out.append(_ANSI[e])
        elif e in "xuU":
            digits = re.match(_HEX[e], s[i:])
            if digits:
                i += digits.end()
                code = int(digits.group(), 16)
                out.append(chr(code) if code < 0x110000 else "\ufffd")
            else:
                out.append("\\" + e)
        elif e in "01234567":
            digits = re.match(r"[0-7]{0,2}", s[i:])
            assert digits is not None
            i += digits.end()
            out.append(chr(int(e + digits.group(), 8) & 0xFF))
        elif e == "c" and i < len(s):
            out.append(chr(ord(s[i]) & 0x1F))
            i += 1
        else:
            out.append("\\" + e)


def closes(s: str, i: int) -> bool:
    """Is there a ``]`` later in this word (so the ``[`` before ``i`` opens a bracket pattern)?"""
    while i < len(s) and s[i] not in META:
        if s[i] == "]":
            return True
        i += 1
    return False


def braces(s: str, start: int) -> bool:
    """Does the word starting at ``start`` hold an unquoted brace expansion (``{a,b}``, ``{1..3}``)?"""
    depth, quote, i = 0, "", start
    while i < len(s) and (quote or s[i] not in META):
        c = s[i]
        if c == "\\" and quote != "'":
            i += 2
            continue
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth = max(0, depth - 1)
        elif depth and (c == "," or s.startswith("..", i)):
            return True
        i += 1
    return False
