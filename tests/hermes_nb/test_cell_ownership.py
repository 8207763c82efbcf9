"""A ``%%tool`` cell owns the tools it registered, and its errors carry its own number and line (issue 26,
items 2 and 7). In a plain shell here; ``test_kernel_extension`` runs the same through a real kernel."""

from __future__ import annotations

import re
from typing import Any

import pytest

from hermes_nb.tools.registry import registry

GREET = "%%tool\ndef {name}(who: str) -> str:\n    '''Greet someone.'''\n    return 'Hi ' + who\n"


def test_rerun_with_a_renamed_function_replaces_the_old_tool(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert ip.run_cell(GREET.format(name="greet"), cell_id="cell-a").success
    assert ip.run_cell(GREET.format(name="other"), cell_id="cell-b").success
    capsys.readouterr()
    assert ip.run_cell(GREET.format(name="greeting"), cell_id="cell-a").success
    names = {e.name for e in registry.entries()}
    assert "greeting" in names and "greet" not in names  # the model no longer sees the old name
    assert "other" in names  # another cell's tool stays
    assert "removed greet: this cell now defines greeting" in capsys.readouterr().out


def test_a_tool_moved_to_another_cell_is_not_removed_by_the_first(ip: Any) -> None:
    ip.run_cell(GREET.format(name="greet"), cell_id="cell-a")
    ip.run_cell(GREET.format(name="greet"), cell_id="cell-b")  # the person moved the function
    ip.run_cell(GREET.format(name="hello"), cell_id="cell-a")
    assert registry.get_entry("greet") is not None and registry.get_entry("hello") is not None


def test_a_failing_rerun_keeps_the_old_tool(ip: Any) -> None:
    ip.run_cell(GREET.format(name="greet"), cell_id="cell-a")
    ip.run_cell("%%tool\ndef greeting(:\n    pass\n", cell_id="cell-a")  # shown as Python shows it
    assert registry.get_entry("greet") is not None


def test_syntax_error_names_the_cells_own_number_and_line(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("x = 1", store_history=True)
    number = ip.execution_count  # the prompt number the next cell shows
    capsys.readouterr()
    ip.run_cell("%%tool\ndef f(:\n    pass\n", store_history=True)
    out = capsys.readouterr()
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.out + out.err)
    assert f"Cell In[{number}], line 2" in text, text  # was: Cell In[number + 1], line 1


def test_a_tools_traceback_names_the_cells_own_line(ip: Any) -> None:
    number = ip.execution_count
    ip.run_cell("%%tool\ndef boom(x: int) -> int:\n    '''Fails.'''\n    return 1 // x\n", store_history=True)
    fn = registry.get_entry("boom")
    assert fn is not None
    code = ip.user_ns["boom"].__code__
    assert code.co_firstlineno == 2  # the def is the cell's second line, as the person sees it
    assert f"ipython-input-{number}-" in code.co_filename
