"""Sub-agents' transcripts under their parent's ``delegate_task`` card: one collapsible block per child.

Open while the child runs (so it reads live), folded once the call has its answer; the text fallback indents
each child's lines under the card. The transcripts themselves are drawn by the renderer passed in (the live
display's), so nesting two levels deep is the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hermes_nb.display import colours
from hermes_nb.display.escaping import escape_html

__all__ = ["children_html", "children_text"]


def children_html(children: Mapping[int, Any], running: bool, render: Callable[[Any], str]) -> str:
    """The children (``index → Transcript``) as ``<details>`` blocks, open while the call runs."""
    if not children:
        return ""
    blocks = []
    for index in sorted(children):
        child = children[index]
        calls = len(child.cards) + (child.checklist.updates if child.checklist is not None else 0)  # todo calls too
        blocks.append(f'<details class="hermes-nb-child"{" open" if running else ""} style="margin:2px 0">'
                      f'<summary style="color:{colours.MUTED}">🔀 {escape_html(child.prompt)} · {calls} tool '
                      f'call{"s" if calls != 1 else ""}{" · running…" if running else ""}</summary>'
                      f'{render(child)}</details>')
    return f'<div style="margin-left:1.2em">{"".join(blocks)}</div>'


def children_text(children: Mapping[int, Any], render: Callable[[Any], str]) -> str:
    """The children's transcripts as lines indented under the card."""
    lines = []
    for index in sorted(children):
        lines += ["      " + line for line in render(children[index]).splitlines()]
    return "\n".join(lines)
