"""``%%tool?``, ``%tools?``, ``%toolsets?``, ``%mcp?``, ``%%agent?``: a usage line naming the magic, an example."""

from __future__ import annotations

import re
from typing import Any

import pytest


@pytest.mark.parametrize(("kind", "name", "shown_as"), [
    ("cell", "tool", "%%tool"),
    ("line", "tools", "%tools"),
    ("line", "toolsets", "%toolsets"),
    ("line", "mcp", "%mcp"),
    ("cell", "agent", "%%agent"),
    ("line", "trace", "%trace"),
])
def test_help_has_the_right_usage_line_and_an_example(ip: Any, kind: str, name: str, shown_as: str) -> None:
    doc = ip.find_magic(name, kind).__doc__
    usage = next(line.strip() for line in doc.splitlines() if line.strip().startswith("%"))
    assert re.match(rf"{re.escape(shown_as)}(\s|$)", usage), usage  # %%tool, not %tool
    assert "Example" in doc
    example = doc[doc.index("Example"):]
    assert shown_as in example
    assert "ToolMagics." not in doc and "default_toolset" not in doc  # no internal names as defaults


def test_the_help_example_of_tool_runs(ip: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The example in ``%%tool?`` is a working cell."""
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: None)
    doc = ip.find_magic("tool", "cell").__doc__
    lines = doc[doc.index("Example:"):].splitlines()[1:]
    end = next((i for i, line in enumerate(lines) if line.strip() and not line[0].isspace()), len(lines))
    body = [line for line in lines[:end] if line.strip()]
    indent = len(body[0]) - len(body[0].lstrip())
    header, *source = [line[indent:] for line in body]
    assert header.startswith("%%tool ")
    ip.run_cell_magic("tool", header.removeprefix("%%tool "), "\n".join(source).replace("'''", '"""'))
    from hermes_nb.tools.registry import registry

    assert registry.dispatch("area", {"width": 3, "height": 2}) == '{"area": 6}'
