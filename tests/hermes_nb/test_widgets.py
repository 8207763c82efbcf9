"""The toolset picker without a browser: every click has a method, and the widgets follow the state."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from hermes_nb import _state
from hermes_nb.display.picker import SelectionSummary, ToolsetPicker, toolset_rows
from hermes_nb.selection import Selection
from hermes_nb.tools.registry import registry

SCHEMA = {"parameters": {"type": "object", "properties": {}}}


def _wait_for(cond: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)  # polling with a deadline, not a fixed wait


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
    # the default: the person's own toolsets ticked, every built-in one not
    ticked = {name for name, box in picker.checkboxes.items() if box.value}
    assert {"w_geometry", "w_colour", "w_vault"} <= ticked
    assert not ticked & {"file", "terminal", "code", "code_execution", "delegation", "memory", "session_search"}


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
    picker.select_all()
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
    _wait_for(lambda: picker.checkboxes["w_colour"].description == "w_colour (2 tools)")  # the timer refreshes
    _tool("w_new", "w_brand_new")
    picker.flush()
    assert "w_brand_new" in picker.checkboxes
    registry.deregister("w_new")
    picker.flush()
    assert "w_brand_new" not in picker.checkboxes


def test_flush_waits_for_a_refresh_already_running(picker: ToolsetPicker) -> None:
    # a slow check (Hermes's may take seconds) holds the timer's refresh; flush must not read around it
    entered, gate = threading.Event(), threading.Event()

    def slow_check() -> bool:
        entered.set()
        return gate.wait(10)

    _tool("w_slow", "w_slow_set", check_fn=slow_check)
    assert entered.wait(10)  # the timer's refresh is inside toolset_rows now
    release = threading.Timer(0.1, gate.set)
    release.start()
    try:
        picker.flush()
        assert "w_slow_set" in picker.checkboxes
    finally:
        gate.set()
        release.cancel()
        registry.deregister("w_slow")
        picker.flush()


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
    picker.flush()
    assert "w_colour" not in picker.checkboxes
    assert picker.model_tool_count() == 2
    assert "the model sees 2 tools" in picker.count_label.value


def test_a_burst_of_registrations_is_one_refresh(picker: ToolsetPicker) -> None:
    # what an MCP server with 30 tools does, from its background thread
    before = picker.refreshes

    def burst() -> None:
        for i in range(30):
            _tool(f"w_mcp_{i}", "w_mcp")

    t = threading.Thread(target=burst)
    t.start()
    t.join()
    picker.flush()
    assert picker.refreshes == before + 1
    assert picker.checkboxes["w_mcp"].description == "w_mcp (30 tools)"
    for i in range(30):
        registry.deregister(f"w_mcp_{i}")
    _wait_for(lambda: "w_mcp" not in picker.checkboxes)
    assert picker.refreshes == before + 2


def test_a_picker_nobody_holds_stops_listening() -> None:
    listeners = len(registry._listeners)
    sel = Selection()
    p = ToolsetPicker(selection=sel)
    box = p.checkboxes["file"]
    assert len(registry._listeners) == listeners + 1
    del p
    gc.collect()
    assert len(registry._listeners) == listeners
    assert box.comm is None  # its widgets were closed too
    sel.select(["file"])  # no observer left that could fail


def test_a_new_toolsets_picker_closes_the_earlier_one() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    class Handle:
        def __init__(self) -> None:
            self.shown: list[SelectionSummary] = []

        def update(self, obj: SelectionSummary) -> None:
            self.shown.append(obj)

    import hermes_nb.display.picker as widgets

    ip = InteractiveShell.instance()
    listeners = len(registry._listeners)
    handles: list[Handle] = []

    def fake_display(obj: object, display_id: bool = False) -> Handle | None:
        if hasattr(obj, "_repr_mimebundle_"):
            obj._repr_mimebundle_()
        if display_id:
            handles.append(Handle())
            return handles[-1]
        return None

    import IPython.display

    old_display = IPython.display.display
    IPython.display.display = fake_display  # type: ignore[assignment]
    old_can = widgets._can_show_widgets
    widgets._can_show_widgets = lambda shell: True
    try:
        widgets.show_picker(ip)
        first = _state.live[-1]
        widgets.show_picker(ip)
        widgets.show_picker(ip)
    finally:
        IPython.display.display = old_display
        widgets._can_show_widgets = old_can
    pickers = [p for p in _state.live if isinstance(p, ToolsetPicker)]
    try:
        assert len(pickers) == 1 and pickers[0] is not first
        assert len(registry._listeners) == listeners + 1  # only the newest listens
        assert "replaced by a later %toolsets" in handles[0].shown[-1].text()
    finally:
        pickers[0].close()


def test_status_record_reads_well_without_widgets(picker: ToolsetPicker) -> None:
    picker.selection.select(["w_geometry"])
    record = SelectionSummary.of(picker.selection, picker.rows)
    bundle = record._repr_mimebundle_()
    assert bundle["text/plain"] == "toolsets: w_geometry — the model sees 2 tools"  # one line
    assert "<details" in bundle["text/html"] and "w_geometry (2 tools)" in bundle["text/html"]
    assert "missing environment variable W_VAULT_KEY_UNSET" in bundle["text/html"]
    assert "the model sees" not in picker.text()  # the picker's own text is the table: no second line


def test_a_refresh_that_adds_a_toolset_reads_the_toolsets_once(picker: ToolsetPicker,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A new toolset rebuilds the checkboxes from the rows the refresh just read: every availability check
    runs once per refresh, not again for the rebuild (a slow check would cost the picker twice)."""
    from hermes_nb.display import picker as module

    reads = []
    real = module.toolset_rows
    monkeypatch.setattr(module, "toolset_rows", lambda reg=None: reads.append(1) or real(reg))
    _tool("w_brush", "w_easel")
    picker.flush()
    assert "w_easel" in picker.checkboxes and len(reads) == 1
