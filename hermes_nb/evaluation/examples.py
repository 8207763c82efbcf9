"""``%tools test``: run the example calls tools carry through the real dispatch and show pass/fail.

A failing row shows what was expected and what came back; the report is HTML in a notebook and an
aligned table as text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError

from hermes_nb.display.cards import Table
from hermes_nb.tools.calls.examples import ToolExample, decode_result, matches

__all__ = ["ExampleReport", "ExampleResult", "parse_example", "run_examples"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExampleResult:
    """One example run: ``ok``, the arguments, what was expected and what the tool returned (decoded)."""

    tool: str
    ok: bool
    args: dict[str, Any]
    expected: Any
    actual: Any
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExampleReport:
    """Every example run by ``%tools test``; ``ok`` when all passed."""

    results: tuple[ExampleResult, ...]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def failures(self) -> tuple[ExampleResult, ...]:
        return tuple(r for r in self.results if not r.ok)

    def table(self) -> Table:
        rows = tuple(
            ("✓" if r.ok else "✗", r.tool, _short(r.args), _shown(r.expected),
             "" if r.ok else _short(r.actual) + (f" ({r.note})" if r.note else ""))
            for r in self.results
        )
        passed = sum(r.ok for r in self.results)
        return Table(headers=("", "tool", "args", "expected", "actual (when failing)"), rows=rows,
                     title=f"{passed}/{len(self.results)} examples pass", empty="no tool has examples")

    def __str__(self) -> str:
        return self.table().text()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return self.table()._repr_mimebundle_()


def parse_example(text: str) -> ToolExample:
    """``'a=2 b=3 -> 6'``: arguments as ``%tools call`` takes them, ``->``, the expected JSON or text."""
    from hermes_nb.call_args import parse_call_args

    # " -> " first, so an argument like s='a->b' survives when the arrow is written with spaces
    argtext, arrow, expected_text = text.partition(" -> ") if " -> " in text else text.partition("->")
    if not arrow:
        raise UsageError(f"%%tool --example {text!r}: write the arguments, `->`, then the expected result")
    try:
        args = parse_call_args(argtext)
    except UsageError as exc:
        raise UsageError(f"%%tool --example {text!r}: {str(exc).removeprefix('%tools call: ')}") from None
    expected_text = expected_text.strip()
    try:
        expected: Any = json.loads(expected_text)
    except ValueError:
        expected = expected_text  # text for a text result
    return ToolExample(args=args, expected=expected, source=text)


def run_examples(names: Iterable[str], reg: Any) -> ExampleReport:
    """Run the examples of ``names`` (every tool with examples when empty) through ``reg.dispatch``."""
    wanted = list(names)
    entries = [reg.get_entry(n) for n in wanted] if wanted else [e for e in reg.entries() if e.examples]
    results = []
    for name, entry in zip(wanted or [e.name for e in entries], entries, strict=True):
        if entry is None:
            raise UsageError(f"%tools test: no tool named {name!r} (see %tools)")
        if wanted and not entry.examples:
            raise UsageError(f"%tools test: {name} has no examples; give its %%tool cell --example 'a=2 b=3 -> 6' "
                             f"(or tool(fn, examples=[(args, expected)]))")
        for example in entry.examples:
            actual = decode_result(reg.execute(entry.name, dict(example.args)).content)  # text view, not the dict
            ok, note = matches(example, actual)
            results.append(ExampleResult(tool=entry.name, ok=ok, args=dict(example.args),
                                         expected=example.expected, actual=actual, note=note))
    return ExampleReport(results=tuple(results))


def _shown(expected: Any) -> str:
    if callable(expected):
        return f"predicate {getattr(expected, '__name__', type(expected).__name__)}"
    return _short(expected)


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[: limit - 1] + "…"
