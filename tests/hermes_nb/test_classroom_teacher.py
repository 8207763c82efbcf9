"""What a teacher could not show (issue 35, items 3-7), each as a class meets it."""

from __future__ import annotations

from typing import Any

from hermes_nb.evaluation.cases import CallMade, Outcome, as_cases
from hermes_nb.evaluation.result import build_result


def _outcome(index: int, calls: tuple[CallMade, ...]) -> Outcome:
    return Outcome(index=index, fingerprint="f", text="ok", calls=calls, tokens=10, seconds=0.1, api_calls=1,
                   stopped_reason="done", cost_usd=None, cost_note="local model")


# -- item 6: evaluation says "replayed", and a failed argument check shows what was sent ------------------------

def test_a_failed_argument_check_shows_the_arguments_sent() -> None:
    cases = as_cases([{"prompt": "50 F in C?", "expected_tools": ["convert"], "expected_args": {"convert": {"to": "C"}}},
                      {"prompt": "words?", "expected_tools": ["count"], "expected_args": {"count": {"text": "a b"}}},
                      {"prompt": "ok", "expected_tools": ["convert"], "expected_args": {"convert": {"to": "C"}}}])
    outcomes = {0: _outcome(0, (CallMade(name="convert", arguments={"value": 50, "to": "F"}),)),
                1: _outcome(1, ()),
                2: _outcome(2, (CallMade(name="convert", arguments={"value": 1, "to": "C"}),))}
    result = build_result(cases, outcomes, seconds=0.3)
    assert [r.args_sent for r in result.rows] == ['convert(value=50, to="F")', "no count call", ""]
    text = str(result)
    assert '✗ sent convert(value=50, to="F")' in text and "✗ sent no count call" in text
    assert "replayed" not in text


def test_a_replayed_evaluation_says_so_and_the_price_reason_once() -> None:
    cases = as_cases([{"prompt": "hi", "expected_tools": []}, {"prompt": "bye", "expected_tools": []}])
    result = build_result(cases, {0: _outcome(0, ()), 1: _outcome(1, ())}, seconds=0.1, replayed="cassettes/eval")
    text = str(result)
    assert "replayed from cassettes/eval (recorded turns, no model called)" in text.splitlines()[0]
    assert text.count("(local model)") == 1  # in the summary line; each row says "unknown"
    html: Any = result._repr_mimebundle_()["text/html"]
    assert "replayed from cassettes/eval" in html


# -- item 7: the smaller items ------------------------------------------------------------------------------------

def test_every_built_in_toolset_has_a_description_and_todo_list_is_not_listed_beside_todo() -> None:
    from hermes_nb.tools.model_tools import ensure_discovered
    from hermes_nb.tools.toolsets import get_all_toolsets, resolve_toolset, validate_toolset

    ensure_discovered()
    listed = get_all_toolsets()
    for name in ("todo", "memory", "session_search", "delegation", "tool_search", "file", "terminal"):
        assert listed[name]["description"], name  # six had none in the picker
    assert "todo" in listed and "todo_list" not in listed  # Hermes main's name for todo: a class saw both
    assert validate_toolset("todo_list") and resolve_toolset("todo_list") == ["todo_list"]  # still works by name


def test_the_demos_terminal_text_keeps_a_markdown_table_as_rows() -> None:
    from scripts.demo import _prose

    lines = _prose("| tool | cost |\n|---|---|\n| area | $0.01 |\n| volume | $0.02 |")
    assert lines[-3:] == ["| tool | cost |", "| area | $0.01 |", "| volume | $0.02 |"]  # was one run-on line



# -- item 4: "what the model saw" in full -------------------------------------------------------------------------

def _turn(messages: list[dict[str, Any]]) -> Any:
    from hermes_nb.agent.turns import new_turn
    from hermes_nb.models import ModelTurn

    return new_turn(1, messages, [], ModelTurn(content="ok", tool_calls=(), usage={}), object())


def test_a_long_message_the_model_saw_opens_whole_and_arguments_read_as_letters() -> None:
    import json

    from hermes_nb.display.live.seen import MESSAGE_CHARS, seen_html

    lines = [f"row {i}: " + "x" * 70 for i in range(22)] + ["row 22: the total is 500"]
    long = "\n".join(lines)
    assert len(long) > MESSAGE_CHARS and "500" not in long[:MESSAGE_CHARS]
    call = {"id": "c1", "type": "function",
            "function": {"name": "greet", "arguments": json.dumps({"who": "Andrée"})}}  # "Andr\u00e9e" as sent
    html = seen_html(_turn([{"role": "user", "content": "hi"},
                            {"role": "assistant", "content": None, "tool_calls": [call]},
                            {"role": "tool", "tool_call_id": "c1", "content": long}]), None)
    assert "the total is 500" in html  # the rest is one click away (it was cut at 1,500 chars)
    assert "show the other" in html and "<details" in html
    assert "Andrée" in html and "\\u00e9" not in html


# -- item 3: compare(...) of two toolset selections ----------------------------------------------------------------

def test_compare_puts_two_selections_side_by_side() -> None:
    import hermes_nb
    from hermes_nb.tools.registry import registry
    from tests.support.fake_openai import FakeOpenAI, Reply

    schema = {"description": "Add two numbers and say the sum in words.", "parameters": {"type": "object",
              "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}
    registry.register("add", "t35math", schema, lambda a, **k: "3", read_only=True)
    registry.register("shout", "t35text", {"description": "Upper.", "parameters": {"type": "object",
                      "properties": {"s": {"type": "string"}}}}, lambda a, **k: "HI", read_only=True)
    with FakeOpenAI([Reply(content="hello")] * 4) as srv:
        comparison = hermes_nb.compare(["t35math"], ["t35math", "t35text"], cases=[
            {"prompt": "hi", "expected_tools": []}, {"prompt": "bye", "expected_tools": []}],
            agent={"model": "m", "base_url": srv.base_url, "api_key": "k"}, display=False)
    a, b = comparison.sides
    assert a.tools == ("add",) and b.tools == ("add", "shout")
    assert a.schema_tokens["add"] == b.schema_tokens["add"] > b.schema_tokens["shout"] > 0
    rows = {r[0]: r[1:] for r in comparison.rows()}
    assert rows["tools offered"] == ("1", "2") and rows["  shout"] == ("–", str(b.schema_tokens["shout"]))
    assert rows["model turns"] == ("2", "2") and rows["selection accuracy"] == ("100%", "100%")
    assert rows["tokens"] == ("30", "30")  # the scripted server's usage, 15 a turn
    text = str(comparison)
    assert text.splitlines()[0].split() == ["t35math", "t35math,", "t35text"]
    assert "<table" in comparison._repr_mimebundle_()["text/html"]


def test_compare_says_what_a_selection_is() -> None:
    import pytest

    import hermes_nb
    from hermes_nb.tools.errors import UnknownToolsetError

    with pytest.raises(UnknownToolsetError, match="unknown toolset 'geometry'"):
        hermes_nb.compare(["geometry"], None)
    with pytest.raises(TypeError, match="a list of toolset names"):
        hermes_nb.compare([1], None)


# -- item 5: the plan's history in a saved notebook ---------------------------------------------------------------

def test_a_saved_transcript_keeps_every_state_of_the_plan() -> None:
    from hermes_nb.agent.events import TodoUpdated
    from hermes_nb.display.live import Transcript, transcript_html, transcript_text

    t = Transcript(prompt="plan it", model="m")
    states = [({"id": "1", "content": "count", "status": "in_progress"}, {"id": "2", "content": "plot", "status": "pending"}),
              ({"id": "1", "content": "count", "status": "completed"}, {"id": "2", "content": "plot", "status": "in_progress"}),
              ({"id": "1", "content": "count", "status": "completed"}, {"id": "2", "content": "plot", "status": "completed"})]
    for n, todos in enumerate(states):
        t.handle(TodoUpdated(tool_call_id=f"t{n}", todos=todos))
    html, text = transcript_html(t), transcript_text(t)
    assert html.count('class="hermes-nb-checklist"') == 1 and "updated 3×" in html  # one checklist, as live
    assert "how the plan changed (3 states)" in html
    assert "written: ▶ count · ☐ plot" in html and "update 1: ☑ count · ▶ plot" in html  # was: the last state only
    assert "update 2: ☑ count · ☑ plot" in text


# -- "Also": while a question's buttons wait, the transcript says it waits for you ----------------------------------

def test_while_a_question_waits_the_transcript_says_waiting_for_you(monkeypatch: Any) -> None:
    import threading
    import time

    from hermes_nb.agent.events import ToolCallQueued
    from hermes_nb.display.live.views import HtmlView
    from hermes_nb.tools import interaction

    drawn: list[str] = []

    class Handle:
        display_id = "d1"

        def update(self, bundle: dict[str, str], **kw: Any) -> None:
            drawn.append(bundle["text/html"])

    monkeypatch.setattr("IPython.display.display", lambda *a, **kw: Handle())
    monkeypatch.setattr("hermes_nb.display.live.views._clock", lambda: 0.0)  # always inside the throttle window
    view = HtmlView("run the script", "m")
    view.tick()
    view.handle(ToolCallQueued(index=0, id="c1", name="execute_code", arguments='{"code": "print(1)"}'))
    asked, answered = threading.Event(), threading.Event()

    def question() -> None:  # what an approval prompt is: run on the main thread, blocking until answered
        asked.set()
        answered.wait(10)

    with interaction.main_thread_waiting():
        worker = threading.Thread(target=lambda: interaction.run_on_main(question))
        worker.start()
        deadline = time.monotonic() + 10
        while not interaction.asking():  # the worker has queued its question
            assert time.monotonic() < deadline
        view.tick()  # the loop's drain before it services the question: drawn now, though throttled
        assert "waiting for you: answer the question below" in drawn[-1] and "waiting for the model" not in drawn[-1]
        answered.set()
        interaction.service()
        worker.join(10)
    view.tick()
    assert "waiting for you" not in view._bundle()["text/html"]
    view.abort("the run ended")  # its display ends (no later prompt's answer is its card's)


def test_an_inline_approvals_answer_goes_on_the_calls_card_and_nothing_stays_below(monkeypatch: Any) -> None:
    """After Deny the record sat below the transcript, apart from the call it answered (issue 35)."""
    from hermes_nb.agent.events import ToolCallQueued
    from hermes_nb.display.live.views import HtmlView
    from hermes_nb.display.prompts import ApprovalPrompt

    drawn: list[dict[str, str]] = []
    below: list[dict[str, str]] = []

    class Handle:
        display_id = "d1"

        def __init__(self, into: list[dict[str, str]]) -> None:
            self.into = into

        def update(self, bundle: dict[str, str], **kw: Any) -> None:
            self.into.append(bundle)

    monkeypatch.setattr("IPython.display.display", lambda *a, **kw: Handle(drawn))
    view = HtmlView("run the script", "m")
    view.handle(ToolCallQueued(index=0, id="c1", name="execute_code", arguments='{"code": "rm_all()"}'))
    for choice, said in (("deny", "Denied by you"), ("once", "Approved once by you")):
        prompt = ApprovalPrompt("rm_all()", "python-code", "runs code")
        prompt._handle = Handle(below)
        prompt.choose(choice)
        assert below[-1] == {"text/html": "", "text/plain": ""} and prompt.on_card  # nothing left below
        html, text = drawn[-1]["text/html"], drawn[-1]["text/plain"]
        card = html[html.index("execute_code"):]  # the note is the card's, under its line
        assert said in card and "rm_all()" in card, card
        assert f"{said}: `rm_all()`" in text
    view.abort("the run ended")  # its display ends: the next prompt is no call's
    prompt = ApprovalPrompt("rm x", "rm", "deletes")  # no run on show: the prompt keeps its own record
    prompt._handle = Handle(below)
    prompt.choose("deny")
    assert not prompt.on_card and "Denied" in below[-1]["text/html"] and below[-1]["text/plain"] == "Denied by you: `rm x`"


# -- 7: a reopened untrusted notebook shows the picker's text form: no line wider than a notebook ---------------------

def test_the_pickers_text_record_fits_a_notebooks_width() -> None:
    """Its rows ran to 223 characters and wrapped onto each other's columns (issue 35)."""
    from hermes_nb.display.picker import SelectionSummary, ToolsetPicker
    from hermes_nb.selection import Selection

    picker = ToolsetPicker(selection=Selection())
    try:
        for chosen in ([], ["hermes-core"], [r.name for r in picker.rows if not r.includes]):
            picker.selection.select(chosen)  # nothing, a composite (its members "covered by"), every plain one
            texts = {"picker": picker._repr_mimebundle_()["text/plain"],
                     "record": SelectionSummary.of(picker.selection, picker.rows)._repr_mimebundle_()["text/plain"]}
            for what, text in texts.items():
                widest = max(text.splitlines(), key=len)
                assert len(widest) <= 100, (chosen, what, widest)
            words = lambda s: s.split()  # noqa: E731 - nothing was cut, only folded
            assert words(picker.default_text()) == words(picker.text().split("\ntoolsets\n")[0])
            for row in picker.rows:
                assert " ".join(row.note.split()) in " ".join(picker.text().split()), row.name
    finally:
        picker.close()
