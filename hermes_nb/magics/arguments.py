"""A magic's line as its options: ``magic_arguments``' parser, and a person's typo as a one-line ``UsageError``.

``parse_argstring`` raises ``UsageError`` for an unknown option, but lets ``ValueError`` out of the word split
(an unclosed quote: ``%plugins enable "noisy``) and ``SystemExit`` out of argparse, which IPython shows as a
traceback of library frames. Every magic of ours parses its line here.

IPython splits the line as Windows does (``posix=False``): a quoted value keeps its quotes, so
``--base-url "http://..."`` would reach the magic quoted. An option's value loses one matching pair here,
for every magic; positional words keep theirs (``%sessions "a phrase"`` is an FTS5 phrase).
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import parse_argstring
from IPython.utils.process import arg_split

__all__ = ["parse_line"]


def parse_line(magic: Any, line: str, label: str, *, intermixed: bool = False) -> argparse.Namespace:
    """``line`` parsed by ``magic``'s ``magic_arguments`` parser (``intermixed``: options may follow the
    words); any failure is ``UsageError("<label>: ...")``, one line."""
    try:
        if intermixed:
            args = magic.parser.parse_intermixed_args(arg_split(line))
        else:
            args = parse_argstring(magic, line)
    except UsageError as exc:
        raise UsageError(f"{label}: {exc}") from None
    except (SystemExit, ValueError) as exc:
        raise UsageError(f"{label}: could not parse {shlex.quote(line)}: {exc}") from None
    for action in magic.parser._actions:
        if action.option_strings:  # an option, not a positional word
            value = getattr(args, action.dest, None)
            if isinstance(value, str):
                setattr(args, action.dest, _unquote(value))
            elif isinstance(value, list):
                setattr(args, action.dest, [_unquote(v) for v in value])
    return args  # type: ignore[no-any-return]


def _unquote(value: Any) -> Any:
    """One matching pair of shell quotes dropped (``'a and b'`` → ``a and b``)."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
