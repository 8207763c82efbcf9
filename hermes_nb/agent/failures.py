"""The loop guard: the same failing call, again and again, ends the run.

A small model that gets an error back often sends the very same call again (seven identical failing
``convert_units`` calls over 240 s were measured, until the context overflowed). A call is "the same" when
its tool, its arguments (as JSON, key order aside) and its error text all match: a model that changes its
arguments, or a tool whose error changes, is still trying something new and is left alone.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

__all__ = ["DEFAULT_REPEATED_FAILURES", "repeated_failure"]

#: How many identical failing calls in one run end it (``Agent(max_repeated_failures=...)``).
DEFAULT_REPEATED_FAILURES = 3


def _arguments(raw: str) -> str:
    try:
        return json.dumps(json.loads(raw), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return raw


def repeated_failure(records: Sequence[Any], limit: int | None) -> str:
    """The one line that ends the run when some failing call was made ``limit`` times alike ("" if none);
    ``records`` are the run's ``ToolCallRecord``s (an interrupted call is no failure of the model's)."""
    if not limit or limit < 1:
        return ""
    seen = Counter((r.name, _arguments(r.arguments), r.content) for r in records
                   if r.is_error and not r.interrupted)
    for (name, _args, error), count in seen.items():
        if count >= limit:
            first = error.strip().splitlines()[0] if error.strip() else "(no text)"
            first = first if len(first) <= 100 else first[:99] + "…"
            return (f"Stopped: {name} failed {count} times with the same arguments and the same error ({first}); "
                    f"stopped_reason 'repeated_failure' (Agent(max_repeated_failures=...) sets the limit)")
    return ""
