"""Tool search in the notebook's own surfaces: ``%%tool --defer`` and the picker's mark on deferred toolsets."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError

from hermes_nb.display.picker import toolset_rows
from hermes_nb.tools.config import save_config
from hermes_nb.tools.model_tools import assemble_tool_definitions
from hermes_nb.tools.registry import registry

BODY = "def lookup(word: str) -> str:\n    '''Look a word up.'''\n    return word\n"


def test_tool_defer_marks_the_cell_tool_and_tool_search_defers_it(ip: Any) -> None:
    ip.run_cell_magic("tool", "--toolset dictionary --defer", BODY)
    entry = registry.get_entry("lookup")
    assert entry is not None and entry.metadata.get("defer") is True
    save_config({"tool_search": {"enabled": "on"}})
    assembly = assemble_tool_definitions(["dictionary"])
    assert assembly.catalog is not None and "lookup" in assembly.catalog
    assert "lookup" not in {d["function"]["name"] for d in assembly.definitions}
    ip.run_cell_magic("tool", "--toolset dictionary", BODY)  # re-run without the flag: direct again
    assert assemble_tool_definitions(["dictionary"]).catalog is None


def test_tool_defer_refuses_an_interactive_tool(ip: Any) -> None:
    with pytest.raises(UsageError, match="never deferred"):
        ip.run_cell_magic("tool", "--defer --interactive", BODY)
    assert registry.get_entry("lookup") is None


def test_the_picker_marks_deferred_toolsets(ip: Any) -> None:
    ip.run_cell_magic("tool", "--toolset dictionary --defer", BODY)
    ip.run_cell_magic("tool", "--toolset plain", BODY.replace("lookup", "shout"))
    rows = {r.name: r for r in toolset_rows()}
    assert rows["dictionary"].deferred and rows["dictionary"].label.endswith("🔎")
    assert "deferred: behind tool_search" in rows["dictionary"].note
    assert not rows["plain"].deferred and "🔎" not in rows["plain"].label
    save_config({"tool_search": {"enabled": "off"}})
    assert not {r.name: r for r in toolset_rows()}["dictionary"].deferred  # off: nothing is deferred
