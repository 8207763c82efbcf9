"""The ``todo`` plan as a checklist: one block in the transcript, redrawn in place as the model updates it.

Theme colours only (``hermes_nb.display.colours``); every mark is also a character, so the text fallback
and an untrusted saved notebook say the same thing as the colours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hermes_nb.display import colours
from hermes_nb.display.escaping import escape_html

__all__ = ["checklist_html", "checklist_text"]

_MARKS = {"completed": "☑", "in_progress": "▶", "pending": "☐", "cancelled": "☒"}
_COLOURS = {"completed": colours.OK, "in_progress": colours.TEXT, "pending": colours.MUTED, "cancelled": colours.MUTED}


def _counts(items: Sequence[Mapping[str, str]]) -> str:
    done = sum(1 for i in items if i.get("status") == "completed")
    return f"{done}/{len(items)} done"


def _nested(items: Sequence[Mapping[str, str]]) -> list[tuple[Mapping[str, str], int]]:
    """Items in list order with their depth (subtasks under their parent; the store keeps parents sane)."""
    by_id = {i.get("id"): i for i in items}
    kids: dict[Any, list[Mapping[str, str]]] = {}
    for item in items:
        kids.setdefault(item.get("parent") if item.get("parent") in by_id else None, []).append(item)
    out: list[tuple[Mapping[str, str], int]] = []

    def walk(parent: Any, depth: int) -> None:
        for item in kids.get(parent, ()):
            if len(out) < len(items):  # a loop the store missed cannot spin here
                out.append((item, depth))
                walk(item.get("id"), depth + 1)

    walk(None, 0)
    return out


def _state_line(items: Sequence[Mapping[str, str]]) -> str:
    """One state of the plan on one line: ``☑ count · ▶ plot · ☐ write up``."""
    return " · ".join(f"{_MARKS.get(i.get('status', ''), '☐')} {i.get('content', '')}" for i, _ in _nested(items))


def _history_html(history: Sequence[Sequence[Mapping[str, str]]]) -> str:
    """Every state the plan had, folded under it: live the checklist changes in place, and a saved notebook
    would keep only its last state ("updated 3×") without this."""
    if len(history) < 2:
        return ""
    steps = "".join(f'<li>{escape_html("written" if n == 0 else f"update {n}")}: '
                    f'{escape_html(_state_line(state))}</li>' for n, state in enumerate(history))
    return (f'<details class="hermes-nb-plan-history" style="color:{colours.MUTED};font-size:12px">'
            f'<summary>how the plan changed ({len(history)} states)</summary>'
            f'<ol style="margin:2px 0;padding-left:1.6em">{steps}</ol></details>')


def checklist_html(items: Sequence[Mapping[str, str]], *, updates: int = 1,
                   history: Sequence[Sequence[Mapping[str, str]]] = ()) -> str:
    """The plan as a list with a status mark per item (``updates``: how many times the model changed it;
    ``history``: each state it had, folded underneath)."""
    rows = []
    for item, depth in _nested(items):
        status = item.get("status", "pending")
        style = f"color:{_COLOURS.get(status, colours.TEXT)}"
        if status == "cancelled":
            style += ";text-decoration:line-through"
        if status == "in_progress":
            style += ";font-weight:bold"
        rows.append(f'<li style="list-style:none;margin-left:{1.2 * depth:.1f}em;{style}" '
                    f'data-status="{escape_html(status)}">'
                    f'{_MARKS.get(status, "☐")} {escape_html(item.get("content", ""))}</li>')
    changed = f" · updated {updates}×" if updates > 1 else ""
    return (f'<div class="hermes-nb-checklist" style="border:1px solid {colours.BORDER};border-radius:4px;'
            f'padding:4px 8px;margin:4px 0"><div style="color:{colours.MUTED}">📋 plan · {_counts(items)}{changed}'
            f'</div><ul style="margin:2px 0;padding-left:4px">{"".join(rows)}</ul>{_history_html(history)}</div>')


def checklist_text(items: Sequence[Mapping[str, str]], *, history: Sequence[Sequence[Mapping[str, str]]] = ()) -> str:
    """The plan as indented lines, then (when it changed) each state it had, one line each."""
    lines = [f"  📋 plan · {_counts(items)}"]
    lines += [f"    {'  ' * depth}{_MARKS.get(i.get('status', ''), '☐')} {i.get('content', '')}"
              for i, depth in _nested(items)]
    if len(history) > 1:
        lines.append("    how the plan changed:")
        lines += [f"      {'written' if n == 0 else f'update {n}'}: {_state_line(state)}"
                  for n, state in enumerate(history)]
    return "\n".join(lines)
