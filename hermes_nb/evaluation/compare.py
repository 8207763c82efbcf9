"""``compare(a, b, cases=..., agent=...)``: two toolset selections side by side, without writing the comparison
by hand (issue 35, the teacher's item 3).

For each selection: the tools it offers and their schemas' tokens (estimated as chars / 4, the estimate tool
search uses), and, given cases, an evaluation of each (``hermes_nb.evaluate`` with the agent template's
``enabled_toolsets`` set to the selection): model turns, tokens and accuracy. The value shows itself as one
table (HTML in a notebook, aligned text elsewhere).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Comparison", "Side", "compare"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Side:
    """One selection: its label, toolsets, the tools offered with their schema tokens, and its evaluation."""

    label: str
    toolsets: tuple[str, ...] | None  # None: every toolset
    schema_tokens: Mapping[str, int] = field(default_factory=dict)  # tool name → estimated tokens of its schema
    result: Any = None  # an EvalResult, when cases were given

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(self.schema_tokens)


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """Two ``Side`` records; ``rows()`` is the table (metric, first, second)."""

    sides: tuple[Side, Side]

    def rows(self) -> list[tuple[str, str, str]]:
        a, b = self.sides
        out = [("toolsets", _toolsets(a), _toolsets(b)),
               ("tools offered", str(len(a.tools)), str(len(b.tools))),
               ("schema tokens (≈ chars/4)", str(sum(a.schema_tokens.values())), str(sum(b.schema_tokens.values())))]
        for name in sorted(set(a.tools) | set(b.tools)):
            out.append((f"  {name}", _tokens(a, name), _tokens(b, name)))
        if a.result is not None and b.result is not None:
            for label, key, fmt in (("cases", "cases", str), ("model turns", "api_calls", str),
                                    ("tokens", "tokens", str), ("selection accuracy", "selection_accuracy", _pct),
                                    ("args accuracy", "args_accuracy", _pct), ("check accuracy", "check_accuracy", _pct),
                                    ("errors", "errors", str)):
                out.append((label, fmt(_summary(a.result, key)), fmt(_summary(b.result, key))))
            out.append(("cost", _cost(a.result), _cost(b.result)))
        return out

    def _table(self) -> Any:
        from hermes_nb.display.cards import Table

        a, b = self.sides
        return Table(headers=("", a.label, b.label), rows=tuple(self.rows()))

    def __str__(self) -> str:
        return str(self._table().text())

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": str(self), "text/html": self._table().html()}


def _toolsets(side: Side) -> str:
    return "all" if side.toolsets is None else ", ".join(side.toolsets) or "(none)"


def _tokens(side: Side, name: str) -> str:
    return str(side.schema_tokens[name]) if name in side.schema_tokens else "–"


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _cost(result: Any) -> str:
    """The set's cost; an unknown one without its reason (each evaluation's summary says it)."""
    return "unknown price" if result.summary.get("cost_usd") is None else str(result.summary.get("cost"))


def _summary(result: Any, key: str) -> Any:
    return result.summary.get(key)


def _selection(value: Any, which: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"compare(): the {which} selection is a list of toolset names, e.g. ['units', 'text']")
    from hermes_nb.agent.arguments import toolset_list

    return tuple(toolset_list(list(names), "enabled_toolsets") or ())


def _side(label: str, toolsets: tuple[str, ...] | None) -> Side:
    from hermes_nb.tools.model_tools import assemble_tool_definitions

    definitions = assemble_tool_definitions(toolsets).definitions
    tokens = {d["function"]["name"]: len(json.dumps(d, ensure_ascii=False)) // 4 + 1 for d in definitions}
    return Side(label=label, toolsets=toolsets, schema_tokens=dict(sorted(tokens.items())))


def compare(a: Sequence[str] | str | None, b: Sequence[str] | str | None, *, cases: Any = None,
            agent: Any = None, labels: Sequence[str] = (), **evaluate_kwargs: Any) -> Comparison:
    """Two toolset selections side by side: tools offered, schema tokens per tool, and, with ``cases``, an
    evaluation of each (``agent``: the template ``evaluate`` takes; its ``enabled_toolsets`` is each selection).

    ``compare(["units"], ["units", "text"], cases=cases, agent={...}, replay=DIR)``; ``None`` is every toolset.
    """
    first, second = _selection(a, "first"), _selection(b, "second")
    names = list(labels) or [_toolsets(Side(label="", toolsets=first)), _toolsets(Side(label="", toolsets=second))]
    if len(names) != 2:
        raise ValueError(f"compare(): labels names the two selections; got {len(names)}")
    sides = [_side(names[0], first), _side(names[1], second)]
    if cases is not None:
        from dataclasses import replace

        from hermes_nb.evaluation.driver import evaluate
        from hermes_nb.evaluation.runner import agent_template

        template = dict(agent_template(agent if agent is not None else {}))
        sides = [replace(side, result=evaluate(cases, agent={**template, "enabled_toolsets": side.toolsets},
                                                **evaluate_kwargs)) for side in sides]
    return Comparison(sides=(sides[0], sides[1]))
