"""A batch timeline in one line: ``timeline(results)`` draws each call as a bar from its start to its end.

Several batches share one time scale (``timeline(parallel, serial)``), so their bars compare, on one axis (0 to
the longest batch, in ms). Each segment is labelled with why its calls shared time or ran alone
(``hermes_nb.display.segments``: "read-only → shared time", "same file notes.txt → one at a time"), and a legend
says what the bars' colours mean. The value shows itself: HTML bars in JupyterLab (colours from
``hermes_nb.display.colours``, so both themes read), text bars anywhere else (a terminal, ``print``, a saved
notebook without HTML).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hermes_nb.display import colours
from hermes_nb.display.escaping import escape_html
from hermes_nb.tools.batch.records import ToolCallResult

__all__ = ["Timeline", "timeline"]

#: characters of the text fallback's bar track
TEXT_WIDTH = 40


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeline:
    """Batches of tool-call results on one time scale; shown as HTML bars or text bars."""

    batches: tuple[tuple[str, tuple[ToolCallResult, ...]], ...]

    @property
    def span(self) -> float:
        """Seconds covered by the longest batch, measured from each batch's own first start."""
        return max((_elapsed(rs) for _, rs in self.batches), default=0.0) or 1e-6

    def _repr_html_(self) -> str:
        blocks = [_batch_html(title, results, self.span) for title, results in self.batches]
        legend = (f'<div style="color:{colours.MUTED};font-size:11px;margin-top:2px">'
                  f'{_swatch(colours.ACCENT)} shares time (a parallel segment) {_swatch(colours.MUTED)} runs alone '
                  f'{_swatch(colours.ERROR_MARK)} error or timeout · bars start and end when the call did</div>')
        return f'<div style="display:flex;flex-wrap:wrap;gap:24px">{"".join(blocks)}</div>{legend}'

    def __str__(self) -> str:
        legend = "legend: █ shares time (a parallel segment)  ▒ runs alone  ! error or timeout"
        return "\n".join([*(_batch_text(title, results, self.span) for title, results in self.batches), legend])

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


def timeline(*batches: Sequence[ToolCallResult], titles: Sequence[str] = ()) -> Timeline:
    """Draw one or more batches (the lists ``run_tool_batch`` returns) on a shared time scale.

    ``titles`` names the batches in order; a batch without one is called "batch N".
    """
    if not batches:
        raise ValueError("timeline() needs at least one batch of results (what run_tool_batch returns)")
    if len(titles) > len(batches):
        raise ValueError(f"{len(titles)} titles for {len(batches)} batches")
    named = tuple((titles[i] if i < len(titles) else f"batch {i + 1}", tuple(results))
                  for i, results in enumerate(batches))
    for title, results in named:
        wrong = [type(r).__name__ for r in results if not isinstance(r, ToolCallResult)]
        if wrong:
            raise TypeError(f"{title}: expected ToolCallResult records (from run_tool_batch), got {wrong[0]}")
    return Timeline(batches=named)


def _elapsed(results: Sequence[ToolCallResult]) -> float:
    return max(r.ended for r in results) - min(r.started for r in results) if results else 0.0


def _bar_colour(r: ToolCallResult) -> str:
    if r.is_error or r.timed_out or r.interrupted:
        return colours.ERROR_MARK
    return colours.ACCENT if r.parallel else colours.MUTED


def _outcome(r: ToolCallResult) -> str:
    if r.interrupted:
        return "interrupted"
    if r.timed_out:
        return "timed out"
    return "error" if r.is_error else ""


def _swatch(colour: str) -> str:
    return f'<span style="display:inline-block;width:10px;height:10px;{colours.solid("background", colour)}"></span>'


def _reasons(results: tuple[ToolCallResult, ...]) -> dict[int, str]:
    """Why each segment (by number) of a batch's results ran as it did."""
    from hermes_nb.display.segments import segment_reasons
    from hermes_nb.tools.registry import registry

    ordered = sorted(results, key=lambda r: r.index)
    numbers = sorted({r.segment for r in ordered})
    shape = [(any(r.parallel for r in ordered if r.segment == n),
              tuple(i for i, r in enumerate(ordered) if r.segment == n)) for n in numbers]
    said = segment_reasons([(r.name, r.arguments) for r in ordered], shape, registry=registry)
    return dict(zip(numbers, said, strict=True))


def _axis_html(span: float) -> str:
    return (f'<div style="display:flex;gap:6px;color:{colours.MUTED};font-size:11px">'
            f'<span style="width:9em"></span><span style="width:3.5em"></span>'
            f'<div style="width:240px;display:flex;justify-content:space-between;'
            f'{colours.solid("border-top", "1px solid " + colours.BORDER)}">'
            f'<span>0</span><span>{span * 500:.0f}</span><span>{span * 1000:.0f} ms</span></div></div>')


def _batch_html(title: str, results: tuple[ToolCallResult, ...], span: float) -> str:
    e = escape_html
    head = (f'<div style="color:{colours.TEXT}"><b>{e(title)}</b> '
            f'<span style="color:{colours.MUTED}">{len(results)} calls, {_elapsed(results) * 1000:.0f} ms in all'
            f'</span></div>')
    t0 = min((r.started for r in results), default=0.0)
    reasons = _reasons(results)
    rows = []
    labelled: set[int] = set()
    for r in results:
        if r.segment not in labelled:
            labelled.add(r.segment)
            rows.append(f'<div style="color:{colours.MUTED};font-size:11px;margin-top:3px">segment {r.segment}: '
                        f'{e(reasons.get(r.segment, ""))}</div>')
        left, width = 100 * (r.started - t0) / span, max(100 * r.duration / span, 0.5)
        outcome = _outcome(r)
        rows.append(
            f'<div style="display:flex;align-items:center;gap:6px;min-height:18px;color:{colours.TEXT}">'
            f'<span style="width:9em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;line-height:1.4;'
            f'font-family:var(--jp-code-font-family,monospace)" title="{e(r.name)}">{e(r.name)}</span>'
            f'<span style="width:3.5em;color:{colours.MUTED};font-size:11px">seg {r.segment}</span>'
            f'<div style="position:relative;width:240px;height:10px;{colours.solid("background", colours.TRACK)}">'
            f'<div title="{e(r.tool_call_id)}" style="position:absolute;left:{left:.1f}%;width:{width:.1f}%;'
            f'height:10px;{colours.solid("background", _bar_colour(r))}"></div></div>'
            f'<span style="font-size:11px">{r.duration * 1000:.0f} ms'
            + (f' <span style="color:{colours.ERROR}">{outcome}</span>' if outcome else "")
            + '</span></div>')
    return f'<div>{head}{"".join(rows)}{_axis_html(span)}</div>'


def _batch_text(title: str, results: tuple[ToolCallResult, ...], span: float) -> str:
    lines = [f"{title}: {len(results)} calls, {_elapsed(results) * 1000:.0f} ms in all"]
    t0 = min((r.started for r in results), default=0.0)
    reasons = _reasons(results)
    labelled: set[int] = set()
    for r in results:
        if r.segment not in labelled:
            labelled.add(r.segment)
            lines.append(f"  segment {r.segment}: {reasons.get(r.segment, '')}")
        left = round(TEXT_WIDTH * (r.started - t0) / span)
        width = max(1, round(TEXT_WIDTH * r.duration / span))
        left = min(left, TEXT_WIDTH - 1)
        width = min(width, TEXT_WIDTH - left)
        mark = "!" if _bar_colour(r) == colours.ERROR_MARK else ("█" if r.parallel else "▒")
        bar = " " * left + mark * width + " " * (TEXT_WIDTH - left - width)
        outcome = _outcome(r)
        lines.append(f"  {r.name[:14]:14} seg {r.segment} |{bar}| {r.duration * 1000:5.0f} ms"
                     + (f" {outcome}" if outcome else ""))
    end = f"{span * 1000:.0f} ms"
    lines.append(f"  {'':14} {'':5} 0{' ' * (TEXT_WIDTH - len(end))}{end}")
    return "\n".join(lines)
