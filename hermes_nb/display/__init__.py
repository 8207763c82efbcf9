"""What the person sees: tool cards and tables (``cards``), the live transcript (``live``), the batch timeline,
inline prompts, model Markdown, asides, the theme's colours and the one HTML escaping function."""

from __future__ import annotations

from hermes_nb._moved import forward

#: the old ``hermes_nb.display`` module's names (``Table``, ``tool_card``, ...) still import from here
__getattr__ = forward(__name__, "hermes_nb.display.cards")
