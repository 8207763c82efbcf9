"""``EvalResult``: the rows of an evaluation, its summary, a table and an accuracy-per-tool chart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from hermes_nb.display import colours
from hermes_nb.display.escaping import escape_html
from hermes_nb.evaluation.cases import Case, Outcome, score

__all__ = ["EvalResult", "EvalRow", "build_result"]


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalRow:
    """One case's outcome, scored."""

    index: int
    prompt: str
    expected_tools: tuple[str, ...] | None  # None: the case names no exact tool set (not scored)
    tools_called: tuple[str, ...]
    selection_ok: bool | None
    args_ok: bool | None
    check_ok: bool | None
    tokens: int
    seconds: float
    error: str | None
    text: str = ""
    stopped_reason: str = ""
    resumed: bool = False
    cost_usd: float | None = None  # None: unknown price (``cost`` says why)
    cost: str = ""
    name: str = ""  # the case's id in its file (a Hermes task's id, a pydantic_evals case name)
    #: when the argument check failed: the calls of the checked tools, with the arguments they were sent
    args_sent: str = ""
    api_calls: int = 0  # model turns the case took

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalResult:
    """``rows`` (one per case, in case order), ``summary``, ``to_pandas()``, ``per_tool``, ``plot()``."""

    rows: tuple[EvalRow, ...]
    summary: dict[str, Any]
    per_tool: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_pandas(self) -> Any:
        """The rows as a DataFrame (needs pandas: ``pip install 'hermes-nb[scale]'``)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("EvalResult.to_pandas() needs pandas: pip install 'hermes-nb[scale]'") from None
        return pd.DataFrame([r.as_dict() for r in self.rows]).set_index("index")

    def plot(self) -> Any:
        """Accuracy per tool: a matplotlib Figure when matplotlib is installed, else an SVG chart."""
        try:
            import matplotlib.pyplot as plt  # pyplot, so a notebook's inline backend shows the figure
        except ImportError:
            return _Svg(self.svg())
        names = sorted(self.per_tool)
        fig, ax = plt.subplots(figsize=(6, 0.4 * max(len(names), 1) + 1))
        plt.close(fig)  # returned, not also drawn at the end of the cell
        ax.barh(names, [self.per_tool[n]["accuracy"] for n in names], color="#4c8bf5")
        ax.set_xlim(0, 1)
        ax.set_xlabel("accuracy (tool called exactly when expected)")
        ax.set_title("Accuracy per tool")
        fig.tight_layout()
        return fig

    def svg(self) -> str:
        """The accuracy-per-tool bar chart as inline SVG (no plotting library needed)."""
        names = sorted(self.per_tool)
        if not names:
            return ""
        bar, gap, label_w, width = 18, 6, 160, 240
        height = len(names) * (bar + gap) + 24
        parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + width + 60}" height="{height}" '
                 f'font-family="sans-serif" font-size="12">']
        for i, name in enumerate(names):
            acc = self.per_tool[name]["accuracy"]
            y = i * (bar + gap) + 4
            parts.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end" {_TEXT}>{escape_html(name)}</text>'
                         f'<rect x="{label_w}" y="{y}" width="{width}" height="{bar}" {_TRACK}/>'
                         f'<rect x="{label_w}" y="{y}" width="{width * acc:.1f}" height="{bar}" {_BAR}/>'
                         f'<text x="{label_w + width + 6}" y="{y + 13}" {_TEXT}>{acc:.0%}</text>')
        parts.append(f'<text x="{label_w}" y="{height - 4}" {_MUTED}>accuracy per tool '
                     f"(called exactly when expected)</text></svg>")
        return "".join(parts)

    def chart_html(self) -> str:
        """The accuracy-per-tool chart as HTML bars: it survives a saved notebook opened untrusted, where
        JupyterLab's sanitizer removes SVG."""
        names = sorted(self.per_tool)
        if not names:
            return ""
        rows = []
        for name in names:
            acc = self.per_tool[name]["accuracy"]
            rows.append(f'<div style="display:flex;align-items:center;gap:6px;height:20px">'
                        f'<span style="width:12em;text-align:right;overflow:hidden;color:{colours.TEXT}">'
                        f'{escape_html(name)}</span><div style="width:240px;height:14px;'
                        f'{colours.solid("background", colours.TRACK)}"><div style="width:{100 * acc:.1f}%;'
                        f'height:14px;{colours.solid("background", colours.ACCENT)}"></div></div>'
                        f'<span style="color:{colours.TEXT}">{acc:.0%}</span></div>')
        return (f'<div class="hermes-nb-eval-chart" style="margin:4px 0">{"".join(rows)}'
                f'<div style="color:{colours.MUTED};font-size:12px">accuracy per tool (called exactly when expected)'
                f'</div></div>')

    def _summary_text(self) -> str:
        s = self.summary
        line = (f"{s['cases']} cases: selection {_pct(s['selection_accuracy'])}, args {_pct(s['args_accuracy'])}"
                f", check {_pct(s['check_accuracy'])}, {s['errors']} errors, {s['tokens']} tokens, "
                f"{s['cost']}, {s['seconds']:.1f}s")
        if s.get("replayed"):
            line += f" — replayed from {s['replayed']} (recorded turns, no model called)"
        if s.get("resumed"):
            line += f" ({s['resumed']} resumed from out_dir)"
        if s.get("interrupted"):
            line += " — interrupted: run again with the same out_dir to finish"
        return line

    def __str__(self) -> str:
        from hermes_nb.display.cards import Table

        return self._summary_text() + "\n" + Table(headers=_HEADERS, rows=tuple(_cells(r) for r in self.rows)).text()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from hermes_nb.display.cards import Table

        table = Table(headers=_HEADERS, rows=tuple(_cells(r) for r in self.rows)).html()
        body = (f'<div class="hermes-nb-eval"><p><strong>{escape_html(self._summary_text())}</strong></p>'
                f"{self.chart_html()}{table}</div>")
        return {"text/plain": str(self), "text/html": body}


# The chart's colours: the theme's text colours (readable in light and dark), each with a plain fill too for
# viewers that drop the style attribute (the fallback is the light theme's colour).
_TEXT = f'fill="#1f1f1f" style="fill:{colours.TEXT}"'
_MUTED = f'fill="#595959" style="fill:{colours.MUTED}"'
_TRACK = f'fill="#bdbdbd" style="fill:{colours.TRACK}"'
_BAR = f'fill="#3f51b5" style="fill:{colours.ACCENT}"'

_HEADERS = ("#", "prompt", "expected", "called", "selection", "args", "check", "tokens", "cost", "s", "error")


def _cells(r: EvalRow) -> tuple[str, ...]:
    expected = "–" if r.expected_tools is None else ", ".join(r.expected_tools) or "(none)"
    return (str(r.index), _short(r.prompt, 60), expected,
            ", ".join(r.tools_called) or "(none)", _mark(r.selection_ok),
            _mark(r.args_ok) + (f" sent {r.args_sent}" if r.args_sent else ""), _mark(r.check_ok),
            str(r.tokens), r.cost if r.cost_usd is not None else "unknown", f"{r.seconds:.2f}",
            _short(r.error or "", 80))  # an unknown price's reason: once, in the summary line


def _mark(value: bool | None) -> str:
    return "–" if value is None else ("✓" if value else "✗")


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sent(case: Case, outcome: Outcome) -> str:
    """The checked tools' calls as they were sent, ``area(width=3, height=2)``, or what was missing."""
    import json

    parts = []
    for tool in case.expected_args:
        calls = [c for c in outcome.calls if c.name == tool]
        if not calls:
            parts.append(f"no {tool} call")
        for c in calls:
            args = c.arguments
            shown = (", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
                     if isinstance(args, dict) else json.dumps(args, ensure_ascii=False))
            parts.append(f"{tool}({shown})")
    return _short("; ".join(parts), 120)


def build_result(cases: Sequence[Case], outcomes: dict[int, Outcome], *, seconds: float,
                 resumed: set[int] | None = None, interrupted: bool = False, replayed: str | None = None) -> EvalResult:
    """Score every finished case and summarise (cases not finished, after an interrupt, are left out);
    ``replayed``: the cassettes the cases were replayed from, said in the summary."""
    resumed = resumed or set()
    rows = []
    per_tool_hits: dict[str, list[bool]] = {}
    unknown_why: list[str] = []  # each unpriced case's reason, as its outcome said it
    for case in cases:
        outcome = outcomes.get(case.index)
        if outcome is None:
            continue
        scores = score(case, outcome)
        called = tuple(c.name for c in outcome.calls)
        error = outcome.error or scores["check_error"]
        rows.append(EvalRow(index=case.index, prompt=case.prompt, expected_tools=case.expected_tools,
                            tools_called=called, selection_ok=scores["selection_ok"], args_ok=scores["args_ok"],
                            check_ok=scores["check_ok"], tokens=outcome.tokens, seconds=outcome.seconds,
                            error=error, text=outcome.text, stopped_reason=outcome.stopped_reason,
                            resumed=case.index in resumed, cost_usd=outcome.cost_usd,
                            cost=_cost_text(outcome.cost_usd, outcome.cost_note), name=case.name,
                            args_sent=_sent(case, outcome) if scores["args_ok"] is False else "",
                            api_calls=outcome.api_calls))
        if outcome.cost_usd is None:
            unknown_why.append(outcome.cost_note)
        if case.expected_tools is None:
            continue  # no exact tool set: the per-tool chart counts only cases that name one
        for tool in set(case.expected_tools) | set(called):
            per_tool_hits.setdefault(tool, []).append((tool in case.expected_tools) == (tool in called))
    per_tool = {t: {"accuracy": sum(h) / len(h), "cases": float(len(h))} for t, h in sorted(per_tool_hits.items())}
    summary = {
        "cases": len(rows),
        "selection_accuracy": _mean([r.selection_ok for r in rows if r.selection_ok is not None]),
        "args_accuracy": _mean([r.args_ok for r in rows if r.args_ok is not None]),
        "check_accuracy": _mean([r.check_ok for r in rows if r.check_ok is not None]),
        "errors": sum(1 for r in rows if r.error),
        "tokens": sum(r.tokens for r in rows),
        "api_calls": sum(r.api_calls for r in rows),
        **_cost_summary(rows, unknown_why),
        "seconds": seconds,
        "resumed": len(resumed & {r.index for r in rows}),
        "interrupted": interrupted,
        "replayed": replayed,
        "per_tool_accuracy": {t: v["accuracy"] for t, v in per_tool.items()},
    }
    return EvalResult(rows=tuple(rows), summary=summary, per_tool=per_tool)


def _cost_text(usd: float | None, note: str) -> str:
    """A price as the run's own cost says it (``hermes_nb.agent.cost.Price``)."""
    from hermes_nb.agent.cost import Price

    return str(Price(usd=None if usd is None else Decimal(repr(usd)), unknown=note))


def _cost_summary(rows: list[EvalRow], unknown_why: list[str]) -> dict[str, Any]:
    """The set's cost: the sum over cases with a price; how many had none, and why (``unknown_why``: each
    unpriced case's reason), in one phrase."""
    known = [r.cost_usd for r in rows if r.cost_usd is not None]
    unknown = [r for r in rows if r.cost_usd is None]
    total = sum(known) if known else None
    text = _cost_text(total, "") if known else "unknown price"
    if unknown and rows:
        reasons = sorted(set(unknown_why) - {""})
        text += (f" (+ {len(unknown)} of {len(rows)} cases unknown" + (f": {reasons[0]}" if len(reasons) == 1 else "")
                 + ")") if known else (f" ({reasons[0]})" if len(reasons) == 1 else "")
    return {"cost_usd": total, "cost_unknown_cases": len(unknown), "cost": text}


def _mean(values: list[bool]) -> float | None:
    return sum(values) / len(values) if values else None


class _Svg:
    """An SVG chart that shows itself in a notebook (when matplotlib is not installed)."""

    def __init__(self, svg: str) -> None:
        self.svg = svg

    def _repr_svg_(self) -> str:
        return self.svg
