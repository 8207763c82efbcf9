"""Evaluation cases and their scoring.

A case is a dict (or a DataFrame row) with ``prompt``, ``expected_tools`` (tool names; empty means no
tool should be called; ``score_selection=False``: the tool set is not scored), optional ``expected_args`` (``{tool: {arg: value}}``, a value
may be ``OneOf``), optional ``possible_answers`` (BFCL's form: ``{tool: {arg: [acceptable values]}}``, ``""``
meaning the argument may be absent), optional ``check`` (a callable on the final text) and ``expects``
(``Expect`` records). Files and datasets in other formats become such dicts in ``formats``.

Scoring, decided here once:
- ``selection_ok``: the *set* of tools called equals the set expected (order and repeats do not count);
- ``args_ok``: for every tool in ``expected_args``, at least one call of it has each listed argument
  equal (JSON-equal) to the expected value; other arguments may be anything. ``None`` without
  ``expected_args`` (not counted in the accuracy);
- ``check_ok``: ``check(final_text)`` is truthy and every ``Expect`` holds; ``None`` without either. A
  raising check is False; the row's error says which expectation failed.
- a case whose run failed (``Outcome.error``: the model's error, replay drift) passes nothing it is scored
  on: no calls would match "no tool expected" and an empty answer would "exclude" any text, but nothing
  was decided.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_nb.evaluation.expect import Expect, OneOf
from hermes_nb.evaluation.formats import CaseError

__all__ = ["Case", "CallMade", "Outcome", "as_cases", "score"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One evaluation case, normalised."""

    index: int
    prompt: str
    expected_tools: tuple[str, ...] | None = ()  # None: the tool set is not scored
    expected_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    check: Callable[[str], Any] | None = field(default=None, compare=False)
    expects: tuple[Expect, ...] = ()
    name: str = ""  # the case's own id in the file it came from

    @property
    def fingerprint(self) -> str:
        """What resume compares: a case whose prompt or expectations changed runs again."""
        tools = None if self.expected_tools is None else sorted(self.expected_tools)
        data = json.dumps([self.prompt, tools, self.expected_args, *([repr(self.expects)] if self.expects else [])],
                          sort_keys=True, default=repr)
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
    cost_usd: float | None = None  # None: unknown price (cost_note says why)
    cost_note: str = ""
    messages: tuple[dict[str, Any], ...] = field(default=(), repr=False, compare=False)
    tools_offered: tuple[dict[str, Any], ...] = field(default=(), repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "fingerprint": self.fingerprint, "text": self.text,
                "calls": [{"name": c.name, "arguments": c.arguments, "is_error": c.is_error} for c in self.calls],
                "tokens": self.tokens, "seconds": self.seconds, "api_calls": self.api_calls,
                "stopped_reason": self.stopped_reason, "error": self.error, "cost_usd": self.cost_usd,
                "cost_note": self.cost_note}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outcome:
        return cls(index=int(data["index"]), fingerprint=str(data["fingerprint"]), text=str(data.get("text", "")),
                   calls=tuple(CallMade(name=c["name"], arguments=c.get("arguments"), is_error=bool(c.get("is_error")))
                               for c in data.get("calls", [])),
                   tokens=int(data.get("tokens", 0)), seconds=float(data.get("seconds", 0.0)),
                   api_calls=int(data.get("api_calls", 0)), stopped_reason=str(data.get("stopped_reason", "")),
                   error=data.get("error"), cost_usd=data.get("cost_usd"), cost_note=str(data.get("cost_note", "")))


def as_cases(cases: Any) -> list[Case]:
    """``Case`` records from a list of dicts, a pandas DataFrame, a file or glob (Hermes eval tasks,
    pydantic_evals datasets) or a pydantic_evals ``Dataset``; ValueError naming the bad case."""
    from hermes_nb.evaluation.formats import case_dicts

    if hasattr(cases, "to_dict") and hasattr(cases, "columns"):  # a DataFrame, without importing pandas
        rows: Iterable[Any] = cases.to_dict("records")
    else:
        rows = case_dicts(cases)
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise CaseError(f"case {i}: expected a dict with 'prompt', got {type(row).__name__}")
        prompt = row.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise CaseError(f"evaluate: case {i} has no prompt; give each case a 'prompt' (the text the agent is asked)")
        check = _missing_to_none(row.get("check"))
        if check is not None and not callable(check):
            raise CaseError(f"case {i}: 'check' must be a callable on the final text")
        args = dict(_missing_to_none(row.get("expected_args")) or {})
        if not all(isinstance(v, Mapping) for v in args.values()):
            raise CaseError(f"case {i}: 'expected_args' must be {{tool: {{arg: value}}}}")
        possible = _possible_answers(_missing_to_none(row.get("possible_answers")), i)
        for tool, wanted in possible.items():
            args[tool] = {**args.get(tool, {}), **wanted}
        expected = row.get("expected_tools", tuple(possible) if possible else ())
        if row.get("score_selection") is False:  # a format that names no exact tool set (Hermes's eval tasks)
            expected = None
        elif expected is None:
            expected = ()
        expects = tuple(_missing_to_none(row.get("expects")) or ())
        if not all(isinstance(e, Expect) for e in expects):
            raise CaseError(f"case {i}: 'expects' must be Expect records (hermes_nb.evaluation.expect)")
        out.append(Case(index=i, prompt=prompt, expected_tools=None if expected is None else _names(expected, i),
                        expected_args={str(k): dict(v) for k, v in args.items()}, check=check, expects=expects,
                        name=str(row.get("name") or "")))
    return out


def _possible_answers(value: Any, i: int) -> dict[str, dict[str, OneOf]]:
    """BFCL's ground truth, ``{tool: {arg: [values]}}`` or a list of those, as ``expected_args`` of ``OneOf``."""
    if value is None:
        return {}
    items = value if isinstance(value, list) else [value]
    out: dict[str, dict[str, OneOf]] = {}
    for item in items:
        if not isinstance(item, Mapping) or not all(isinstance(a, Mapping) for a in item.values()):
            raise CaseError(f"case {i}: 'possible_answers' must be {{tool: {{arg: [acceptable values]}}}}")
        for tool, arguments in item.items():
            out[str(tool)] = {
                str(arg): OneOf(values=tuple(v for v in (vals if isinstance(vals, list) else [vals]) if v != ""),
                                optional="" in (vals if isinstance(vals, list) else [vals]))
                for arg, vals in arguments.items()}
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
        raise CaseError(f"case {i}: 'expected_tools' must be a list of tool names") from None
    if not all(isinstance(n, str) for n in names):
        raise CaseError(f"case {i}: 'expected_tools' must be a list of tool names")
    return names


def score(case: Case, outcome: Outcome) -> dict[str, Any]:
    """``selection_ok``, ``args_ok`` and ``check_ok`` for one case (see the module docstring)."""
    called = [c.name for c in outcome.calls]
    selection_ok = None if case.expected_tools is None else set(called) == set(case.expected_tools)
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
    if case.expects:
        failures = [f for e in case.expects if (f := e.failure(outcome.text, outcome.calls)) is not None]
        check_ok = (check_ok is not False) and not failures
        if failures:
            check_error = "; ".join(([check_error] if check_error else []) + failures)
    if outcome.error is not None:  # the run failed: what it did not do is not a pass
        selection_ok, args_ok, check_ok = (None if v is None else False for v in (selection_ok, args_ok, check_ok))
    return {"selection_ok": selection_ok, "args_ok": args_ok, "check_ok": check_ok, "check_error": check_error}


def _includes(arguments: Any, wanted: Mapping[str, Any]) -> bool:
    if not isinstance(arguments, Mapping):
        return False
    return all(_matches(arguments, k, v) for k, v in wanted.items())


def _matches(arguments: Mapping[str, Any], key: str, wanted: Any) -> bool:
    if isinstance(wanted, OneOf):
        if key not in arguments:
            return wanted.optional
        return any(_json(arguments[key]) == _json(v) for v in wanted.values)
    return key in arguments and _json(arguments[key]) == _json(wanted)


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
