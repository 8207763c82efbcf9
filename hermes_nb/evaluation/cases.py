"""Evaluation cases and their scoring.

A case is a dict (or a DataFrame row) with ``prompt``, ``expected_tools`` (tool names; empty means no
tool should be called), optional ``expected_args`` (``{tool: {arg: value}}``) and optional ``check``
(a callable on the final text).

Scoring, decided here once:
- ``selection_ok``: the *set* of tools called equals the set expected (order and repeats do not count);
- ``args_ok``: for every tool in ``expected_args``, at least one call of it has each listed argument
  equal (JSON-equal) to the expected value; other arguments may be anything. ``None`` without
  ``expected_args`` (not counted in the accuracy);
- ``check_ok``: ``check(final_text)`` is truthy; ``None`` without ``check``. A raising check is False.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Case", "CallMade", "Outcome", "as_cases", "score"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One evaluation case, normalised."""

    index: int
    prompt: str
    expected_tools: tuple[str, ...] = ()
    expected_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    check: Callable[[str], Any] | None = field(default=None, compare=False)

    @property
    def fingerprint(self) -> str:
        """What resume compares: a case whose prompt or expectations changed runs again."""
        data = json.dumps([self.prompt, sorted(self.expected_tools), self.expected_args], sort_keys=True,
                          default=repr)
        return hashlib.sha256(data.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallMade:
    """A tool call the model made in a case."""

    name: str
    arguments: Any  # the decoded JSON object, or the raw text when it was not JSON
    is_error: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What running one case produced, before scoring (also what the checkpoint stores)."""

    index: int
    fingerprint: str
    text: str
    calls: tuple[CallMade, ...]
    tokens: int
    seconds: float
    api_calls: int
    stopped_reason: str
    error: str | None = None
    messages: tuple[dict[str, Any], ...] = field(default=(), repr=False, compare=False)
    tools_offered: tuple[dict[str, Any], ...] = field(default=(), repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "fingerprint": self.fingerprint, "text": self.text,
                "calls": [{"name": c.name, "arguments": c.arguments, "is_error": c.is_error} for c in self.calls],
                "tokens": self.tokens, "seconds": self.seconds, "api_calls": self.api_calls,
                "stopped_reason": self.stopped_reason, "error": self.error}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outcome:
        return cls(index=int(data["index"]), fingerprint=str(data["fingerprint"]), text=str(data.get("text", "")),
                   calls=tuple(CallMade(name=c["name"], arguments=c.get("arguments"), is_error=bool(c.get("is_error")))
                               for c in data.get("calls", [])),
                   tokens=int(data.get("tokens", 0)), seconds=float(data.get("seconds", 0.0)),
                   api_calls=int(data.get("api_calls", 0)), stopped_reason=str(data.get("stopped_reason", "")),
                   error=data.get("error"))


def as_cases(cases: Any) -> list[Case]:
    """``Case`` records from a list of dicts or a pandas DataFrame; ValueError naming the bad case."""
    if hasattr(cases, "to_dict") and hasattr(cases, "columns"):  # a DataFrame, without importing pandas
        rows: Iterable[Any] = cases.to_dict("records")
    else:
        rows = cases
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise ValueError(f"case {i}: expected a dict with 'prompt', got {type(row).__name__}")
        prompt = row.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError(f"case {i}: 'prompt' must be a non-empty string")
        check = _missing_to_none(row.get("check"))
        if check is not None and not callable(check):
            raise ValueError(f"case {i}: 'check' must be a callable on the final text")
        args = _missing_to_none(row.get("expected_args")) or {}
        if not isinstance(args, Mapping) or not all(isinstance(v, Mapping) for v in args.values()):
            raise ValueError(f"case {i}: 'expected_args' must be {{tool: {{arg: value}}}}")
        out.append(Case(index=i, prompt=prompt, expected_tools=_names(row.get("expected_tools"), i),
                        expected_args={str(k): dict(v) for k, v in args.items()}, check=check))
    return out


def _missing_to_none(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def _names(value: Any, i: int) -> tuple[str, ...]:
    value = _missing_to_none(value)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    try:
        names = tuple(value)  # a list, a tuple, a numpy array from a DataFrame cell
    except TypeError:
        raise ValueError(f"case {i}: 'expected_tools' must be a list of tool names") from None
    if not all(isinstance(n, str) for n in names):
        raise ValueError(f"case {i}: 'expected_tools' must be a list of tool names")
    return names


def score(case: Case, outcome: Outcome) -> dict[str, Any]:
    """``selection_ok``, ``args_ok`` and ``check_ok`` for one case (see the module docstring)."""
    called = [c.name for c in outcome.calls]
    selection_ok = set(called) == set(case.expected_tools)
    args_ok: bool | None = None
    if case.expected_args:
        args_ok = all(
            any(c.name == tool and _includes(c.arguments, wanted) for c in outcome.calls)
            for tool, wanted in case.expected_args.items()
        )
    check_ok: bool | None = None
    check_error = None
    if case.check is not None:
        try:
            check_ok = bool(case.check(outcome.text))
        except Exception as exc:  # the person's check: a raise is a failed check, said in the row
            check_ok, check_error = False, f"check raised {type(exc).__name__}: {exc}"
    return {"selection_ok": selection_ok, "args_ok": args_ok, "check_ok": check_ok, "check_error": check_error}


def _includes(arguments: Any, wanted: Mapping[str, Any]) -> bool:
    if not isinstance(arguments, Mapping):
        return False
    return all(k in arguments and _json(arguments[k]) == _json(v) for k, v in wanted.items())


def _json(value: Any) -> str:
    return json.dumps(_plain(value), sort_keys=True, default=repr)


def _plain(value: Any) -> Any:
    """2.0 and 2 compare equal, as they do in JSON; tuples are arrays."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value
