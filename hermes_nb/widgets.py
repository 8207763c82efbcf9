"""The toolset picker: one checkbox per toolset, editing ``hermes_nb.toolsets.selection``.

Traits hold the state and every click has a method (``toggle``, ``select_all``, ``select_none``), so
tests need no browser. The picker follows the selection (set in code) and the registry (tools added
or removed, possibly from background threads: it only sets widget traits then).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes_nb import _state
from hermes_nb.display import Table, _esc
from hermes_nb.toolsets import Selection
from hermes_nb.toolsets import selection as global_selection
from tools.registry import ToolRegistry
from tools.registry import registry as global_registry

__all__ = ["ToolsetPicker", "ToolsetRow", "SelectionSummary", "show_picker", "toolset_rows"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolsetRow:
    """What the picker shows for one toolset."""

    name: str
    description: str
    tools: tuple[str, ...]  # registered tools, includes followed
    available: int
    includes: tuple[str, ...]
    reason: str  # why it cannot be picked; "" when it can

    @property
    def label(self) -> str:
        n = len(self.tools)
        return f"{self.name} ({n} tool{'s' if n != 1 else ''})"

    @property
    def note(self) -> str:
        parts = [self.description] if self.description else []
        if self.includes:
            parts.append("includes " + ", ".join(self.includes))
        if self.reason:
            parts.append(self.reason)
        return " — ".join(parts)


def toolset_rows(reg: ToolRegistry | None = None) -> list[ToolsetRow]:
    """Every toolset (static table and registry), with counts and why it is unavailable."""
    from tools.toolsets import get_all_toolsets, resolve_toolset

    reg = reg or global_registry
    rows = []
    for name, spec in get_all_toolsets().items():
        names = tuple(n for n in resolve_toolset(name) if n in reg)
        unavailable = {n: s for n in names if not (s := reg.availability(n)).available}
        reason = ""
        if not names:
            reason = "no tools registered"
        elif len(unavailable) == len(names):
            first = next(iter(unavailable.items()))
            reason = f"unavailable: {first[0]}: {first[1].reason}" + (
                f" (+{len(names) - 1} more)" if len(names) > 1 else "")
        rows.append(ToolsetRow(name=name, description=spec["description"], tools=names,
                               available=len(names) - len(unavailable), includes=tuple(spec["includes"]),
                               reason=reason))
    return rows


def _model_tool_count(sel: Selection) -> int:
    from tools.model_tools import get_tool_definitions
    from tools.toolsets import validate_toolset

    # A selected toolset can vanish (its last tool removed); count what is left rather than fail.
    enabled = sel.enabled_toolsets()
    if enabled is not None:
        enabled = [n for n in enabled if validate_toolset(n)]
    disabled = [n for n in sel.disabled if validate_toolset(n)]
    return len(get_tool_definitions(enabled, disabled or None, quiet_mode=True))


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectionSummary:
    """A static one-line record of the selection (survives in a saved notebook without widgets)."""

    enabled: tuple[str, ...] | None
    count: int

    def text(self) -> str:
        what = "all toolsets" if self.enabled is None else (", ".join(self.enabled) or "no toolsets")
        return f"toolsets: {what} — the model sees {self.count} tool{'s' if self.count != 1 else ''}"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.text(), "text/html": f"<code>{_esc(self.text())}</code>"}

    @classmethod
    def of(cls, sel: Selection) -> SelectionSummary:
        enabled = sel.enabled_toolsets()
        return cls(enabled=None if enabled is None else tuple(enabled), count=_model_tool_count(sel))


class ToolsetPicker:
    """Checkboxes over the toolsets; the selection is the state, the widgets follow it."""

    def __init__(self, selection: Selection | None = None, reg: ToolRegistry | None = None) -> None:
        import ipywidgets as w

        from tools.model_tools import ensure_discovered

        # Discover first: discovery holds a lock while it registers, and our listener counts definitions.
        ensure_discovered()
        self._w = w
        self.selection = selection if selection is not None else global_selection
        self.registry = reg or global_registry
        self.checkboxes: dict[str, Any] = {}
        self.notes: dict[str, Any] = {}
        self.count_label = w.HTML()
        self.all_button = w.Button(description="all", layout=w.Layout(width="auto"))
        self.none_button = w.Button(description="none", layout=w.Layout(width="auto"))
        self.all_button.on_click(lambda _b: self.select_all())
        self.none_button.on_click(lambda _b: self.select_none())
        self.box = w.VBox()
        self.rows: list[ToolsetRow] = []
        self._syncing = False
        self._status: Any = None  # a DisplayHandle showing SelectionSummary
        self._undos: list[Callable[[], None]] = [
            self.registry.add_listener(self._on_registry),
            self.selection.on_change(self.refresh),
        ]
        self.refresh()

    # -- what a click does ------------------------------------------------------------------------

    def checked(self) -> list[str]:
        """Toolsets currently ticked."""
        enabled = self.selection.enabled_toolsets()
        names = [r.name for r in self.rows]
        return names if enabled is None else [n for n in names if n in enabled]

    def toggle(self, name: str, on: bool) -> None:
        """Tick or untick one toolset (what clicking its checkbox does)."""
        if name not in {r.name for r in self.rows}:
            raise KeyError(f"no toolset {name!r} in the picker")
        current = self.checked()
        new = [n for n in current if n != name] + ([name] if on and name not in current else [])
        if set(new) >= {r.name for r in self.rows}:
            self.selection.select(None)
        else:
            self.selection.select(new)

    def select_all(self) -> None:
        self.selection.select(None)

    def select_none(self) -> None:
        self.selection.select([])

    def model_tool_count(self) -> int:
        """How many tool definitions the model would receive with the current selection."""
        return _model_tool_count(self.selection)

    # -- keeping the widgets in step --------------------------------------------------------------

    def refresh(self) -> None:
        """Rebuild rows from the registry and set every widget from the selection."""
        w = self._w
        rows = toolset_rows(self.registry)
        if [r.name for r in rows] != [r.name for r in self.rows]:
            self._build([r.name for r in rows])
        self.rows = rows
        ticked = set(self.checked())
        self._syncing = True
        try:
            for row in rows:
                box = self.checkboxes[row.name]
                box.description = row.label
                box.value = row.name in ticked
                box.disabled = bool(row.reason)
                self.notes[row.name].value = f"<span style='color:#666'>{_esc(row.note)}</span>"
        finally:
            self._syncing = False
        summary = SelectionSummary.of(self.selection)
        self.count_label.value = f"<strong>{_esc(summary.text())}</strong>"
        if self._status is not None:
            self._status.update(summary)
        del w

    def _build(self, names: list[str]) -> None:
        w = self._w
        for box in self.checkboxes.values():
            box.close()
        self.checkboxes = {}
        self.notes = {}
        lines = []
        for name in names:
            box = w.Checkbox(value=False, description=name, indent=False, layout=w.Layout(width="auto"))
            box.observe(self._clicked(name), names="value")
            note = w.HTML()
            self.checkboxes[name], self.notes[name] = box, note
            lines.append(w.HBox([box, note]))
        self.box.children = [*lines, w.HBox([self.all_button, self.none_button, self.count_label])]

    def _clicked(self, name: str) -> Callable[[Any], None]:
        def on_change(change: Any) -> None:
            if not self._syncing:
                self.toggle(name, bool(change["new"]))

        return on_change

    def _on_registry(self, _event: str, _name: str) -> None:
        self.refresh()

    def attach_status(self, handle: Any) -> None:
        """Keep ``handle`` (a DisplayHandle) showing the current selection summary."""
        self._status = handle

    def close(self) -> None:
        """Stop following the registry and the selection, and close the widgets."""
        while self._undos:
            self._undos.pop()()
        for box in self.checkboxes.values():
            box.close()
        self.box.close()
        if self in _state.live:
            _state.live.remove(self)

    # -- display ----------------------------------------------------------------------------------

    def text(self) -> str:
        ticked = set(self.checked())
        rows = tuple(("[x]" if r.name in ticked else "[ ]", r.label, r.note) for r in self.rows)
        table = Table(headers=("", "toolset", "notes"), rows=rows, title="toolsets")
        return f"{table.text()}\n{SelectionSummary.of(self.selection).text()}"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = dict(self.box._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["text/plain"] = self.text()
        return bundle


def _can_show_widgets(shell: Any) -> bool:
    return shell is not None and getattr(shell, "kernel", None) is not None


def show_picker(shell: Any) -> Any:
    """``%toolsets``: the picker plus a static selection line in a kernel; a text table elsewhere."""
    if not _can_show_widgets(shell):
        rows = toolset_rows()
        enabled = global_selection.enabled_toolsets()
        table = Table(headers=("", "toolset", "notes"), title="toolsets", rows=tuple(
            ("[x]" if enabled is None or r.name in enabled else "[ ]", r.label, r.note) for r in rows))
        print(table.text())
        print(SelectionSummary.of(global_selection).text())
        return None
    from IPython.display import display

    picker = ToolsetPicker()
    _state.live.append(picker)
    display(picker)
    handle = display(SelectionSummary.of(picker.selection), display_id=True)
    picker.attach_status(handle)
    return None
