"""What the model saw, turn by turn; a replay asked another conversation says so; what a run cost
(issue 26, items 1, 10 and 11)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from hermes_nb.agent.cost import run_cost
from hermes_nb.agent.loop import Agent
from hermes_nb.display.live import transcript_html, transcript_text
from hermes_nb.models import OpenAIModel
from hermes_nb.models.replay import ReplayDriftError, ReplayModel, load_cassette
from hermes_nb.tools.registry import registry
from tests.support.fake_openai import FakeOpenAI, Reply, call

ADD = {"description": "Add two numbers.", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}
SCRIPT = [Reply(content="Adding.", tool_calls=(call("add", {"a": 2, "b": 3}, "c1"), call("add", {"a": 1, "b": 1}, "c2")),
                usage={"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}),
          Reply(content="2 + 3 = 5", usage={"prompt_tokens": 160, "completion_tokens": 10, "total_tokens": 170})]


@pytest.fixture
def add_tool():
    registry.register("add", "math", ADD, lambda a, **kw: str(a["a"] + a["b"]) * (1 + 2 * (a["a"] == 2)),
                      read_only=True)


@pytest.fixture
def recorded(tmp_path: Path, add_tool):
    path = tmp_path / "session.json"
    with FakeOpenAI(list(SCRIPT)) as srv:
        result = Agent(model="gpt-x", base_url=srv.base_url, enabled_toolsets=["math"], record=str(path),
                       system_prompt="You add.", display=False).run("What is 2 + 3?")
        requests = srv.requests
    return path, result, requests


def test_each_turn_keeps_the_request_it_sent_and_the_response(recorded) -> None:
    _, result, requests = recorded
    assert len(result.turns) == 2 == len(requests)
    for turn, sent in zip(result.turns, requests, strict=True):
        assert [m["role"] for m in turn.request.messages] == [m["role"] for m in sent["messages"]]
        assert [t["function"]["name"] for t in sent["tools"]] == list(turn.request.tool_names) == ["add"]
    first, second = result.turns
    assert first.request.messages[-1]["content"] == "What is 2 + 3?"
    assert [c.name for c in first.response.tool_calls] == ["add", "add"]
    assert second.response.content == "2 + 3 = 5" and second.usage["prompt_tokens"] == 160
    assert [m["role"] for m in second.request.messages][-2:] == ["tool", "tool"]  # the results it read


def test_the_transcript_folds_what_the_model_saw_on_each_turn(recorded) -> None:
    _, result, _ = recorded
    html = transcript_html(result.transcript)
    assert html.count('<details class="hermes-nb-seen"') == 2
    assert "👁 what the model saw · turn 1" in html and "What is 2 + 3?" in html and "You add." in html
    second = html.split("👁 what the model saw · turn 2")[1]
    assert "… 2 earlier message(s), as in turn 1" in second  # not repeated: the fold shows what is new
    assert "tools offered: add" in html
    text = transcript_text(result.transcript)
    assert "👁 turn 2: the model saw 5 messages and 1 tools (result.turns[1].request)" in text


def test_the_cassette_keeps_the_request(recorded) -> None:
    path, result, _ = recorded
    turns = load_cassette(path)["turns"]
    assert turns[0]["request"]["messages"] == [{"role": "system", "content": "You add."},
                                               {"role": "user", "content": "What is 2 + 3?"}]
    assert turns[0]["request"]["definitions"][0]["function"]["name"] == "add"
    assert len(turns[1]["request"]["messages"]) == len(result.turns[1].request.messages)


def _replay(path: Path, **kw) -> Agent:
    agent = Agent(model=ReplayModel(path, chunk_delay=0, **kw), enabled_toolsets=["math"], display=False,
                  system_prompt=kw.pop("system", "You add."))
    return agent


def test_a_replay_asked_another_question_says_so(recorded) -> None:
    path, _, _ = recorded
    same = _replay(path).run("What is 2 + 3?")
    assert same.text == "2 + 3 = 5"  # the recorded conversation: no note
    other = _replay(path).run("What is the capital of France?")
    assert other.turns[0].response.content.startswith(
        "⚠️ **Replay drift** — recorded for another conversation: the prompt was “What is 2 + 3?” then, "
        "“What is the capital of France?” now")
    assert other.text == "⚠️ **Replayed from a different run** (see above).\n\n2 + 3 = 5"  # shown, marked
    # the turn keeps what was recorded beside what was sent, to show a class the recorded context
    assert other.turns[0].recorded and other.turns[0].recorded_request["messages"][-1]["content"] == "What is 2 + 3?"
    assert other.turns[0].request.messages[-1]["content"] == "What is the capital of France?"


def _first(result) -> str:
    return result.turns[0].response.content


def test_a_replay_with_another_system_prompt_or_tools_says_so(recorded) -> None:
    path, _, _ = recorded
    agent = Agent(model=ReplayModel(path, chunk_delay=0), enabled_toolsets=["math"], display=False,
                  system_prompt="You subtract.")
    assert "the system prompt was “You add.” then, “You subtract.” now" in _first(agent.run("What is 2 + 3?"))
    registry.register("mul", "math", ADD, lambda a, **kw: "6", read_only=True)
    agent = Agent(model=ReplayModel(path, chunk_delay=0), enabled_toolsets=["math"], display=False,
                  system_prompt="You add.")
    assert "the tools offered differ (+mul)" in _first(agent.run("What is 2 + 3?"))
    stop = Agent(model=ReplayModel(path, chunk_delay=0, on_drift="stop"), enabled_toolsets=["math"], display=False,
                 system_prompt="You add.")
    with pytest.raises(ReplayDriftError, match="the tools offered differ"):
        stop.run("What is 2 + 3?")


def test_cost_per_run_turn_and_tool_call_from_the_price_table(recorded) -> None:
    from genai_prices import Usage, calc_price

    _, result, _ = recorded
    priced_as = OpenAIModel(model="gpt-4o-mini", base_url=None, api_key="unused")  # a priced model, no call made
    cost = run_cost(result.turns, priced_as)
    expected = [calc_price(Usage(input_tokens=p, output_tokens=c), "gpt-4o-mini").total_price
                for p, c in ((100, 20), (160, 10))]
    assert [t.usd for t in cost.turns] == [Decimal(e) for e in expected]
    assert cost.total.usd == sum(Decimal(e) for e in expected) and cost.total.tokens == 290
    # the results added 160 - (100 + 20) = 40 tokens to the next request; "555" is three times "2" long
    assert (cost.tool_calls["c1"].tokens, cost.tool_calls["c2"].tokens) == (30, 10)
    assert cost.tool_calls["c1"].usd == Decimal(calc_price(Usage(input_tokens=30, output_tokens=0),
                                                           "gpt-4o-mini").total_price)
    assert str(cost.total).startswith("$0.0000")


def test_a_local_model_has_an_unknown_price_and_the_footer_says_so(recorded) -> None:
    _, result, _ = recorded  # recorded against the scripted server on 127.0.0.1
    assert result.cost is not None and result.cost.total.usd is None
    assert str(result.cost.total) == "unknown price (local model)"
    assert "unknown price (local model) (genai-prices)" in transcript_text(result.transcript)
    unknown = run_cost(result.turns, OpenAIModel(model="no-such-model-xyz", base_url=None, api_key="k"))
    assert str(unknown.total) == "unknown price (no price for 'no-such-model-xyz')"


def test_replayed_usage_is_marked_recorded(recorded, tmp_path: Path) -> None:
    path, _, _ = recorded
    data = json.loads(path.read_text())
    data.pop("local", None)
    data["model"] = "gpt-4o-mini"  # as if recorded from OpenAI
    (tmp_path / "openai.json").write_text(json.dumps(data))
    replayed = _replay(tmp_path / "openai.json").run("What is 2 + 3?")
    assert replayed.cost is not None and replayed.cost.total.recorded and replayed.cost.total.usd
    assert str(replayed.cost.total).endswith("for the recorded usage")
    local = _replay(path).run("What is 2 + 3?")
    assert str(local.cost.total) == "unknown price (recorded from a local model)"


def test_a_turn_request_keeps_only_what_changed_and_rebuilds_what_was_sent() -> None:
    """A run of n turns held every turn's whole conversation (n² references: the 1 000-turn soak grew
    20 KB a turn); each request now keeps what differs from the turn before, and rebuilds the rest."""
    from hermes_nb.agent.turns import make_request

    system, ask = {"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}
    history = [system, ask]
    tools = [{"type": "function", "function": {"name": "t"}}]
    first = make_request(list(history), tools)
    history += [{"role": "assistant", "content": "", "tool_calls": []}, {"role": "tool", "content": "1"}]
    second = make_request(list(history), [dict(tools[0])], first)  # an equal copy of the tools
    assert second.messages == tuple(history) and first.messages == (system, ask)
    assert [i for i, _ in second.changes] == [2, 3] and second.tools is first.tools
    listed = [{"role": "system", "content": "be brief\n\ndeferred: x"}, *history[1:]]  # the system line changed
    third = make_request(listed, tools, second)
    assert third.messages == tuple(listed) and [i for i, _ in third.changes] == [0]
    cut = make_request(listed[:2], tools, third)  # a shorter request (a history cut) rebuilds as sent too
    assert cut.messages == tuple(listed[:2]) and cut.changes == ()


def test_a_results_share_is_found_when_the_tool_listing_leaves_the_system_prompt() -> None:
    """The results of a turn's calls are the tool messages after the next request's last assistant message,
    wherever that request starts: a tool listing sent with one turn and not the next (no deferred tools
    left, no system prompt of its own) shifted the count, and the first result had no share."""
    from hermes_nb.agent.cost import run_cost
    from hermes_nb.agent.turns import new_turn
    from hermes_nb.models import ModelTurn, Usage

    ask = {"role": "user", "content": "add"}
    listing = {"role": "system", "content": "deferred tools: x"}
    answer = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}, {"id": "c2"}]}
    results = [{"role": "tool", "tool_call_id": "c1", "content": "55"}, {"role": "tool", "tool_call_id": "c2", "content": "5"}]
    model = OpenAIModel(model="gpt-4o-mini", base_url=None, api_key="unused")
    first = new_turn(1, [listing, ask], [], ModelTurn(usage=Usage(prompt_tokens=100, completion_tokens=20,
                                                                  total_tokens=120)), model)
    second = new_turn(2, [ask, answer, *results], [], ModelTurn(usage=Usage(prompt_tokens=150, completion_tokens=5,
                                                                            total_tokens=155)), model, first)
    shares = run_cost([first, second], model).tool_calls
    assert (shares["c1"].tokens, shares["c2"].tokens) == (20, 10)  # 150 - 120 = 30, split 2:1 by length
