"""``#`` comments on a magic's line, as in a shell: an unquoted word that starts with ``#`` ends the line.

``%tools call greet name=Ann  # try it`` calls ``greet(name="Ann")``; ``%mcp add t -- cmd --flag  # note``
gives the server ``--flag`` only. A ``#`` inside quotes (``text='#1'``, ``{"c": "#fff"}``), escaped
(``\\#``) or inside a word (``a#b``) stays. Every magic of ours takes its line through ``uncommented``, but
``%memory``, whose words are the entry's own text (``%memory add Tracked in issue #12`` keeps ``#12``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["strip_comment", "uncommented"]

F = TypeVar("F", bound=Callable[..., Any])


def strip_comment(line: str) -> str:
    """``line`` without its trailing comment (and the blanks before it); unchanged when it has none."""
    quote = ""  # the quote character we are inside, if any
    escaped = False
    word_start = True  # the next character begins a word
    for i, ch in enumerate(line):
        if escaped:  # the character after a backslash is literal (and part of a word)
            escaped, word_start = False, False
            continue
        if quote:
            if ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch == "\\":
            escaped = True
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and word_start:
            return line[:i].rstrip()
        word_start = ch.isspace()
    return line


def uncommented(method: F) -> F:
    """A magic method whose line argument has its comment removed (the cell body is left alone)."""

    @functools.wraps(method)  # keeps __doc__ and magic_arguments' parser, so %x? and parse_argstring work
    def wrapper(self: Any, line: str = "", *args: Any, **kwargs: Any) -> Any:
        return method(self, strip_comment(line), *args, **kwargs)

    return wrapper  # type: ignore[return-value]
