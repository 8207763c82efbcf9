"""Docstring parsing: a description and per-parameter descriptions from Google, NumPy, reST or Epydoc docstrings.

Our own rather than docstring-parser's, for what a tool schema needs (tests/tools/test_docstrings_vs_library.py
shows each difference): styles mixed in one docstring are all read, ``*args``/``**kwargs`` entries map to
the parameter names, NumPy's ``a, b : int`` documents both names, a wrapped summary stays one paragraph,
and continuation lines join into one line of JSON description.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ["ParsedDocstring", "parse_docstring"]

# Section names that end the free-text description (Google "Args:" / NumPy "Parameters\n----------").
# "Attributes" documents the fields of a dataclass or TypedDict used as a parameter type.
_PARAM_SECTIONS = {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments",
                   "other parameters", "attributes"}
_OTHER_SECTIONS = {"returns", "return", "yields", "yield", "raises", "raise", "examples", "example",
                   "notes", "note", "see also", "references", "warnings", "warning", "todo", "methods"}
_SECTIONS = _PARAM_SECTIONS | _OTHER_SECTIONS

_REST_FIELD = re.compile(r"^:(\w+)(?:\s+([^:]*?))?:\s*(.*)$")
_EPYDOC_FIELD = re.compile(r"^@(\w+)(?:\s+([^:]*?))?:\s*(.*)$")
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_NUMPY_ENTRY = re.compile(r"^\*{0,2}(\w+)(?:\s*,\s*\*{0,2}\w+)*\s*(?::\s*(.*))?$")


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedDocstring:
    """What a docstring says: the description (summary + body) and each parameter's description."""

    description: str = ""
    params: dict[str, str] = field(default_factory=dict)


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Parse a docstring in Google, NumPy or reST style (detected per section)."""
    if not doc or not doc.strip():
        return ParsedDocstring()
    lines = inspect.cleandoc(doc).splitlines()
    params: dict[str, str] = {}
    end = len(lines)  # where the description ends
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        header = _numpy_header(lines, i) or _google_header(line)
        if header is not None:
            end = min(end, i)
            is_numpy = _numpy_header(lines, i) is not None
            body, i = _section_body(lines, i + (2 if is_numpy else 1), numpy=is_numpy)
            if header in _PARAM_SECTIONS:
                params.update(_numpy_params(body) if is_numpy else _google_params(body))
            continue
        if (_REST_FIELD.match(stripped) or _EPYDOC_FIELD.match(stripped)) and not line.startswith((" ", "\t")):
            end = min(end, i)
            i = _rest_field(lines, i, params)
            continue
        i += 1
    description = "\n".join(lines[:end]).strip()
    return ParsedDocstring(description=description, params=params)


def _google_header(line: str) -> str | None:
    if line[:1].isspace() or not line.rstrip().endswith(":"):
        return None
    name = line.strip()[:-1].strip().lower()
    return name if name in _SECTIONS else None


def _numpy_header(lines: list[str], i: int) -> str | None:
    if i + 1 >= len(lines) or lines[i][:1].isspace():
        return None
    underline = lines[i + 1].strip()
    name = lines[i].strip().lower()
    if name in _SECTIONS and len(underline) >= 3 and set(underline) <= {"-", "="}:
        return name
    return None


def _section_body(lines: list[str], start: int, *, numpy: bool) -> tuple[list[str], int]:
    """Lines of a section up to the next section header (Google sections are indented blocks)."""
    i = start
    body: list[str] = []
    while i < len(lines):
        line = lines[i]
        if _numpy_header(lines, i) or _google_header(line):
            break
        if not numpy and line.strip() and not line[:1].isspace():
            break  # a Google section ends at the first unindented line
        body.append(line)
        i += 1
    return body, i


def _dedent(body: list[str]) -> list[str]:
    indents = [len(ln) - len(ln.lstrip()) for ln in body if ln.strip()]
    cut = min(indents, default=0)
    return [ln[cut:] for ln in body]


def _collect(entries: list[tuple[str, list[str]]]) -> dict[str, str]:
    return {name: " ".join(part.strip() for part in text if part.strip()) for name, text in entries}


def _google_params(body: list[str]) -> dict[str, str]:
    entries: list[tuple[str, list[str]]] = []
    for line in _dedent(body):
        match = _GOOGLE_ENTRY.match(line) if line[:1].strip() else None
        if match:
            entries.append((match.group(1), [match.group(3)]))
        elif entries:
            entries[-1][1].append(line)
    return _collect(entries)


def _numpy_params(body: list[str]) -> dict[str, str]:
    """``a : int`` entries; ``b, c : float`` documents both names with the one description."""
    groups: list[tuple[list[str], list[str]]] = []
    for line in _dedent(body):
        match = _NUMPY_ENTRY.match(line) if line[:1].strip() else None
        if match:
            groups.append(([n.strip().lstrip("*") for n in line.split(":", 1)[0].split(",")], []))
        elif groups and line.strip():
            groups[-1][1].append(line)
    return _collect([(name, text) for names, text in groups for name in names])


def _rest_field(lines: list[str], i: int, params: dict[str, str]) -> int:
    """Read one ``:param [type] name: text`` (reST) or ``@param name: text`` (Epydoc) field, with indented
    continuation lines."""
    match = _REST_FIELD.match(lines[i].strip()) or _EPYDOC_FIELD.match(lines[i].strip())
    assert match is not None
    kind, arg, text = match.groups()
    parts = [text]
    i += 1
    while i < len(lines) and lines[i][:1].isspace() and lines[i].strip():
        parts.append(lines[i].strip())
        i += 1
    if kind in ("param", "parameter", "arg", "argument", "key", "keyword") and arg:
        name = arg.split()[-1].lstrip("*")
        params[name] = " ".join(p for p in parts if p)
    return i
