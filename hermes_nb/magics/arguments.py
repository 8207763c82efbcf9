"""A magic's line as its options: ``magic_arguments``' parser, and a person's typo as a one-line ``UsageError``.

``parse_argstring`` raises ``UsageError`` for an unknown option, but lets ``ValueError`` out of the word split
(an unclosed quote: ``%plugins enable "noisy``) and ``SystemExit`` out of argparse, which IPython shows as a
traceback of library frames. Every magic of ours parses its line here.
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
            return magic.parser.parse_intermixed_args(arg_split(line))  # type: ignore[no-any-return]
        return parse_argstring(magic, line)  # type: ignore[no-any-return]
    except UsageError as exc:
        raise UsageError(f"{label}: {exc}") from None
    except (SystemExit, ValueError) as exc:
        raise UsageError(f"{label}: could not parse {shlex.quote(line)}: {exc}") from None
