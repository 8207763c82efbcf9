"""The live display: transcript state from agent events, HTML/text rendering, throttled in-place updates;
and the %%agent magics in a plain InteractiveShell (load, unload, load again)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError

from hermes_nb.agent.events import BatchDone, TextDelta, ToolCallQueued, ToolEnded, ToolStarted, UsageUpdate
from hermes_nb.display import live
from hermes_nb.display.live import views
from hermes_nb.tools.batch.scheduling import ToolCallResult


def _result(call_id: str, name: str, content: str, started: float, ended: float, **kw) -> ToolCallResult:
    return ToolCallResult(index=0, tool_call_id=call_id, name=name, arguments={}, content=content, started=started,
                          ended=ended, duration=ended - started, parallel=True, **kw)


def _record(r: ToolCallResult, content: str | None = None):
    from hermes_nb.agent.loop import ToolCallRecord

    return ToolCallRecord(id=r.tool_call_id, name=r.name, arguments="{}", content=content or r.content, iteration=1,
                          started=r.started, ended=r.ended, duration=r.duration, is_error=r.is_error, parallel=True)


def _feed(t: live.Transcript) -> None:
    t.handle(TextDelta(delta="Looking "))
    t.handle(TextDelta(delta="<now>."))
    for cid in ("a", "b"):
        t.handle(ToolCallQueued(index=0, id=cid, name="probe", arguments='{"x": 1}'))
    t.handle(ToolStarted(tool_call_id="a", time=1.0))
    ok = _result("a", "probe", "fine", 1.0, 2.0)
    bad = _result("b", "probe", '{"error": "boom"}', 1.5, 3.0, is_error=True)
    for r in (ok, bad):
        t.handle(ToolEnded(tool_call_id=r.tool_call_id, time=r.ended, result=r, parallel=True))
    t.handle(BatchDone(records=(_record(ok), _record(bad))))
    t.handle(UsageUpdate(usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}))


def test_a_running_call_shows_running_once():
    """The card of the running call says "⏳ running…"; the footer does not say it a second time."""
    t = live.Transcript(prompt="go", model="m")
    t.handle(ToolCallQueued(index=0, id="a", name="terminal", arguments='{"command": "rm x"}'))
    t.handle(ToolStarted(tool_call_id="a", time=1.0))
    html = live.transcript_html(t)
    assert html.count("⏳") == 1 and "⏳ running…" in html


def test_transcript_renders_text_cards_timeline_and_usage():
    t = live.Transcript(prompt="go", model="m")
    _feed(t)
    html = live.transcript_html(t)
    assert "Looking &lt;now&gt;." in html  # streamed deltas joined and escaped
    assert html.count("<details") == 2 and "✗" in html and "--jp-error-color1" in html  # the error card is red
    assert "batch of 2 calls, in parallel: 2.00 s" in html
    assert "left:25.0%" in html  # b's bar starts 0.5 s into a 2 s batch
    assert "tokens: 3 prompt + 2 completion = 5" in html
    assert "⏳ waiting for the model…" in html
    t.done = True
    assert "⏳" not in live.transcript_html(t)
    text = live.transcript_text(t)
    assert "✓ probe 1.00 s → fine" in text and "batch of 2 ran in parallel" in text


def test_spilled_result_shows_size_and_path(tmp_path):
    from hermes_nb.tools.budget import maybe_persist_tool_result

    block = maybe_persist_tool_result("y" * 5000, "probe", "a", threshold=100)
    t = live.Transcript(prompt="go", model="m")
    t.handle(ToolCallQueued(index=0, id="a", name="probe", arguments="{}"))
    r = _result("a", "probe", "y" * 5000, 0.0, 0.1)
    t.handle(BatchDone(records=(_record(r, block),)))
    assert "spilled 5,000 chars →" in live.transcript_html(t)


def test_spill_path_under_home_reads_as_tilde(tmp_path, monkeypatch):
    from hermes_nb.tools.budget import maybe_persist_tool_result

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("HERMES_NB_HOME", str(tmp_path / ".hermes_nb"))
    block = maybe_persist_tool_result("y" * 5000, "probe", "a", threshold=100)
    t = live.Transcript(prompt="go", model="m")
    t.handle(ToolCallQueued(index=0, id="a", name="probe", arguments="{}"))
    t.handle(BatchDone(records=(_record(_result("a", "probe", "y" * 5000, 0.0, 0.1), block),)))
    assert "spilled 5,000 chars → ~/.hermes_nb/" in live.transcript_text(t)
    assert "→ ~/.hermes_nb/" in live.transcript_html(t) and str(tmp_path) not in live.transcript_text(t)
    assert live.short_path(str(tmp_path) + "x/y") == str(tmp_path) + "x/y"  # a sibling, not under home


@pytest.mark.parametrize(("markdown", "expected"), [
    ("**Weather:** sunny", "<strong>Weather:</strong> sunny"),
    ("| a | b |\n|---|---|\n| 1 | 2 |", "<table>"),
    ("~~old~~ new", "<s>old</s>"),
    ("- one\n- two", "<ul"),
    ("1. one\n2. two", "<ol"),
    ("## Summary", "<h4"),
    ("run `rm -rf x` now", "<code"),
    ("```\nprint('**hi**')\n```", "<pre"),
    ("[docs](https://example.org/a_b_c)", 'href="https://example.org/a_b_c"'),
])
def test_answer_markdown_subset(markdown, expected):
    from hermes_nb.display.markdown import to_html

    assert expected in to_html(markdown)


@pytest.mark.parametrize("hostile", [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
    "<javascript:alert(1)>",
    "[x][r]\n\n[r]: javascript:alert(1)",
    '[x](https://e.org/" onmouseover="alert(1))',
    '[x](https://e.org/ "t\" onmouseover=\"alert(1)")',
    "![pixel](https://tracker.example/p.gif)",
    "`<b>`",
    "| <b>x</b> | y |\n|---|---|\n| <i>1</i> | 2 |",
    "<details open ontoggle=alert(1)>",
])
def test_answer_markdown_never_passes_raw_html(hostile):
    from hermes_nb.display.markdown import to_html

    _assert_safe(to_html(hostile))


_ALLOWED_TAGS = {"p", "strong", "em", "code", "pre", "a", "ul", "ol", "li", "h3", "h4", "h5", "h6", "blockquote",
                 "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "s"}


def _assert_safe(out: str) -> None:
    """Every tag in ``out`` is one we emit, with only our attributes, links only http(s)/mailto."""
    from html.parser import HTMLParser

    from hermes_nb.display.markdown import CODE_STYLE

    class Check(HTMLParser):
        def handle_starttag(self, tag, attrs):
            assert tag in _ALLOWED_TAGS, (tag, out)
            for name, value in attrs:
                if name == "href":
                    assert value.lower().startswith(("http://", "https://", "mailto:")), out
                elif name == "style":
                    assert value == CODE_STYLE or value.startswith("border:1px solid var(--jp-border"), out
                else:
                    assert (name, value) in {("target", "_blank"), ("rel", "noopener noreferrer"),
                                             ("title", value)}, (name, out)

    Check().feed(out)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("<>&\"'`*_[]()!:/| -=#\n\\abjsx\t") + ["javascript:", "<img", "href=",
                                                                       "<script>", "data:", "]("]),
                max_size=40).map("".join))
def test_hostile_markdown_never_yields_a_tag_or_attribute_of_its_own(text):
    from hermes_nb.display.markdown import to_html

    _assert_safe(to_html(text))


def test_final_answer_is_markdown_in_html_and_plain_in_text():
    from hermes_nb.agent.loop import AgentResult

    result = AgentResult(text="- **Paris:** sunny\n- <i>Oslo</i>", messages=[], tool_calls=[],
                         usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}, iterations=1,
                         stopped_reason="done")
    bundle = result._repr_mimebundle_()
    assert "<li><strong>Paris:</strong> sunny</li>" in bundle["text/html"] and "&lt;i&gt;Oslo" in bundle["text/html"]
    assert bundle["text/plain"].startswith("- **Paris:** sunny")
    t = live.Transcript(prompt="go", model="m")
    t.handle(TextDelta(delta="**done**"))
    assert "<strong>done</strong>" in live.transcript_html(t) and "**done**" in live.transcript_text(t)


class _Handle:
    def __init__(self) -> None:
        self.updates: list[dict[str, str]] = []

    def update(self, obj, raw=False):
        self.updates.append(obj)


def test_html_view_throttles_and_ends_static(monkeypatch):
    import IPython.display

    shown = []
    handle = _Handle()
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: (shown.append(obj), handle)[1])
    clock = [100.0]
    monkeypatch.setattr(views, "_clock", lambda: clock[0])
    view = live.make_view("html", prompt="go", model="m")
    assert isinstance(view, live.HtmlView) and len(shown) == 1
    for i in range(50):  # a burst within the same instant: one update
        view.handle(TextDelta(delta=str(i)))
        view.tick()
    assert len(handle.updates) == 1
    clock[0] += 1.01 / live.MAX_UPDATES_PER_S
    view.tick()
    assert len(handle.updates) == 2
    view.tick()  # nothing new: no update
    assert len(handle.updates) == 2

    class Result:
        stopped_reason, iterations, usage = "done", 1, {}

    view.finish(Result())
    final = handle.updates[-1]
    assert "running…" not in final["text/html"] and "0123" in final["text/plain"]


def test_make_view_defaults_to_text_outside_a_kernel(capsys):
    assert isinstance(live.make_view(None, prompt="p", model="m"), live.TextView)
    assert isinstance(live.make_view(False, prompt="p", model="m"), live.NullView)
    assert "You: p" in capsys.readouterr().out


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    return InteractiveShell.instance()


def test_agent_magics_load_unload_load(shell):
    from hermes_nb import startup
    for _ in range(2):
        undo = startup.agent(shell)
        assert "agent" in shell.magics_manager.magics["cell"] and "agent" in shell.magics_manager.magics["line"]
        undo()
        undo()  # idempotent
        assert "agent" not in shell.magics_manager.magics["cell"]
        assert "agent" not in shell.magics_manager.magics["line"]


def test_agent_magic_usage_errors(shell):
    from hermes_nb import startup
    from hermes_nb.magics import agent as agent_magics
    undo = startup.agent(shell)
    try:
        with pytest.raises(UsageError, match="cell is empty"):
            shell.run_cell_magic("agent", "", "   ")
        with pytest.raises(UsageError, match="unknown toolset 'zzz'"):
            shell.run_cell_magic("agent", "--toolsets zzz", "hi")
        with pytest.raises(UsageError, match="takes 'reset'"):
            shell.run_line_magic("agent", "")
        shell.run_line_magic("agent", "reset")  # before any agent exists: fine
        with pytest.raises(UsageError, match="--out needs a Python variable name"):
            shell.run_cell_magic("agent", "--model replay:/nonexistent.json --out 1bad", "hi")
        assert agent_magics.current_agent() is None  # refused before any agent was made or model called
    finally:
        undo()


def test_agent_magic_replay_with_out(shell, tmp_path):
    import json

    from hermes_nb import startup
    from hermes_nb.magics import agent as agent_magics
    cassette = tmp_path / "c.json"
    cassette.write_text(json.dumps({"version": 1, "model": "m", "turns": [
        {"request": {}, "response": {"content": "one", "tool_calls": [], "usage": {}}},
        {"request": {}, "response": {"content": "two", "tool_calls": [], "usage": {}}}]}))
    undo = startup.agent(shell)
    try:
        first = shell.run_cell_magic("agent", f"--model replay:{cassette} --out got", "hello")
        assert first.text == "one" and shell.user_ns["got"] is first
        second = shell.run_cell_magic("agent", "", "and again")
        assert second.text == "two"
        assert [m["content"] for m in agent_magics.current_agent().messages] == ["hello", "one", "and again", "two"]
        shell.run_line_magic("agent", "reset")
        assert agent_magics.current_agent().messages == []
    finally:
        undo()
    assert agent_magics.current_agent() is None


def test_agent_magic_reports_missing_model_in_one_line(shell, tmp_path):
    from hermes_nb import startup
    undo = startup.agent(shell)
    try:
        with pytest.raises(UsageError, match="no model configured"):
            shell.run_cell_magic("agent", "--model some-model", "hi")
        with pytest.raises(UsageError, match="replay cassette not found"):
            shell.run_cell_magic("agent", f"--model replay:{tmp_path / 'none.json'}", "hi")
    finally:
        undo()


def test_a_result_shown_live_does_not_repeat_its_answer():
    """%%agent: the live transcript already holds the answer; the cell's value adds only the stats."""
    from types import SimpleNamespace

    from hermes_nb.agent.loop import AgentResult
    from hermes_nb.models import empty_usage

    base = dict(text="The answer is 42.", messages=[], tool_calls=[], usage=empty_usage(), iterations=1,
                stopped_reason="done")
    shown = AgentResult(**base, transcript=SimpleNamespace(shown_live=True))
    bundle = shown._repr_mimebundle_()
    assert "42" not in bundle["text/html"] and "42" not in bundle["text/plain"]
    assert "done · 1 turn(s)" in bundle["text/plain"] and "the answer is above" in bundle["text/html"]
    unshown = AgentResult(**base)._repr_mimebundle_()
    assert "The answer is 42." in unshown["text/html"] and "The answer is 42." in unshown["text/plain"]


def test_a_scripts_calls_are_cards_nested_under_its_own(capsys):
    """execute_code's inner calls: cards under the script's card (HTML and text), not calls of the model."""
    view = views.TextView(prompt="go", model="m")
    view.handle(ToolCallQueued(index=0, id="s", name="execute_code", arguments='{"code": "..."}'))
    view.handle(ToolStarted(tool_call_id="s", time=1.0))
    for i, text in enumerate(["<a>", "b"]):
        view.handle(ToolCallQueued(index=0, id=f"s.{i}", name="shout", arguments=f'{{"text": "{text}"}}', parent="s"))
        view.handle(ToolStarted(tool_call_id=f"s.{i}", time=1.1 + i))
        inner = _result(f"s.{i}", "shout", text.upper(), 1.1 + i, 1.2 + i)
        view.handle(ToolEnded(tool_call_id=f"s.{i}", time=1.2 + i, result=inner))
    t = view.transcript
    running = live.transcript_html(t)
    assert running.count("⏳ running…") == 1 and 'class="hermes-nb-nested"' in running  # shown while it runs
    script = _result("s", "execute_code", '{"status": "success"}', 1.0, 3.0)
    view.handle(ToolEnded(tool_call_id="s", time=3.0, result=script))
    view.handle(BatchDone(records=(_record(script),)))
    assert [item[1].name for item in t.items if item[0] == "tool"] == ["execute_code"]  # one call of the model
    html = live.transcript_html(t)
    nested = html.split('class="hermes-nb-nested"', 1)[1]
    assert nested.count("<b>shout</b>") == 2 and "&lt;A&gt;" in nested and "<a>" not in html  # escaped
    assert live.transcript_text(t).splitlines()[-2:] == ["      ✓ shout 0.10 s → <A>", "      ✓ shout 0.10 s → B"]
    printed = capsys.readouterr().out.splitlines()
    assert printed.count("      ✓ shout 0.10 s → B") == 1  # each line once, indented; the script's line alone
    assert printed[-1].startswith("  ✓ execute_code 2.00 s")


def test_a_sub_agents_call_prints_its_own_line_when_a_goal_is_delegated_again(capsys):
    """Text view: a sub-agent's finished call is found by its event's ids, not by its label, which repeats
    when the model delegates the same goal in a later turn (its calls' ids may repeat too)."""
    from hermes_nb.agent.events import ChildEvent

    view = views.TextView(prompt="go", model="m")
    label = "sub-agent 1: count the rows"
    for parent, rows in (("d1", "3 rows"), ("d2", "5 rows")):
        view.handle(ToolCallQueued(index=0, id=parent, name="delegate_task", arguments="{}"))
        view.handle(ToolStarted(tool_call_id=parent, time=1.0))
        for inner in (ToolCallQueued(index=0, id="c0", name="probe", arguments="{}"),
                      ToolStarted(tool_call_id="c0", time=1.0),
                      ToolEnded(tool_call_id="c0", time=1.5, result=_result("c0", "probe", rows, 1.0, 1.5))):
            view.handle(ChildEvent(tool_call_id=parent, index=0, label=label, event=inner))
    lines = [line for line in capsys.readouterr().out.splitlines() if "↳" in line]
    assert lines == [f"    ↳ {label[:40]} ✓ probe 0.50 s → 3 rows", f"    ↳ {label[:40]} ✓ probe 0.50 s → 5 rows"]


def test_text_shows_what_html_shows_of_a_scripts_call():
    """An approval asked by a call a script made is a note on that call's card: the text transcript says it
    under the script too, as the HTML does (not only for the model's own calls)."""
    from hermes_nb.agent.events import ApprovalAnswered

    t = live.Transcript(prompt="go", model="m")
    t.handle(ToolCallQueued(index=0, id="s", name="execute_code", arguments='{"code": "..."}'))
    t.handle(ToolCallQueued(index=0, id="s.0", name="terminal", arguments='{"command": "rm -rf build"}', parent="s"))
    t.handle(ApprovalAnswered(command="rm -rf build", choice="once", message="approved once: rm -rf build"))
    assert t.cards["s.0"].notes and not t.cards["s"].notes  # the inner call asked
    html, text = live.transcript_html(t), live.transcript_text(t)
    assert "approved once: rm -rf build" in html.split('class="hermes-nb-nested"', 1)[1]
    lines = text.splitlines()
    note = next(i for i, line in enumerate(lines) if "approved once: rm -rf build" in line)
    assert lines[note].startswith("      ") and "terminal" in lines[note + 1]  # indented, above its call's line
