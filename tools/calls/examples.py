"""Example calls a tool carries, and whether a result matches one.

``%%tool --example 'a=2 b=3 -> 6'`` and ``tool(examples=[({"a": 2, "b": 3}, 6)])`` both end as
``ToolExample`` records on the ``ToolEntry``; ``hermes_nb.evaluation.examples`` runs them through dispatch.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolExample", "as_examples", "decode_result", "matches"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolExample:
    """One example call: the arguments, and the expected result (a value, or a predicate on the result)."""

    args: dict[str, Any]
    expected: Any
    source: str = field(default="", compare=False)  # the `--example` text it came from, if any

    @property
    def is_predicate(self) -> bool:
        return callable(self.expected)


def as_examples(items: Iterable[Any]) -> tuple[ToolExample, ...]:
    """``ToolExample`` records from records or ``(args, expected)`` pairs; TypeError saying which is wrong."""
    out = []
    for i, item in enumerate(items):
        if isinstance(item, ToolExample):
            out.append(item)
            continue
        if not (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], dict)):
            raise TypeError(f"example {i + 1} must be an (args dict, expected) pair, got {item!r}")
        out.append(ToolExample(args=dict(item[0]), expected=item[1]))
    return tuple(out)


def decode_result(content: str) -> Any:
    """What dispatch returned, as data: JSON when it parses, else the text."""
    try:
        return json.loads(content)
    except ValueError:
        return content


def matches(example: ToolExample, actual: Any) -> tuple[bool, str]:
    """Whether ``actual`` (decoded) satisfies the example, and a note when a predicate raised."""
    if example.is_predicate:
        predicate: Callable[[Any], Any] = example.expected
        try:
            return bool(predicate(actual)), ""
        except Exception as exc:  # the person's predicate: its failure is a failed example, said so
            return False, f"predicate raised {type(exc).__name__}: {exc}"
    expected = example.expected
    if isinstance(expected, str) and not isinstance(actual, str):
        # a text expectation against a result that parsed as JSON ("6" -> 6): compare the text
        return json.dumps(actual, ensure_ascii=False) == expected, ""
    return _equal(expected, actual), ""


def _equal(expected: Any, actual: Any) -> bool:
    # a tuple written in Python equals the JSON array it became; bool is never a number here
    if isinstance(expected, tuple):
        expected = list(expected)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(_equal(e, a) for e, a in zip(expected, actual, strict=True))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(_equal(v, actual[k]) for k, v in expected.items())
    return bool(expected == actual)
