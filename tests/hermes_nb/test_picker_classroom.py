"""The picker as a class meets it: composites apart, their members shown as covered, one summary line."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell

from hermes_nb.display.picker import SelectionSummary, ToolsetPicker, covered_by, toolset_rows
from hermes_nb.selection import Selection

CORE_MEMBERS = ("file", "terminal", "code", "clarify")


@pytest.fixture
def picker() -> Iterator[ToolsetPicker]:
    p = ToolsetPicker(selection=Selection())
    yield p
    p.close()


def test_members_of_a_ticked_composite_show_as_covered(picker: ToolsetPicker) -> None:
    picker.selection.select(["hermes-core"])
    for name in CORE_MEMBERS:
        box = picker.checkboxes[name]
        assert box.value and box.disabled, name  # the model sees their tools: not shown as off
        assert "covered by hermes-core" in picker.notes[name].value
    assert picker.checked() == ["hermes-core"]  # the selection itself is unchanged
    table = SelectionSummary.of(picker.selection, picker.rows).table().text()
    assert re.search(r"\[~\]\s+file \(4 tools\)\s+covered by hermes-core", table)
    picker.selection.select(["file"])
    assert not picker.checkboxes["terminal"].value and not picker.checkboxes["terminal"].disabled
    assert picker.checkboxes["readonly"].value  # its tools are a subset of file's
    assert "covered by file" in picker.notes["readonly"].value


def test_covered_by_is_empty_in_all_mode() -> None:
    assert covered_by(toolset_rows(), None) == {}


def test_composites_are_kept_apart_from_plain_toolsets(picker: ToolsetPicker) -> None:
    rows = toolset_rows()
    kinds = [bool(r.includes) for r in rows]
    assert kinds == sorted(kinds) and kinds[-1]  # plain first, composites last
    labels = [getattr(c, "value", "") for c in picker.box.children]
    heading = next(i for i, v in enumerate(labels) if isinstance(v, str) and "composites" in v)
    names = [c.children[0].description.split()[0] for c in picker.box.children[heading + 1:-1]]
    assert names and all(n in {r.name for r in rows if r.includes} for n in names)


def test_no_second_summary_line_while_the_picker_is_live(picker: ToolsetPicker) -> None:
    live = SelectionSummary.of(picker.selection, picker.rows, live=True)._repr_mimebundle_()
    # hidden beside a drawn widget (the bold line in the widget says it); kept for static HTML
    assert ".jp-OutputArea:has(.widget-vbox) .hermes-nb-toolsets-live{display:none}" in live["text/html"]
    assert "<div class='hermes-nb-toolsets-live'>" in live["text/html"] and "the model sees" in live["text/html"]
    assert "the model sees" in live["text/plain"]
    closed = SelectionSummary.of(picker.selection, picker.rows, note="picker closed")._repr_mimebundle_()
    assert "the model sees" in closed["text/html"]


def test_after_load_the_picker_lists_the_built_in_toolsets(capsys: pytest.CaptureFixture[str]) -> None:
    """The load line counts nothing (discovery waits for first use); the picker's first look discovers."""
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "hermes_nb")
    try:
        line = capsys.readouterr().out
        assert "ready; tools are read on first use" in line
        assert {"file", "terminal"} <= {r.name for r in toolset_rows()}
    finally:
        ip.run_line_magic("unload_ext", "hermes_nb")
