"""The toolset picker without a browser: every click has a method, and the widgets follow the state."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from hermes_nb import _state
from hermes_nb.toolsets import Selection
from hermes_nb.widgets import SelectionSummary, ToolsetPicker, toolset_rows
from tools.registry import registry

SCHEMA = {"parameters": {"type": "object", "properties": {}}}


def _tool(name: str, toolset: str, **kw: object) -> None:
    registry.register(name, toolset, SCHEMA, lambda args, **_: "ok", source="notebook", **kw)  # type: ignore[arg-type]


@pytest.fixture
def picker() -> Iterator[ToolsetPicker]:
    _tool("w_area", "w_geometry")
    _tool("w_perimeter", "w_geometry")
    _tool("w_paint", "w_colour")
    _tool("w_locked", "w_vault", requires_env=["W_VAULT_KEY_UNSET"])
    p = ToolsetPicker(selection=Selection())
    yield p
    p.close()


def test_one_checkbox_per_toolset_with_counts(picker: ToolsetPicker) -> None:
    assert picker.checkboxes["w_geometry"].description == "w_geometry (2 tools)"
    assert picker.checkboxes["w_colour"].description == "w_colour (1 tool)"
    assert all(box.value for box in picker.checkboxes.values())  # mode "all": everything ticked


def test_unavailable_toolset_is_disabled_with_reason(picker: ToolsetPicker) -> None:
    assert picker.checkboxes["w_vault"].disabled
    assert "missing environment variable W_VAULT_KEY_UNSET" in picker.notes["w_vault"].value
    assert "W_VAULT_KEY_UNSET" in next(r for r in toolset_rows() if r.name == "w_vault").reason
    assert not picker.checkboxes["w_geometry"].disabled


def test_composite_toolset_says_what_it_includes(picker: ToolsetPicker) -> None:
    assert "includes file, terminal, code, clarify" in picker.notes["hermes-core"].value


def test_toggle_edits_the_selection_and_the_count(picker: ToolsetPicker) -> None:
    picker.select_none()
    assert picker.selection.enabled_toolsets() == [] and picker.model_tool_count() == 0
    assert not any(box.value for box in picker.checkboxes.values())
    picker.toggle("w_geometry", True)
    assert picker.selection.enabled_toolsets() == ["w_geometry"]
    assert picker.checkboxes["w_geometry"].value and picker.model_tool_count() == 2
    assert "the model sees 2 tools" in picker.count_label.value
    picker.toggle("w_colour", True)
    picker.toggle("w_geometry", False)
    assert picker.selection.enabled_toolsets() == ["w_colour"]
    picker.select_all()
    assert picker.selection.enabled_toolsets() is None


def test_unticking_from_all_keeps_the_others(picker: ToolsetPicker) -> None:
    picker.toggle("w_colour", False)
    enabled = picker.selection.enabled_toolsets()
    assert enabled is not None and "w_colour" not in enabled and "w_geometry" in enabled


def test_clicking_a_checkbox_is_toggle(picker: ToolsetPicker) -> None:
    picker.select_none()
    picker.checkboxes["w_colour"].value = True  # what the browser does
    assert picker.selection.enabled_toolsets() == ["w_colour"]
    picker.all_button.click()
    assert picker.selection.enabled_toolsets() is None


def test_selection_set_in_code_updates_widgets(picker: ToolsetPicker) -> None:
    picker.selection.select(["w_colour"])
    assert picker.checkboxes["w_colour"].value and not picker.checkboxes["w_geometry"].value


def test_registry_changes_refresh_even_from_a_thread(picker: ToolsetPicker) -> None:
    t = threading.Thread(target=_tool, args=("w_brush", "w_colour"))
    t.start()
    t.join()
    assert picker.checkboxes["w_colour"].description == "w_colour (2 tools)"
    _tool("w_new", "w_brand_new")
    assert "w_brand_new" in picker.checkboxes
    registry.deregister("w_new")
    assert "w_brand_new" not in picker.checkboxes


def test_close_removes_listeners(picker: ToolsetPicker) -> None:
    listeners = len(registry._listeners)
    picker.close()
    assert len(registry._listeners) == listeners - 1
    _tool("w_after_close", "w_other")
    assert "w_other" not in picker.checkboxes
    picker.selection.select(["w_colour"])  # no observer left: nothing raises, widgets untouched


def test_status_handle_follows_selection(picker: ToolsetPicker) -> None:
    updates: list[SelectionSummary] = []

    class Handle:
        def update(self, obj: SelectionSummary) -> None:
            updates.append(obj)

    picker.attach_status(Handle())
    picker.selection.select(["w_geometry"])
    assert updates and updates[-1].text() == "toolsets: w_geometry — the model sees 2 tools"


def test_mimebundle_has_text_fallback(picker: ToolsetPicker) -> None:
    bundle = picker._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "[x]  w_geometry (2 tools)" in bundle["text/plain"]


def test_unload_closes_live_pickers() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "hermes_nb")
    listeners = len(registry._listeners)
    p = ToolsetPicker(selection=Selection())
    _state.live.append(p)
    assert len(registry._listeners) == listeners + 1
    ip.run_line_magic("unload_ext", "hermes_nb")
    assert len(registry._listeners) == listeners and not _state.live


def test_selected_toolset_that_vanishes_does_not_break_the_picker(picker: ToolsetPicker) -> None:
    picker.selection.select(["w_colour", "w_geometry"])
    registry.deregister("w_paint")  # w_colour is now empty and gone from the registry
    assert "w_colour" not in picker.checkboxes
    assert picker.model_tool_count() == 2
    assert "the model sees 2 tools" in picker.count_label.value
