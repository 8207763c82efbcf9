"""A turn's token counts as the server reported them, and a run's sum; a turn the server did not report is
counted as unreported, never as 0 tokens."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

__all__ = ["Usage", "add_usage", "empty_usage", "unreported_usage", "usage_from"]


class Usage(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    #: Turns whose usage the server did not report (their tokens are unknown, not 0).
    unreported: NotRequired[int]


def empty_usage() -> Usage:
    return Usage(prompt_tokens=0, completion_tokens=0, total_tokens=0)


def unreported_usage() -> Usage:
    """One turn whose server reported no usage."""
    return Usage(prompt_tokens=0, completion_tokens=0, total_tokens=0, unreported=1)


def usage_from(raw: Any) -> Usage:
    """Usage from an openai object or a dict; ``None`` (nothing reported) counts one unreported turn."""
    if raw is None:
        return unreported_usage()
    get = raw.get if isinstance(raw, dict) else lambda k, d=None: getattr(raw, k, d)
    p, c = int(get("prompt_tokens", 0) or 0), int(get("completion_tokens", 0) or 0)
    usage = Usage(prompt_tokens=p, completion_tokens=c, total_tokens=int(get("total_tokens", 0) or (p + c)))
    if get("unreported", 0):
        usage["unreported"] = int(get("unreported", 0))
    return usage


def add_usage(total: Usage, turn: Usage) -> None:
    """Add one turn's usage to a run's ``total`` in place (unreported turns are counted, not summed as 0)."""
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        total[key] += turn[key]  # type: ignore[literal-required]
    if turn.get("unreported"):
        total["unreported"] = total.get("unreported", 0) + turn["unreported"]
