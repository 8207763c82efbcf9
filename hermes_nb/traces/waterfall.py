"""A run's spans on one time axis: ``result.trace`` and ``%trace`` show this.

One row per span, indented under its parent, its bar from its start to its end on the run's own axis (0 to the
run's length), so a parallel segment's calls overlap visibly. Model turns and tool calls differ by colour and by
their label (``chat gpt-4o-mini`` / ``execute_tool read_file``); an approval's wait is shaded (striped) inside its
call's bar, and a call's wait for its turn (a worker, an earlier segment) is drawn as track. HTML uses
``hermes_nb.display.colours`` (JupyterLab's variables with plain fallbacks, so both themes and an untrusted
notebook read); the text rendering draws the same bars in characters.
"""

from __future__ import annotations

import math
from typing import Any, TypeAlias

from hermes_nb.display import colours
from hermes_nb.display.escaping import escape_html

# A Trace (hermes_nb.traces.records) and its SpanRecords, read by their fields: records imports this module
# to show itself, so this one names them only as Any.
Trace: TypeAlias = Any
SpanRecord: TypeAlias = Any

__all__ = ["TEXT_WIDTH", "waterfall_html", "waterfall_text"]

#: characters of the text rendering's bar track
TEXT_WIDTH = 48
_LABEL = 34  # characters of a text row's label (indent included)

_MODEL = "var(--jp-brand-color1,#3f51b5)"
_TOOL = "var(--jp-success-color1,#1b7f3b)"
_INNER = "var(--jp-warn-color1,#b26a00)"  # an MCP request, a sandboxed command
_RUN = "var(--jp-layout-color4,#757575)"
_COLOURS = {"agent": _RUN, "chat": _MODEL, "tool": _TOOL, "mcp": _INNER, "sandbox": _INNER}
_CHARS = {"agent": "─", "chat": "=", "tool": "#", "mcp": "+", "sandbox": "+"}
_WAIT_CHAR, _QUEUED_CHAR, _ERROR_CHAR = "~", ".", "!"
_STRIPES = ("repeating-linear-gradient(45deg,rgba(128,128,128,.85) 0 3px,rgba(128,128,128,.25) 3px 6px)")


def _axis(trace: Trace) -> tuple[float, float]:
    if not trace.spans:
        return 0.0, 1e-6
    t0 = min(s.start for s in trace.spans)
    return t0, max(max(s.end for s in trace.spans) - t0, 1e-6)


def _depths(trace: Trace) -> dict[int, int]:
    depth: dict[int, int] = {}
    for s in trace.spans:  # parents come first
        depth[s.id] = depth[s.parent] + 1 if s.parent in depth else 0
    return depth


def _waits(s: SpanRecord) -> list[tuple[float, float]]:
    """The approval waits of a span: (asked, answered) pairs."""
    asked = [e.time for e in s.events if e.name == "approval.asked"]
    answered = [e.time for e in s.events if e.name == "approval.answered"]
    return list(zip(asked, answered, strict=False))


def _label(s: SpanRecord) -> str:
    turn = s.attributes.get("hermes_nb.turn")
    return s.name + (f" · turn {turn}" if turn else "")


def _note(s: SpanRecord) -> str:
    notes = []
    if s.kind == "chat":
        notes.append(f"{s.attributes.get('gen_ai.usage.input_tokens', 0)}→"
                     f"{s.attributes.get('gen_ai.usage.output_tokens', 0)} tokens")
    if s.attributes.get("hermes_nb.tool.parallel"):
        notes.append("parallel")
    for asked, answered in _waits(s):
        choice = next((e.attributes.get("hermes_nb.approval.choice") for e in s.events
                       if e.name == "approval.answered" and e.time == answered), "")
        notes.append(f"approval {choice} after {_ms(answered - asked)}")
    if s.error:
        notes.append(s.error)
    return ", ".join(notes)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def _summary(trace: Trace) -> str:
    turns, calls = len(trace.named("chat ")), len(trace.named("execute_tool "))
    agents = len(trace.named("invoke_agent "))
    _, span = _axis(trace)
    subs = f", {agents - 1} sub-agent{'s' if agents != 2 else ''}" if agents > 1 else ""
    return f"{turns} model turn{'s' * (turns != 1)}, {calls} tool call{'s' * (calls != 1)}{subs}, {_ms(span)}"


# -- HTML ---------------------------------------------------------------------------------------------------

def _swatch(colour: str, extra: str = "") -> str:
    return (f'<span style="display:inline-block;width:10px;height:10px;vertical-align:middle;'
            f'{colours.solid("background", colour)}{extra}"></span>')


def waterfall_html(trace: Trace) -> str:
    e = escape_html
    t0, span = _axis(trace)
    depth = _depths(trace)
    rows = []
    for s in trace.spans:
        left, width = 100 * (s.start - t0) / span, max(100 * s.duration / span, 0.4)
        colour = colours.ERROR_MARK if s.error else _COLOURS[s.kind]
        inner = []
        if s.began is not None and s.began > s.start and s.duration > 0:  # the wait before its clock started
            inner.append(f'<div style="position:absolute;left:0;width:{100 * (s.began - s.start) / s.duration:.1f}%;'
                         f'height:100%;{colours.solid("background", colours.TRACK)}"></div>')
        for asked, answered in _waits(s):
            if s.duration > 0:
                inner.append(f'<div title="approval wait" style="position:absolute;'
                             f'left:{100 * (asked - s.start) / s.duration:.1f}%;'
                             f'width:{max(100 * (answered - asked) / s.duration, 1):.1f}%;height:100%;'
                             f'background:{_STRIPES}"></div>')
        note = _note(s)
        rows.append(
            f'<div style="display:flex;align-items:center;gap:6px;min-height:18px;color:{colours.TEXT}">'
            f'<span style="width:19em;padding-left:{depth[s.id] * 1.1:.1f}em;box-sizing:border-box;overflow:hidden;'
            f'text-overflow:ellipsis;white-space:nowrap;font-family:var(--jp-code-font-family,monospace);'
            f'font-size:12px" title="{e(_label(s))}">{e(_label(s))}</span>'
            f'<div style="position:relative;flex:0 0 320px;height:10px;{colours.solid("background", colours.SURFACE)}">'
            f'<div data-kind="{s.kind}" style="position:absolute;left:{left:.2f}%;width:{width:.2f}%;height:10px;'
            f'overflow:hidden;{colours.solid("background", colour)}">{"".join(inner)}</div></div>'
            f'<span style="font-size:11px;white-space:nowrap">{_ms(s.duration)}'
            + (f' <span style="color:{colours.ERROR if s.error else colours.MUTED}">{e(note)}</span>' if note else "")
            + "</span></div>")
    axis = (f'<div style="display:flex;gap:6px;color:{colours.MUTED};font-size:11px">'
            f'<span style="width:19em"></span><div style="flex:0 0 320px;display:flex;justify-content:space-between;'
            f'{colours.solid("border-top", "1px solid " + colours.BORDER)}"><span>0</span><span>{_ms(span / 2)}</span>'
            f'<span>{_ms(span)}</span></div></div>')
    legend = (f'<div style="color:{colours.MUTED};font-size:11px;margin-top:3px">'
              f'{_swatch(_MODEL)} model turn (chat) {_swatch(_TOOL)} tool call (execute_tool) '
              f'{_swatch(_INNER)} MCP request or sandboxed command '
              f'{_swatch(colours.TRACK)} waiting to start '
              f'<span style="display:inline-block;width:10px;height:10px;vertical-align:middle;'
              f'background:{_STRIPES}"></span> waiting for an approval '
              f'{_swatch(colours.ERROR_MARK)} error</div>')
    head = (f'<div style="color:{colours.TEXT};margin-bottom:2px"><b>trace</b> '
            f'<span style="color:{colours.MUTED}">{e(_summary(trace))}</span></div>')
    return f'<div class="hermes-nb-trace">{head}{"".join(rows)}{axis}{legend}</div>'


# -- text ---------------------------------------------------------------------------------------------------

def waterfall_text(trace: Trace) -> str:
    t0, span = _axis(trace)
    depth = _depths(trace)
    lines = [f"trace: {_summary(trace)}"]
    for s in trace.spans:
        cells = [" "] * TEXT_WIDTH

        def col(t: float) -> int:
            return min(TEXT_WIDTH - 1, max(0, int((t - t0) / span * TEXT_WIDTH)))

        # a bar covers every column its time touches: from the one it starts in to the one it ends in
        first = col(s.start)
        last = max(first, min(TEXT_WIDTH - 1, math.ceil((s.end - t0) / span * TEXT_WIDTH) - 1))
        mark = _ERROR_CHAR if s.error else _CHARS[s.kind]
        for i in range(first, last + 1):
            cells[i] = mark
        if s.began is not None and s.began > s.start:  # the cells whose middle it waited through
            for i in range(first, min(round((s.began - t0) / span * TEXT_WIDTH), last)):  # its mark keeps the last
                cells[i] = _QUEUED_CHAR
        for asked, answered in _waits(s):
            for i in range(col(asked), min(max(col(answered), col(asked) + 1), max(last, first + 1))):
                cells[i] = _WAIT_CHAR  # the call's own mark keeps its last cell, as after a wait to start
        label = "  " * depth[s.id] + _label(s)
        label = label if len(label) <= _LABEL else label[:_LABEL - 1] + "…"
        note = _note(s)
        lines.append(f"{label:<{_LABEL}} │{''.join(cells)}│ {_ms(s.duration)}" + (f"  {note}" if note else ""))
    pad = " " * _LABEL
    lines.append(f"{pad} 0{_ms(span):>{TEXT_WIDTH + 1}}")
    lines.append(f"legend: {_CHARS['chat']} model turn  {_CHARS['tool']} tool call  {_CHARS['mcp']} MCP request or "
                 f"sandboxed command  {_QUEUED_CHAR} waiting to start  {_WAIT_CHAR} waiting for an approval  "
                 f"{_ERROR_CHAR} error")
    return "\n".join(lines)
