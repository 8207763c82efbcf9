"""What a person should hear about a tool before the model meets it: one line per problem.

A tool derived from a Python function can be valid and still leave the model guessing: no description,
a docstring ``Args:`` entry that names no parameter (a typo, so its text is dropped), a parameter
without a type (the model may send anything). ``lint_function`` says each of these in one line.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from typing import Any

from hermes_nb.tools.schema.docstrings import parse_docstring

__all__ = ["did_you_mean", "lint_function", "variadic_parameters"]


def did_you_mean(word: str, choices: Any) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or ``""`` when none is close."""
    # A typo keeps about the length and the first or last letter: a cheap filter first, since an unknown
    # tool name is a path the model takes often (see bench_registry); difflib only for what passes.
    slack = max(2, len(word) // 3)
    names = [str(c) for c in choices]
    near = [n for n in names if abs(len(n) - len(word)) <= slack and n and (n[0] == word[:1] or n[-1] == word[-1:])]
    if not near:
        return ""
    close = difflib.get_close_matches(word, near, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def variadic_parameters(fn: Callable[..., Any]) -> list[str]:
    """``*args``/``**kwargs`` of ``fn``, spelled as in the signature: a model cannot fill them in."""
    params = inspect.signature(inspect.unwrap(fn)).parameters.values()
    return [("*" if p.kind is p.VAR_POSITIONAL else "**") + p.name for p in params
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def lint_function(fn: Callable[..., Any], *, description: str) -> tuple[str, ...]:
    """Warnings about the tool ``fn`` becomes, given the description the model will get."""
    target = inspect.unwrap(fn)
    params = [p for p in inspect.signature(target).parameters.values()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    names = [p.name for p in params]
    out: list[str] = []
    if not description.strip():
        out.append("no description: the model sees only the name; add a docstring or --description")
    for documented in parse_docstring(inspect.getdoc(target)).params:
        if documented not in names:
            out.append(f"docstring documents {documented!r}, which is not a parameter"
                       f"{did_you_mean(documented, names)}; its text is not sent")
    untyped = [p.name for p in params if p.annotation is p.empty]
    if untyped:
        out.append(f"no type for {', '.join(untyped)}: the model may send any JSON value; "
                   f"annotate (e.g. `x: int`)")
    return tuple(out)
