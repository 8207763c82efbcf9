"""Showing an agent run as it happens: one inline HTML output updated in place, or text lines.

Three parts, each its own module: ``state`` (the ``Transcript`` that agent events build),
``render`` (that state as HTML and text, and an ``AgentResult``'s repr) and ``views`` (the ``View``
protocol and the HTML, text and silent views a run drives). The events are ``hermes_nb.agent.events``.
"""

from __future__ import annotations

from hermes_nb.display.live.render import (
    RESULT_PREVIEW_CHARS,
    card_html,
    card_text,
    note_text,
    result_html,
    result_text,
    short_path,
    transcript_html,
    transcript_text,
)
from hermes_nb.display.live.state import Card, Transcript, tool_emoji
from hermes_nb.display.live.views import (
    MAX_UPDATES_PER_S,
    HtmlView,
    NullView,
    TextView,
    View,
    in_kernel,
    make_view,
)

__all__ = ["MAX_UPDATES_PER_S", "RESULT_PREVIEW_CHARS", "Card", "HtmlView", "NullView", "TextView", "Transcript",
           "View", "card_html", "card_text", "in_kernel", "make_view", "note_text", "result_html", "result_text",
           "short_path", "tool_emoji", "transcript_html", "transcript_text"]
