"""hermes_nb.display.timeline: batches of tool-call results drawn on one time scale, as HTML bars or text bars."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import pytest

from hermes_nb.display import colours
from hermes_nb.display.timeline import TEXT_WIDTH, Timeline, timeline
from hermes_nb.tools.batch.records import ToolCallResult
from hermes_nb.tools.batch.scheduling import run_tool_batch
from hermes_nb.tools.registry import ToolRegistry


def _r(i: int, name: str, started: float, ended: float, **kw: Any) -> ToolCallResult:
    return ToolCallResult(index=i, tool_call_id=f"call_{i}", name=name, arguments={}, content="ok",
                          started=started, ended=ended, duration=ended - started, **kw)


PARALLEL = [_r(0, "fetch", 10.0, 10.3, parallel=True), _r(1, "fetch", 10.0, 10.3, parallel=True)]
SERIAL = [_r(0, "save", 20.0, 20.2), _r(1, "read", 20.2, 20.4, segment=1), _r(2, "save", 20.4, 20.6, segment=2)]


def _bars(html: str) -> list[tuple[float, float, str]]:
    """(left %, width %, background) of every bar, in order."""
    return [(float(left), float(width), colour) for left, width, colour in re.findall(
        r"left:([\d.]+)%;width:([\d.]+)%;height:10px;(?:background:#\w+;)?background:([^\"]+)\"", html)]


def test_batches_share_one_time_scale() -> None:
    """The serial batch takes 0.6 s, so it fills the track; the parallel one (0.3 s) fills half of it."""
    bars = _bars(timeline(PARALLEL, SERIAL)._repr_html_())
    assert bars == [(0.0, 50.0, colours.ACCENT), (0.0, 50.0, colours.ACCENT),
                    (0.0, pytest.approx(33.3, abs=0.1), colours.MUTED),
                    (pytest.approx(33.3, abs=0.1), pytest.approx(33.3, abs=0.1), colours.MUTED),
                    (pytest.approx(66.7, abs=0.1), pytest.approx(33.3, abs=0.1), colours.MUTED)]


def test_titles_counts_and_colours_come_from_the_theme() -> None:
    html = timeline(PARALLEL, SERIAL, titles=["fetches"])._repr_html_()
    assert "<b>fetches</b>" in html and "<b>batch 2</b>" in html
    assert "2 calls, 300 ms in all" in html and "3 calls, 600 ms in all" in html
    # a plain colour may come first, as the fallback a sanitized (untrusted) notebook keeps: then the theme's
    assert "background:#3f51b5;background:var(--jp-brand-color1,#3f51b5)" in html
    themed = re.sub(r"\b(background):#[0-9a-fA-F]{3,8};(?=\1:var\()", "", html)
    colours_used = set(re.findall(r"(?:color|background):([^;\"]+)", themed))
    assert colours_used and all(c.startswith(("var(--jp-", "color-mix(")) for c in colours_used), colours_used


def test_errors_timeouts_and_interrupts_are_marked() -> None:
    batch = [_r(0, "ok", 0.0, 0.1), _r(1, "broken", 0.0, 0.1, is_error=True),
             _r(2, "slow", 0.0, 0.2, is_error=True, timed_out=True), _r(3, "cut", 0.2, 0.2, interrupted=True)]
    tl = timeline(batch)
    assert [c for _, _, c in _bars(tl._repr_html_())] == [colours.MUTED] + [colours.ERROR_MARK] * 3
    lines = [line for line in str(tl).splitlines() if "|" in line]  # the bars (segment labels and axis aside)
    assert [line.rsplit("ms", 1)[1].strip() for line in lines] == ["", "error", "timed out", "interrupted"]
    assert "!" in lines[1] and "!" not in lines[0]


def test_names_are_escaped() -> None:
    html = timeline([_r(0, "<img src=x>", 0.0, 0.1)], titles=["<b>x</b>"])._repr_html_()
    assert "<img" not in html and "&lt;img src=x&gt;" in html and "&lt;b&gt;x&lt;/b&gt;" in html


def test_text_fallback_draws_bars_on_the_same_scale() -> None:
    text = str(timeline(PARALLEL, SERIAL, titles=["fetches", "notes"]))
    lines = text.splitlines()
    titles = [line for line in lines if not line.startswith(" ") and not line.startswith("legend")]
    assert titles == ["fetches: 2 calls, 300 ms in all", "notes: 3 calls, 600 ms in all"]
    tracks = [line.split("|")[1] for line in lines if "|" in line]
    assert all(len(t) == TEXT_WIDTH for t in tracks)
    assert tracks[0] == "█" * 20 + " " * 20  # half the scale, parallel
    assert [t.index("▒") for t in tracks[2:]] == [0, 13, 27]  # one after another


def test_what_ipython_shows() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    data, _meta = InteractiveShell.instance().display_formatter.format(timeline(PARALLEL))
    assert "text/html" in data and data["text/plain"] == str(timeline(PARALLEL))


def test_mistakes_say_what_was_expected() -> None:
    with pytest.raises(ValueError, match="at least one batch"):
        timeline()
    with pytest.raises(ValueError, match="2 titles for 1 batches"):
        timeline(PARALLEL, titles=["a", "b"])
    with pytest.raises(TypeError, match="expected ToolCallResult"):
        timeline([{"name": "fetch"}])  # type: ignore[list-item]


def test_an_empty_batch_draws_no_bars() -> None:
    tl = timeline([])
    assert isinstance(tl, Timeline) and _bars(tl._repr_html_()) == [] and "0 calls" in str(tl)


def test_a_real_batch_overlaps_on_the_page() -> None:
    """Calls that ran together in run_tool_batch are drawn overlapping: every bar starts before any ends."""
    registry = ToolRegistry()
    started = threading.Barrier(3, timeout=60)  # the three calls are inside their handlers together

    def wait(args: dict[str, Any], **kw: Any) -> str:
        started.wait()
        return "done"

    registry.register("wait", "t", {"description": "d", "parameters": {"type": "object", "properties": {}}}, wait,
                      read_only=True)
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "wait", "arguments": json.dumps({})}}
             for i in range(3)]
    bars = _bars(timeline(run_tool_batch(calls, registry=registry))._repr_html_())
    assert len(bars) == 3 and all(c == colours.ACCENT for _, _, c in bars)
    assert max(left for left, _, _ in bars) < min(left + width for left, width, _ in bars)
