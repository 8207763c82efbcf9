"""The toolset picker: one checkbox per toolset, editing ``hermes_nb.toolsets.selection``.

Its first line says what the default is (the person's own toolsets, plus config.yaml's ``toolsets.default``; the
built-ins only when ticked) and how to change it. Traits hold the state and every click has a method (``toggle``,
``select_all``, ``select_none``, ``select_default``), so tests need no browser. The picker follows the selection
(set in code) and the registry (tools added or removed, possibly from background threads: it only sets widget
traits then).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes_nb import _state
from hermes_nb.display import colours
from hermes_nb.display.cards import Table
from hermes_nb.display.escaping import escape_html
from hermes_nb.selection import DefaultToolsetsError, Selection, default_line
from hermes_nb.selection import selection as global_selection
from hermes_nb.tools.registry import ToolRegistry
from hermes_nb.tools.registry import registry as global_registry

__all__ = ["SelectionSummary", "ToolsetPicker", "ToolsetRow", "covered_by", "show_picker", "toolset_rows"]

log = logging.getLogger(__name__)

#: Registry events closer together than this (MCP registering 30 tools) cause one picker refresh.
REFRESH_DELAY = 0.05


class _Coalesce:
    """Call ``fn`` once, ``delay`` seconds after the first of a burst of ``trigger()`` calls (any thread)."""

    def __init__(self, fn: Callable[[], None], delay: float) -> None:
        self._fn, self.delay = fn, delay
        self._lock = threading.Condition()
        self._timer: threading.Timer | None = None
        self._running = 0  # calls a timer started that have not returned

    def trigger(self) -> None:
        with self._lock:
            if self._timer is not None:
                return  # a refresh is already on its way and will see this change too
            self._timer = timer = threading.Timer(self.delay, lambda: self._fire(timer))
            timer.daemon = True
            timer.start()

    def _fire(self, timer: threading.Timer) -> None:
        with self._lock:
            if self._timer is not timer:  # flushed or cancelled meanwhile
                return
            self._timer, self._running = None, self._running + 1
        try:
            self._fn()
        finally:
            with self._lock:
                self._running -= 1
                self._lock.notify_all()

    def flush(self) -> None:
        """Run a pending call now, after any call a timer already started (tests, and before reading the widgets).

        A started call may have read the state before the last ``trigger()``: waiting for it only would
        leave that change unseen, so the pending one runs after it.
        """
        with self._lock:
            timer, self._timer = self._timer, None
            self._lock.wait_for(lambda: not self._running)
        if timer is not None:
            timer.cancel()
            self._fn()

    def cancel(self) -> None:
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolsetRow:
    """What the picker shows for one toolset."""

    name: str
    description: str
    tools: tuple[str, ...]  # registered tools, includes followed
    available: int
    includes: tuple[str, ...]
    reason: str  # why it cannot be picked; "" when it can
    #: every tool is deferrable: with tool search on, the model finds them with tool_search
    deferred: bool = False

    @property
    def label(self) -> str:
        n = len(self.tools)
        return f"{self.name} ({n} tool{'s' if n != 1 else ''})" + (" 🔎" if self.deferred else "")

    @property
    def note(self) -> str:
        parts = [self.description] if self.description else []
        if self.deferred:
            parts.append("deferred: behind tool_search when tool search is on")
        if self.includes:
            parts.append("includes " + ", ".join(self.includes))
        if self.reason:
            parts.append(self.reason)
        return " — ".join(parts)


def toolset_rows(reg: ToolRegistry | None = None) -> list[ToolsetRow]:
    """Every toolset (static table and registry), with counts and why it is unavailable."""
    from hermes_nb.tools.search.settings import load_settings
    from hermes_nb.tools.toolsets import get_all_toolsets, resolve_toolset

    reg = reg or global_registry
    search = load_settings()
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
                               reason=reason, deferred=_deferred(names, reg, search)))
    # Composites (toolsets that include others) after the plain ones, so the two kinds read apart.
    return sorted(rows, key=lambda r: bool(r.includes))


def _deferred(names: tuple[str, ...], reg: ToolRegistry, settings: Any) -> bool:
    """Every tool of the toolset is deferrable (tool search, ``hermes_nb.tools.search``), and it is not off."""
    from hermes_nb.tools.search.catalog import is_deferrable

    if settings.enabled == "off" or not names:
        return False
    return all((e := reg.get_entry(n)) is not None and is_deferrable(e, settings) for n in names)


def covered_by(rows: list[ToolsetRow] | tuple[ToolsetRow, ...], enabled: Any) -> dict[str, tuple[str, ...]]:
    """Unticked toolsets whose every tool the model sees anyway, with the ticked toolsets that give them."""
    if enabled is None:
        return {}
    ticked = [r for r in rows if r.name in enabled]
    seen = {t for r in ticked for t in r.tools}
    return {r.name: tuple(t.name for t in ticked if set(t.tools) & set(r.tools))
            for r in rows if r.name not in enabled and r.tools and set(r.tools) <= seen}


def _enabled(sel: Selection) -> tuple[list[str] | None, str]:
    """The selection's toolsets and "", or (a config.yaml ``toolsets:`` block that does not fit) none and why:
    the picker still draws, says the one line, and a tick leaves the default for a list of the person's own."""
    try:
        return sel.enabled_toolsets(), ""
    except DefaultToolsetsError as exc:
        return [], str(exc)


def _model_tool_count(sel: Selection) -> int:
    return _count(_enabled(sel)[0])


def _count(enabled: list[str] | None) -> int:
    from hermes_nb.tools.model_tools import get_tool_definitions
    from hermes_nb.tools.toolsets import validate_toolset

    # A selected toolset can vanish (its last tool removed); count what is left rather than fail.
    if enabled is not None:
        enabled = [n for n in enabled if validate_toolset(n)]
    return len(get_tool_definitions(enabled, None, quiet_mode=True))


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectionSummary:
    """A static record of the selection: one text line, and in HTML the line over a collapsed table.

    It is what a saved notebook keeps of the picker (nbconvert HTML cannot run widgets offline).
    """

    enabled: tuple[str, ...] | None
    count: int
    rows: tuple[ToolsetRow, ...] = ()
    note: str = ""
    #: the picker above is live and says the same in bold: no second visible line (text/plain keeps it)
    live: bool = False
    #: the selection is the default (the person's own toolsets and config.yaml's toolsets.default), not a choice
    default: bool = False
    #: why the default cannot be read (config.yaml's toolsets block does not fit); "" when it can
    error: str = ""
    #: the picker's line saying what the default is and how to change it, kept over the saved table
    default_note: str = ""

    def text(self) -> str:
        if self.error:
            return f"toolsets: {self.error}"
        what = "all toolsets" if self.enabled is None else (", ".join(self.enabled) or "no toolsets")
        if self.default:
            what += " (the default: your own toolsets)"
        line = f"toolsets: {what} — the model sees {self.count} tool{'s' if self.count != 1 else ''}"
        return f"{line} ({self.note})" if self.note else line

    def table(self) -> Table:
        on = lambda r: self.enabled is None or r.name in self.enabled  # noqa: E731
        covered = covered_by(self.rows, self.enabled)
        mark = lambda r: "[x]" if on(r) else "[~]" if r.name in covered else "[ ]"  # noqa: E731
        note = lambda r: _covered_note(covered[r.name], r.note) if r.name in covered else r.note  # noqa: E731
        return Table(headers=("", "toolset", "notes"), title="toolsets",
                     rows=tuple((mark(r), r.label, note(r)) for r in self.rows))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        # the record's headline, in body text: muted text on JupyterLab's code background reads 4.4:1 in light
        line = f"<code style='color:{colours.TEXT}'>{escape_html(self.text())}</code>"
        if not self.rows:
            html_text = line
        else:
            note = f"<div style='color:{colours.MUTED}'>{escape_html(self.default_note)}</div>" if self.default_note \
                else ""
            html_text = (f'<details class="hermes-nb-toolsets"><summary>{line}</summary>{note}{self.table().html()}'
                         "</details>")
        if self.live:
            # Hidden while the picker's widget is drawn in the same output area (it says the same in bold);
            # shown where widgets are not drawn: static HTML exports, a notebook reopened without its kernel.
            html_text = f"{_LIVE_STYLE}<div class='hermes-nb-toolsets-live'>{html_text}</div>"
        return {"text/plain": _fit(self.text()), "text/html": html_text}

    @classmethod
    def of(cls, sel: Selection, rows: list[ToolsetRow] | tuple[ToolsetRow, ...] = (), note: str = "",
           live: bool = False) -> SelectionSummary:
        enabled, error = _enabled(sel)
        return cls(enabled=None if enabled is None else tuple(enabled), count=_count(enabled), rows=tuple(rows),
                   note=note, live=live, default=sel.mode == "default", error=error,
                   default_note=default_line(sel) if rows else "")


#: the text form's widest line: a reopened untrusted notebook shows it (not the widget), at a notebook's width
TEXT_WIDTH = 100


def _fit(line: str) -> str:
    """A long line as lines of ``TEXT_WIDTH`` at most (the continuation indented), unchanged when it fits."""
    import textwrap

    return "\n".join(textwrap.wrap(line, TEXT_WIDTH, subsequent_indent="  ", break_on_hyphens=False)) or line


_LIVE_STYLE = "<style>.jp-OutputArea:has(.widget-vbox) .hermes-nb-toolsets-live{display:none}</style>"


def _covered_note(by: tuple[str, ...], note: str) -> str:
    return " — ".join(x for x in (f"covered by {', '.join(by)}: the model sees its tools", note) if x)


def _close_all(widgets: list[Any], undos: list[Callable[[], None]]) -> None:
    """Drop listeners and close widgets; references nothing of the picker, so it can run as its finalizer."""
    while undos:
        undos.pop()()
    while widgets:
        widgets.pop().close()


class ToolsetPicker:
    """Checkboxes over the toolsets; the selection is the state, the widgets follow it.

    The registry and the selection hold the picker only weakly, and registry events are coalesced into
    one refresh (``REFRESH_DELAY``), so a burst of registrations costs one rebuild and a picker nobody
    holds any more stops listening. A displayed picker is kept (in ``_state.live``) until it is closed,
    replaced by a later ``%toolsets`` or the extension unloads.
    """

    def __init__(self, selection: Selection | None = None, reg: ToolRegistry | None = None) -> None:
        import ipywidgets as w

        from hermes_nb.tools.model_tools import ensure_discovered

        # Discover first: discovery holds a lock while it registers, and our listener counts definitions.
        ensure_discovered()
        self._w = w
        self.selection = selection if selection is not None else global_selection
        self.registry = reg or global_registry
        self.checkboxes: dict[str, Any] = {}
        self.notes: dict[str, Any] = {}
        self.count_label = w.HTML()
        self.default_label = w.HTML()  # what the default is and how to change it, one line
        self.all_button = w.Button(description="all", layout=w.Layout(width="auto"))
        self.none_button = w.Button(description="none", layout=w.Layout(width="auto"))
        self.default_button = w.Button(description="default", layout=w.Layout(width="auto"),
                                       tooltip="your own toolsets, plus config.yaml's toolsets.default")
        ref = weakref.ref(self)
        self.all_button.on_click(lambda _b: _call(ref, "select_all"))
        self.none_button.on_click(lambda _b: _call(ref, "select_none"))
        self.default_button.on_click(lambda _b: _call(ref, "select_default"))
        self.box = w.VBox()
        self.rows: list[ToolsetRow] = []
        self.refreshes = 0  # how many times the widgets were rebuilt from the registry (for tests)
        self._lock = threading.RLock()  # refreshes come from the timer thread and from clicks
        self._syncing = False
        self._status: Any = None  # a DisplayHandle showing SelectionSummary
        self._pending = _Coalesce(lambda: _call(ref, "refresh"), REFRESH_DELAY)
        # Everything the finalizer needs lives in these lists, never in `self`.
        self._widgets: list[Any] = [self.count_label, self.all_button, self.none_button, self.box,
                                    self.default_label, self.default_button]
        self._undos: list[Callable[[], None]] = [
            self._pending.cancel,
            self.registry.add_listener(lambda _event, _name: _call(ref, "_on_registry")),
            self.selection.on_change(lambda: _call(ref, "refresh")),
        ]
        self._finalizer = weakref.finalize(self, _close_all, self._widgets, self._undos)
        self.refresh()
    # -- what a click does ------------------------------------------------------------------------

    def checked(self) -> list[str]:
        """Toolsets currently ticked."""
        enabled = _enabled(self.selection)[0]
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

    def select_default(self) -> None:
        """Back to the default: the person's own toolsets (followed live) and config.yaml's toolsets.default."""
        self.selection.use_default()

    def default_text(self) -> str:
        """The picker's line saying what the default is and how to change it."""
        return default_line(self.selection)

    def model_tool_count(self) -> int:
        """How many tool definitions the model would receive with the current selection."""
        return _model_tool_count(self.selection)

    # -- keeping the widgets in step --------------------------------------------------------------

    def refresh(self) -> None:
        """Rebuild rows from the registry and set every widget from the selection."""
        with self._lock:
            if self._finalizer.alive:
                self._refresh()

    def flush(self) -> None:
        """Apply a coalesced registry refresh now, if one is pending."""
        self._pending.flush()

    def _refresh(self) -> None:
        self.refreshes += 1
        rows = toolset_rows(self.registry)
        if [r.name for r in rows] != [r.name for r in self.rows]:
            self._build(rows)
        self.rows = rows
        ticked = set(self.checked())
        covered = covered_by(rows, _enabled(self.selection)[0])
        self._syncing = True
        try:
            for row in rows:
                box = self.checkboxes[row.name]
                box.description = row.label
                # covered: ticked and greyed, since unticking it would not take its tools from the model
                box.value = row.name in ticked or row.name in covered
                box.disabled = bool(row.reason) or row.name in covered
                note = _covered_note(covered[row.name], row.note) if row.name in covered else row.note
                self.notes[row.name].value = f"<span style='color:{colours.MUTED}'>{escape_html(note)}</span>"
        finally:
            self._syncing = False
        summary = SelectionSummary.of(self.selection, rows, live=True)
        self.count_label.value = f"<strong>{escape_html(summary.text())}</strong>"
        self.default_label.value = f"<span style='color:{colours.MUTED}'>{escape_html(self.default_text())}</span>"
        if self._status is not None:
            self._status.update(summary)

    def _build(self, rows: list[ToolsetRow]) -> None:
        w = self._w
        old = [*self.checkboxes.values(), *self.notes.values(), *self.box.children]
        self.checkboxes.clear()
        self.notes.clear()
        lines = []
        ref = weakref.ref(self)
        names = [r.name for r in rows]
        composites = {r.name for r in rows if r.includes}  # the rows just read: not a second read of every check
        for name in names:
            if name in composites and not any(n in composites for n in names[: names.index(name)]):
                lines.append(w.HTML(f"<span style='color:{colours.MUTED}'>composites — "
                                    "each gives the model the toolsets it includes</span>"))
            box = w.Checkbox(value=False, description=name, indent=False, layout=w.Layout(width="auto"))
            box.observe(_clicked(ref, name), names="value")
            note = w.HTML()
            self.checkboxes[name], self.notes[name] = box, note
            lines.append(w.HBox([box, note]))
        footer = w.HBox([self.all_button, self.none_button, self.default_button, self.count_label])
        self.box.children = [self.default_label, *lines, footer]
        keep = {id(x) for x in (self.count_label, self.all_button, self.none_button, self.box, self.default_label,
                                self.default_button)}
        for widget in old:
            if id(widget) not in keep:
                widget.close()
        self._widgets[:] = [*self._widgets[:6], *lines, footer, *self.checkboxes.values(), *self.notes.values()]

    def _on_registry(self) -> None:
        self._pending.trigger()

    def attach_status(self, handle: Any) -> None:
        """Keep ``handle`` (a DisplayHandle) showing the current selection summary."""
        self._status = handle

    def close(self, note: str = "") -> None:
        """Stop following the registry and the selection, and close the widgets.

        The status line (if any) is updated one last time, with ``note`` saying why it stopped.
        """
        with self._lock:
            if self._status is not None and self._finalizer.alive:
                try:
                    self._status.update(SelectionSummary.of(self.selection, self.rows, note=note or "picker closed"))
                except Exception:  # boundary: a closed front-end must not keep the listeners installed
                    log.exception("hermes_nb: final update of the picker status failed")
            self._finalizer()  # runs _close_all once; later calls do nothing
        if self in _state.live:
            _state.live.remove(self)

    # -- display ----------------------------------------------------------------------------------

    def text(self) -> str:
        """The checkbox table as text, under the default's line (the selection line is ``SelectionSummary``,
        shown beside it)."""
        table = SelectionSummary.of(self.selection, self.rows).table().text(width=TEXT_WIDTH)
        return f"{_fit(self.default_text())}\n{table}"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        if self not in _state.live:  # displayed: keep it working until closed, replaced or unloaded
            _state.live.append(self)
        bundle = dict(self.box._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["text/plain"] = self.text()
        return bundle


def _call(ref: weakref.ReferenceType[ToolsetPicker], method: str) -> None:
    """Call ``method`` on the picker if it still exists (callbacks never keep a picker alive)."""
    picker = ref()
    if picker is not None:
        getattr(picker, method)()


def _clicked(ref: weakref.ReferenceType[ToolsetPicker], name: str) -> Callable[[Any], None]:
    def on_change(change: Any) -> None:
        picker = ref()
        if picker is not None and not picker._syncing:
            picker.toggle(name, bool(change["new"]))

    return on_change


def _can_show_widgets(shell: Any) -> bool:
    from hermes_nb.display.kernel import in_kernel

    return shell is not None and in_kernel(shell)


def show_picker(shell: Any) -> Any:
    """``%toolsets``: the picker plus a static selection line in a kernel; a text table elsewhere."""
    if not _can_show_widgets(shell):
        summary = SelectionSummary.of(global_selection, toolset_rows())
        print(default_line(global_selection))
        print(summary.table().text())
        print(summary.text())
        return None
    from IPython.display import display

    # One live picker: earlier ones stop listening (their status line keeps the last selection).
    for old in [p for p in _state.live if isinstance(p, ToolsetPicker)]:
        old.close(note="replaced by a later %toolsets")
    picker = ToolsetPicker()
    display(picker)
    # The static record next to the widget: what a saved notebook (nbconvert HTML) still shows.
    handle = display(SelectionSummary.of(picker.selection, picker.rows, live=True), display_id=True)
    picker.attach_status(handle)
    return None
