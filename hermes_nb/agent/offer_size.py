"""How much of a model's context window the offered tool definitions take, said when it is more than half.

Measured: a notebook offering every toolset sent the embedded model 15 definitions, 3 390 of its 4 096 tokens,
and nothing said so; the model then had ~700 tokens for the question, the answer and every result.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["known_window", "oversize_notice", "tokens_of"]

_CHARS_PER_TOKEN = 4  # the rule of thumb tool search's threshold uses too: an estimate, said as one ("~")


def tokens_of(definitions: list[dict[str, Any]]) -> int:
    """Estimated tokens of these definitions as sent (their JSON, four characters a token)."""
    if not definitions:
        return 0
    return len(json.dumps(definitions, ensure_ascii=False, default=str)) // _CHARS_PER_TOKEN + 1


def known_window(model: Any) -> int | None:
    """The model's context window when it is known: its runtime's own (``n_ctx``, as the embedded model has),
    else the table of known model names; None when neither knows (no warning is better than a wrong one)."""
    seen = 0
    while (inner := getattr(model, "inner", None)) is not None and seen < 8:  # a wrapper (RecordingModel)
        model, seen = inner, seen + 1
    n_ctx = getattr(model, "n_ctx", None)
    if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0:
        return n_ctx
    from hermes_nb.tools.search.settings import known_context_window

    return known_context_window(getattr(model, "name", None))


def oversize_notice(definitions: list[dict[str, Any]], model: Any) -> str | None:
    """One line when the definitions take more than half of the model's known window, else None."""
    window = known_window(model)
    if window is None:
        return None
    tokens = tokens_of(definitions)
    if tokens * 2 <= window:
        return None
    return (f"the {len(definitions)} tool definitions offered take ~{_n(tokens)} of this model's {_n(window)}-token "
            f"context window: offer fewer (the picker, %toolsets, or Agent(enabled_toolsets=[...]))")


def _n(number: int) -> str:
    return f"{number:,}".replace(",", " ")  # 3 390, as the README writes numbers
