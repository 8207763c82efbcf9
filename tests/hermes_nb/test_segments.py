"""Why calls ran together or apart (issue 35, the teacher's item 2): a reason per segment, in ``explain`` and on
the timeline, with an axis and a legend."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from hermes_nb.display.segments import explain
from hermes_nb.display.timeline import timeline
from hermes_nb.tools.batch.scheduling import run_tool_batch
from hermes_nb.tools.registry import registry

SCHEMA = {"description": "demo", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "name": {"type": "string"}, "q": {"type": "string"}}}}


@pytest.fixture(autouse=True)
def tools(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    reg = registry.register
    reg("fetch", "t35", SCHEMA, lambda a, **k: "doc", read_only=True)
    reg("save", "t35", SCHEMA, lambda a, **k: time.sleep(0.01) or "ok", path_params=("path",))
    reg("read", "t35", SCHEMA, lambda a, **k: "text", read_only=True, path_params=("path",))
    reg("ask", "t35", SCHEMA, lambda a, **k: "yes", interactive=True)
    reg("shell", "t35", SCHEMA, lambda a, **k: "ran", needs_approval=True)
    reg("mutate", "t35", SCHEMA, lambda a, **k: "changed")


def c(i: int, name: str, **args: Any) -> dict[str, Any]:
    return {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


@pytest.mark.parametrize(("calls", "reasons", "why"), [
    ([c(0, "fetch"), c(1, "fetch")], ["read-only → shared time"], "readers share time"),
    ([c(0, "read", path="a.txt"), c(1, "save", path="b.txt")], ["different files → shared time"],
     "a writer beside a reader of another file"),
    ([c(0, "save", path="notes.txt"), c(1, "read", path="./notes.txt"), c(2, "save", path="d/../notes.txt")],
     ["same file notes.txt → one at a time"] * 3, "one file, spelled three ways"),
    ([c(0, "save", path="data"), c(1, "read", path="data/x.csv")],
     ["data holds x.csv → one at a time"] * 2, "a folder overlaps what is inside it"),
    ([c(0, "ask", q="ok?"), c(1, "fetch")],
     ["asks the person → alone", "the batch has ask, which asks the person → one at a time"], "interactive"),
    ([c(0, "shell"), c(1, "fetch"), c(2, "fetch")], ["needs approval → alone", "read-only → shared time"],
     "an approval prompt runs alone"),
    ([c(0, "mutate"), c(1, "fetch"), c(2, "fetch")],
     ["may change anything (no path arguments) → alone", "read-only → shared time"], "a writer of unknown scope"),
    ([c(0, "save"), c(1, "fetch"), c(2, "fetch")], ["cannot tell which file → alone", "read-only → shared time"],
     "a path argument missing"),
    ([c(0, "nosuch"), c(1, "fetch"), c(2, "fetch")], ["unknown tool → alone", "read-only → shared time"],
     "a tool nobody registered"),
    ([c(0, "fetch")], ["one call → alone"], "a batch of one"),
])
def test_each_segment_says_why(calls: list[dict[str, Any]], reasons: list[str], why: str) -> None:
    plan = explain(calls)
    assert [s.reason for s in plan.segments] == reasons, why
    assert "BatchSegment(" not in str(plan) and "BatchSegment(" not in plan._repr_html_()


def test_the_timeline_labels_its_segments_and_has_an_axis_and_a_legend() -> None:
    batch = [c(0, "save", path="notes.txt"), c(1, "read", path="notes.txt")]
    tl = timeline(run_tool_batch([c(0, "fetch"), c(1, "fetch")]), run_tool_batch(batch))
    text, html = str(tl), tl._repr_html_()
    for shown in (text, html):
        assert "segment 0: read-only → shared time" in shown
        assert "segment 1: same file notes.txt → one at a time" in shown
        assert "shares time (a parallel segment)" in shown and "runs alone" in shown  # the legend
    assert text.splitlines()[-2].strip().startswith("0") and text.splitlines()[-2].endswith(" ms")  # the axis
    assert "<span>0</span>" in html and "var(--jp-" in html
