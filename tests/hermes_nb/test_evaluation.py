"""``hermes_nb.evaluate`` against the scripted model server (the real openai client over HTTP)."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

import hermes_nb
from hermes_nb.evaluation import EvalResult
from hermes_nb.tools.schema.derive import tool
from tests.support.fake_openai import Reply, call
from tests.support.interrupts import interrupts_land
from tests.support.routed_openai import RoutedOpenAI


def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


def shout(text: str) -> str:
    """Upper-cases text."""
    return text.upper()


@pytest.fixture
def tools() -> None:
    tool(add, toolset="t13e")
    tool(shout, toolset="t13e")


#: What the scripted model does for each prompt: the calls of its first turn (then it answers in text).
PLAN: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "add 2 and 3": [("add", {"a": 2, "b": 3})],
    "add 4 and 5": [("add", {"a": 4, "b": 50})],           # right tool, wrong argument
    "shout hi": [("add", {"a": 1, "b": 1})],               # wrong tool
    "say hello": [],                                        # no tool, as expected
    "shout and add": [("shout", {"text": "x"}), ("add", {"a": 1, "b": 2})],
}


def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
    calls = PLAN.get(prompt, [])
    if turn == 0 and calls:
        return Reply(tool_calls=tuple(call(n, a, f"c{i}") for i, (n, a) in enumerate(calls)))
    return Reply(content=f"done: {prompt}")


CASES: list[dict[str, Any]] = [
    {"prompt": "add 2 and 3", "expected_tools": ["add"], "expected_args": {"add": {"a": 2, "b": 3}},
     "check": lambda text: "done" in text},
    {"prompt": "add 4 and 5", "expected_tools": ["add"], "expected_args": {"add": {"a": 4, "b": 5}}},
    {"prompt": "shout hi", "expected_tools": ["shout"]},
    {"prompt": "say hello", "expected_tools": [], "check": lambda text: text.startswith("nope")},
    {"prompt": "shout and add", "expected_tools": ["add", "shout"]},
]


def _template(srv: RoutedOpenAI) -> dict[str, Any]:
    return {"model": "fake-model", "base_url": srv.base_url, "enabled_toolsets": ["t13e"], "stream": False}


def test_expected_and_unexpected_tool_choices_are_scored(tools: None) -> None:
    with RoutedOpenAI(route) as srv:
        result = hermes_nb.evaluate(CASES, agent=_template(srv), concurrency=4, display=False)
    assert isinstance(result, EvalResult)
    rows = {r.prompt: r for r in result.rows}
    assert [r.index for r in result.rows] == [0, 1, 2, 3, 4]
    assert rows["add 2 and 3"].selection_ok and rows["add 2 and 3"].args_ok and rows["add 2 and 3"].check_ok
    assert rows["add 4 and 5"].selection_ok and rows["add 4 and 5"].args_ok is False
    assert not rows["shout hi"].selection_ok and rows["shout hi"].tools_called == ("add",)
    assert rows["say hello"].selection_ok and rows["say hello"].tools_called == () and rows["say hello"].check_ok is False
    assert rows["shout and add"].selection_ok
    s = result.summary
    assert s["cases"] == 5 and s["selection_accuracy"] == pytest.approx(4 / 5)
    assert s["args_accuracy"] == pytest.approx(1 / 2) and s["check_accuracy"] == pytest.approx(1 / 2)
    assert s["tokens"] == sum(r.tokens for r in result.rows) > 0 and s["errors"] == 0
    assert result.per_tool["shout"]["accuracy"] == pytest.approx(1 / 2)  # missed once, right once
    assert result.per_tool["add"]["accuracy"] == pytest.approx(3 / 4)    # called once when not expected
    # every case was a fresh conversation: each first request holds only its own prompt
    firsts = [b for b in srv.requests if not any(m["role"] == "assistant" for m in b["messages"])]
    assert sorted(len([m for m in b["messages"] if m["role"] == "user"]) for b in firsts) == [1] * 5
    html = result._repr_mimebundle_()["text/html"]
    assert "<table" in html and 'class="hermes-nb-eval-chart"' in html and "80%" in html  # HTML bars (issue 26)
    df = result.to_pandas()
    assert list(df["selection_ok"]) == [True, True, False, True, True]
    assert {"prompt", "tools_called", "args_ok", "tokens", "seconds", "error"} <= set(df.columns)


def test_cases_from_a_dataframe_and_a_model_error_is_a_row(tools: None) -> None:
    import pandas as pd

    def broken(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        return Reply(status=401, content="bad key") if prompt == "fails" else route(prompt, turn, body)

    frame = pd.DataFrame([{"prompt": "add 2 and 3", "expected_tools": ["add"]},
                          {"prompt": "fails", "expected_tools": None}])
    with RoutedOpenAI(broken) as srv:
        result = hermes_nb.evaluate(frame, agent=_template(srv), display=False)
    assert result.rows[0].selection_ok and result.rows[0].error is None
    assert result.rows[1].error and "401" in result.rows[1].error
    assert result.summary["errors"] == 1


def test_a_case_whose_run_failed_passes_nothing(tools: None) -> None:
    """No calls match "no tool expected" and an empty answer "excludes" anything: a run that failed (the
    model's 401) decided neither, so it is scored as a miss, not as a pass."""
    from hermes_nb.evaluation.expect import Expect

    def broken(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        return Reply(status=401, content="bad key")

    cases = [{"prompt": "say hello", "expected_tools": [],
              "expects": [Expect(kind="final_response_excludes", value="sorry")]},
             {"prompt": "say nothing", "score_selection": False}]
    with RoutedOpenAI(broken) as srv:
        result = hermes_nb.evaluate(cases, agent=_template(srv), display=False)
    failed, unscored = result.rows
    assert failed.error and "401" in failed.error
    assert (failed.selection_ok, failed.args_ok, failed.check_ok) == (False, None, False)
    assert (unscored.selection_ok, unscored.check_ok) == (None, None)  # not scored stays not scored
    assert result.summary["selection_accuracy"] == 0 and result.summary["errors"] == 2


def test_template_mistakes_are_said_at_once() -> None:
    with pytest.raises(TypeError, match="unknown agent template key 'modle'"):
        hermes_nb.evaluate([{"prompt": "x"}], agent={"modle": "x"})
    with pytest.raises(ValueError, match="case 0: 'prompt'"):
        hermes_nb.evaluate([{"expected_tools": []}], agent={})


def test_resume_after_an_interrupt_sends_only_unfinished_cases(tools: None, tmp_path: Path) -> None:
    import _thread

    cases = [{"prompt": f"add {i} and 1", "expected_tools": ["add"]} for i in range(12)]
    plan_route = _adds(len(cases))
    main = threading.main_thread()
    checkpoint = tmp_path / "run" / "checkpoint.json"

    def interrupt_after_four(body: dict[str, Any]) -> None:
        # interrupt the evaluation once four cases are on disk (checked on a later request)
        if checkpoint.exists() and len(json.loads(checkpoint.read_text())["completed"]) >= 4 and main.is_alive():
            if not fired.is_set():
                fired.set()
                _thread.interrupt_main()

    fired = threading.Event()
    with RoutedOpenAI(plan_route, on_request=interrupt_after_four) as srv:
        with interrupts_land():
            first = hermes_nb.evaluate(cases, agent=_template(srv), concurrency=2, out_dir=tmp_path / "run",
                                       display=False)
        assert first.summary["interrupted"] and fired.is_set()
        done_first = {r.index for r in first.rows}
        on_disk = set(map(int, json.loads(checkpoint.read_text())["completed"]))
        assert done_first <= on_disk and 4 <= len(on_disk) < 12
        before = len(srv.requests)
        srv.on_request = None
        second = hermes_nb.evaluate(cases, agent=_template(srv), concurrency=2, out_dir=tmp_path / "run",
                                    display=False)
        sent_again = {_prompt(b) for b in srv.requests[before:]}
    assert not second.summary["interrupted"] and second.summary["cases"] == 12
    assert sent_again == {c["prompt"] for i, c in enumerate(cases) if i not in on_disk}
    assert {r.index for r in second.rows if r.resumed} == on_disk
    assert all(r.selection_ok for r in second.rows)
    lines = (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["prompt_index"] for line in lines) == list(range(12))


def test_trajectories_parse_as_hermes_batch_runner_format(tools: None, tmp_path: Path) -> None:
    with RoutedOpenAI(route) as srv:
        hermes_nb.evaluate(CASES, agent=_template(srv), out_dir=tmp_path, display=False)
    entries = [json.loads(line) for line in (tmp_path / "trajectories.jsonl").read_text().splitlines()]
    assert sorted(e["prompt_index"] for e in entries) == [0, 1, 2, 3, 4]
    for entry in entries:
        _check_hermes_entry(entry)
    both = next(e for e in entries if e["prompt_index"] == 4)
    calls = [json.loads(m) for m in re.findall(r"<tool_call>\n(.*?)\n</tool_call>", both["conversations"][2]["value"])]
    assert calls == [{"name": "shout", "arguments": {"text": "x"}}, {"name": "add", "arguments": {"a": 1, "b": 2}}]
    responses = [json.loads(m) for m in re.findall(r"<tool_response>\n(.*?)\n</tool_response>",
                                                    both["conversations"][3]["value"])]
    assert [(r["name"], r["content"]) for r in responses] == [("shout", "X"), ("add", "3")]  # only {...} or [...] is parsed, as in Hermes
    assert both["tool_stats"] == {"shout": {"count": 1, "success": 1, "failure": 0},
                                  "add": {"count": 1, "success": 1, "failure": 0}}


def _check_hermes_entry(entry: dict[str, Any]) -> None:
    """The fields and turn shapes Hermes's batch_runner writes and its loaders read."""
    assert {"prompt_index", "conversations", "metadata", "completed", "partial", "api_calls", "toolsets_used",
            "tool_stats", "tool_error_counts"} <= entry.keys()
    turns = entry["conversations"]
    assert [t["from"] for t in turns[:2]] == ["system", "human"]
    assert "<tools>" in turns[0]["value"]
    for prev, turn in zip(turns, turns[1:], strict=False):
        assert set(turn) == {"from", "value"} and turn["from"] in {"human", "gpt", "tool"}
        if turn["from"] == "tool":
            assert prev["from"] == "gpt" and "<tool_call>" in prev["value"]
        if turn["from"] == "gpt":
            assert turn["value"].startswith("<think>")
    assert turns[-1]["from"] == "gpt" and entry["completed"] is True
    assert {"batch_num", "timestamp", "model"} <= entry["metadata"].keys()
    for stats in entry["tool_stats"].values():
        assert set(stats) == {"count", "success", "failure"}


def test_cassettes_replay_the_whole_evaluation_to_the_same_table(tools: None, tmp_path: Path) -> None:
    with RoutedOpenAI(route) as srv:
        live = hermes_nb.evaluate(CASES, agent=_template(srv), record=tmp_path / "tape", display=False)
    assert len(list((tmp_path / "tape").glob("case-*.json"))) == len(CASES)
    replayed = hermes_nb.evaluate(CASES, agent={"enabled_toolsets": ["t13e"]}, replay=tmp_path / "tape",
                                  display=False)  # the server is closed: nothing goes to the network
    # the same table, except that the replay's usage is the recording's (issue 26: its price says so)
    strip = lambda r: {k: v for k, v in r.as_dict().items() if k not in ("seconds", "cost")}  # noqa: E731
    assert [strip(r) for r in replayed.rows] == [strip(r) for r in live.rows]
    assert {k: v for k, v in replayed.summary.items() if k not in ("seconds", "cost")} == {
        k: v for k, v in live.summary.items() if k not in ("seconds", "cost")}
    assert {r.cost for r in live.rows} == {"unknown price (local model)"}
    assert {r.cost for r in replayed.rows} == {"unknown price (recorded from a local model)"}


def test_cases_replaying_one_recording_at_once_each_start_from_its_first_turn(tools: None, tmp_path: Path) -> None:
    """A replay's place in its cassette is one conversation's: concurrent cases sharing the template's model
    took each other's turns (case 2 got turn 2's answer to its first request, then ran out of turns)."""
    from hermes_nb.agent.loop import Agent
    from hermes_nb.evaluation.template import from_agent
    from hermes_nb.models.replay import ReplayModel

    tape = tmp_path / "add.json"
    with RoutedOpenAI(route) as srv:
        Agent(**_template(srv), display=False, record=str(tape)).run("add 2 and 3")
    cases = [{"prompt": "add 2 and 3", "expected_tools": ["add"], "expected_args": {"add": {"a": 2, "b": 3}}}] * 4
    strict = Agent(model=ReplayModel(tape, on_drift="stop"), enabled_toolsets=["t13e"], display=False)
    for template in ({"model": f"replay:{tape}", "enabled_toolsets": ["t13e"]}, strict):
        result = hermes_nb.evaluate(cases, agent=template, concurrency=4, display=False)
        assert [(r.error, r.tools_called, r.args_ok, r.text) for r in result.rows] == \
            [(None, ("add",), True, "done: add 2 and 3")] * 4
    assert from_agent(strict)["model"].on_drift == "stop"  # the template's replay settings reach the cases
    used = ReplayModel(tape)  # a replay some agent has played to its end already: each case starts at turn 1
    Agent(model=used, enabled_toolsets=["t13e"], display=False).run("add 2 and 3")
    again = hermes_nb.evaluate(cases[:2], agent={"model": used, "enabled_toolsets": ["t13e"]}, display=False)
    assert [r.error for r in again.rows] == [None, None]

def test_progress_shows_as_text_outside_a_notebook(tools: None, capsys: pytest.CaptureFixture[str]) -> None:
    with RoutedOpenAI(route) as srv:
        hermes_nb.evaluate(CASES[:2], agent=_template(srv), display=False)
    err = capsys.readouterr().err
    # the last line leads with the measures, not a count of finished cases (issue 34: "3/3 (100%)" stood
    # above selection 67 %)
    assert err.splitlines()[-1].startswith("evaluate: 2 cases: selection 100%, args 50%"), err
    assert "2/2 (100%)" not in err


def _adds(n: int) -> Any:
    # a little latency per turn, so requests are still arriving after the first cases are on disk
    def answer(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        if turn == 0:
            a = int(prompt.split()[1])
            return Reply(tool_calls=(call("add", {"a": a, "b": 1}, "c0"),), delay=0.05)
        return Reply(content="ok", delay=0.05)

    return answer


def _prompt(body: dict[str, Any]) -> str:
    from tests.support.routed_openai import prompt_of

    return prompt_of(body)


def test_accuracy_per_tool_plots_with_matplotlib_or_as_svg(tools: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    with RoutedOpenAI(route) as srv:
        result = hermes_nb.evaluate(CASES, agent=_template(srv), display=False)
    fig = result.plot()
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["add", "shout"]
    assert [round(p.get_width(), 2) for p in fig.axes[0].patches] == [0.75, 0.5]
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # as if matplotlib were not installed
    chart = result.plot()
    assert chart._repr_svg_().startswith("<svg") and "75%" in chart._repr_svg_() and "50%" in chart._repr_svg_()


def test_agent_runs_on_the_background_loop_for_code_already_there(tools: None) -> None:
    """``Agent.run_on_loop``, the public entry evaluate's cases use: a whole conversation on the loop,
    nothing displayed; called from another thread it says what to call instead."""
    from hermes_nb.agent.loop import Agent
    from hermes_nb.tools import async_bridge
    from hermes_nb.tools.errors import BridgeError

    with RoutedOpenAI(route) as srv:
        agent = Agent(**_template(srv), display=False)
        result = async_bridge.submit(agent.run_on_loop("add 2 and 3")).result(timeout=60)
        assert result.stopped_reason == "done" and result.text == "done: add 2 and 3"
        assert [(r.name, r.content) for r in result.tool_calls] == [("add", "5")]
        assert [m["role"] for m in agent.messages] == ["user", "assistant", "tool", "assistant"]
        with pytest.raises(BridgeError, match=r"await agent\.arun\(\)"):
            _call_off_loop(agent)


def _call_off_loop(agent: Any) -> None:
    import asyncio

    asyncio.run(agent.run_on_loop("add 2 and 3"))  # a loop of this thread, not hermes_nb's


def test_cases_share_one_aiohttp_client_closed_when_the_run_ends(tools: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The local run talks through openai's aiohttp transport (less CPU per request) and closes it at the
    end; without openai's aiohttp extra it falls back to httpx and still runs."""
    import openai

    from hermes_nb.models import OpenAIModel

    aiohttp_client = openai.DefaultAioHttpClient
    made: list[Any] = []
    closed: list[Any] = []
    real_client, real_close = OpenAIModel._get_client, OpenAIModel.aclose

    def spy_client(self: OpenAIModel) -> Any:
        client = real_client(self)
        if client not in made:
            made.append(client)
        return client

    async def spy_close(self: OpenAIModel) -> None:
        closed.append(self._client)
        await real_close(self)

    monkeypatch.setattr(OpenAIModel, "_get_client", spy_client)
    monkeypatch.setattr(OpenAIModel, "aclose", spy_close)
    with RoutedOpenAI(route) as srv:
        result = hermes_nb.evaluate(CASES, agent=_template(srv), concurrency=4, display=False)
        assert result.summary["errors"] == 0
        assert len(made) == 1 and closed == made  # one client for every case, closed once
        assert isinstance(made[0]._client, aiohttp_client)

        def missing_extra(**kwargs: Any) -> Any:
            raise RuntimeError("To use the aiohttp client you must have installed the package with the `aiohttp` extra")

        monkeypatch.setattr(openai, "DefaultAioHttpClient", missing_extra)
        again = hermes_nb.evaluate(CASES, agent=_template(srv), concurrency=4, display=False)
    assert again.summary["errors"] == 0 and [r.selection_ok for r in again.rows] == [r.selection_ok for r in result.rows]
    assert len(made) == 2 and not isinstance(made[1]._client, aiohttp_client)
