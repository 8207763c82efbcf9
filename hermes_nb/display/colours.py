"""The colours of hermes_nb's HTML: JupyterLab's CSS variables, so light and dark themes both read.

Each value works inline (``style="color:..."``). Text in a semantic colour (error, success, warning) is
the theme's colour mixed with the theme's text colour: darker on a light page, lighter on a dark one,
which keeps WCAG AA contrast (4.5:1) in both (tests/hermes_nb/test_browser_themes.py measures it). The
fallback after each variable is for front ends without JupyterLab's variables (classic HTML export).
"""

from __future__ import annotations

import re

__all__ = ["ACCENT", "BORDER", "ERROR", "ERROR_MARK", "MUTED", "OK", "SURFACE", "TEXT", "TRACK", "WARN", "solid"]


def _text_tone(variable: str, fallback: str) -> str:
    return f"color-mix(in srgb, var({variable},{fallback}) 60%, var(--jp-content-font-color1,#000))"


#: body text
TEXT = "var(--jp-content-font-color1,#1f1f1f)"
#: secondary text (labels, notes, summaries)
MUTED = "var(--jp-content-font-color2,#595959)"
#: error text (failed calls, unavailable tools)
ERROR = _text_tone("--jp-error-color1", "#b00020")
#: success text (a call that returned, an available tool)
OK = _text_tone("--jp-success-color1", "#1b7f3b")
#: warning text (spills, retries, schema warnings)
WARN = _text_tone("--jp-warn-color1", "#8a5300")
#: lines and borders (not text)
BORDER = "var(--jp-border-color1,#bdbdbd)"
#: the agent's accent: transcript border, timeline bars (not text)
ACCENT = "var(--jp-brand-color1,#3f51b5)"
#: raised blocks (results, tracebacks), under TEXT
SURFACE = "var(--jp-layout-color2,#eeeeee)"
#: the empty track of a timeline bar (not text)
TRACK = "var(--jp-layout-color3,#bdbdbd)"
#: an error bar or border (not text)
ERROR_MARK = "var(--jp-error-color1,#b00020)"


def solid(prop: str, value: str) -> str:
    """``prop`` declared twice: the plain fallback colour, then the theme's variable (which wins where it is
    kept). A saved notebook opened untrusted has its HTML sanitized, and JupyterLab's sanitizer drops every
    declaration holding ``var()``: bars and borders then keep the fallback instead of vanishing. Only for
    what is not text (a bar, a border): text without its colour inherits the theme's, readable in both."""
    plain = _VAR.sub(r"\1", value)
    return f"{prop}:{value}" if plain == value or "var(" in plain else f"{prop}:{plain};{prop}:{value}"


_VAR = re.compile(r"var\(--[\w-]+,\s*(#[0-9a-fA-F]{3,8})\)")
