"""What a person should hear about a tool before the model meets it: one line per problem.

A tool derived from a Python function can be valid and still leave the model guessing: no description,
a docstring ``Args:`` entry that names no parameter (a typo, so its text is dropped), a parameter
without a type (the model may send anything). ``lint_function`` says each of these in one line.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import re
import textwrap
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


#: What OpenAI-compatible endpoints accept as a function or property name; others reject the whole request.
NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")

#: Defaults made once at ``def`` time and changed in place by a call: the next call sees the change.
_MUTABLE_DEFAULTS = (list, dict, set, bytearray)


def _returns_nothing(fn: Callable[..., Any]) -> bool:
    """True when ``fn``'s own body has no ``return VALUE`` and no ``yield`` (so every call returns None);
    False when its source cannot be read (nothing to say then)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    todo: list[ast.AST] = list(node.body)
    while todo:
        item = todo.pop()
        if isinstance(item, ast.Return) and item.value is not None:
            return False
        if isinstance(item, (ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue  # a nested function's return is its own
        todo.extend(ast.iter_child_nodes(item))
    return True


def lint_function(fn: Callable[..., Any], *, description: str, name: str | None = None) -> tuple[str, ...]:
    """Warnings about the tool ``fn`` becomes (named ``name``), given the description the model will get."""
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
    for bad in [n for n in [name or target.__name__, *names] if not NAME_PATTERN.fullmatch(n)]:
        what = "parameter" if bad in names and bad != (name or target.__name__) else "tool"
        out.append(f"{what} name {bad!r} is not letters, digits, _ or - (at most 64): model endpoints reject "
                   f"the request; rename it" + (" (or --as NAME)" if what == "tool" else ""))
    for p in params:
        if isinstance(p.default, _MUTABLE_DEFAULTS):
            out.append(f"{p.name} defaults to {p.default!r}, one object shared by every call (what a call adds "
                       f"stays for the next); default to None and make a new one inside")
    wants = inspect.signature(target).return_annotation
    if wants is not None and wants is not type(None) and wants != "None" and _returns_nothing(target):
        out.append("no return statement: every call sends the model null; return the result")
    return tuple(out)
