"""``{var}`` and ``{In[3]}`` in a ``%%agent`` prompt, filled from the notebook's namespace (as jupyter-ai's
``%%ai`` does); ``--no-format`` sends the braces as they are.

Only a field whose first name is defined in the namespace is filled; anything else (``{undefined}``, a
JSON object, unbalanced braces) is sent as written, and ``fill`` names the variables it could not fill
so the magic can say so in one line. ``{{`` and ``}}`` are a literal brace, as in ``str.format``.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

__all__ = ["fill"]

_ROOT = re.compile(r"[A-Za-z_]\w*")


def fill(template: str, namespace: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """``template`` with its ``{fields}`` filled from ``namespace``; and the fields left as written."""
    formatter = string.Formatter()
    try:
        parts = list(formatter.parse(template))
    except ValueError:  # unbalanced or nested braces: not a template
        return template, ()
    if all(field is None for _, field, _, _ in parts):
        return template, ()  # no field at all: keep even ``{{`` as the person wrote it
    out: list[str] = []
    left: list[str] = []
    for literal, field, spec, conversion in parts:
        out.append(literal)
        if field is None:
            continue
        raw = "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        root = _ROOT.match(field)
        if root is None or root.end() not in (len(field), field.find("["), field.find(".")):
            out.append(raw)  # not a name (JSON, prose in braces): the text as written, nothing to say
            continue
        if root.group() not in namespace:
            left.append(field)
            out.append(raw)
            continue
        try:
            value, _ = formatter.get_field(field, (), namespace)
            out.append(formatter.format_field(formatter.convert_field(value, conversion), spec or ""))
        except Exception:  # boundary: the person's object (a bad index, a raising __format__)
            left.append(field)
            out.append(raw)
    return "".join(out), tuple(left)
