"""Cost a class can trust (issue 35, the teacher's item 1): sub-agents in the total, placeholder usage not shown as
real, the price note once per transcript, a known model behind a local proxy priced, a replay priced as a model."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from hermes_nb.agent.cost import priced_as, run_cost
from hermes_nb.agent.loop import Agent
from hermes_nb.display.live import transcript_text
from hermes_nb.tools.registry import registry
from tests.support.fake_openai import FakeOpenAI, Reply, call
from tests.support.routed_openai import RoutedOpenAI

ADD = {"description": "Add two numbers.", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}


def _usage(p: int, c: int) -> dict[str, int]:
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def _script() -> list[Reply]:
    return [Reply(content="Adding.", tool_calls=(call("add", {"a": 2, "b": 3}, "c1"),), usage=_usage(100, 20)),
            Reply(content="5", usage=_usage(160, 10))]


@pytest.fixture(autouse=True)
def add_tool() -> None:
    registry.register("add", "math", ADD, lambda a, **kw: str(a["a"] + a["b"]), read_only=True)


def _list_price(p: int, c: int) -> Decimal:
    from genai_prices import Usage, calc_price

    return Decimal(calc_price(Usage(input_tokens=p, output_tokens=c), "gpt-4o-mini").total_price)


def test_a_known_model_behind_a_local_proxy_is_priced_by_its_name() -> None:
    with FakeOpenAI(_script()) as srv:  # the scripted server listens on 127.0.0.1, as a proxy would
        result = Agent(model="gpt-4o-mini", base_url=srv.base_url, enabled_toolsets=["math"], display=False).run("2+3?")
    assert result.cost is not None and result.cost.total.usd == _list_price(100, 20) + _list_price(160, 10)
    # a name the table does not know, on a local URL, is still the server's own model
    with FakeOpenAI(_script()) as srv:
        local = Agent(model="qwen-local-7b", base_url=srv.base_url, enabled_toolsets=["math"], display=False).run("x")
    assert str(local.cost.total) == "unknown price (local model)"


def test_a_run_is_priced_as_a_named_model(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with FakeOpenAI(_script()) as srv:
        Agent(model="my-local", base_url=srv.base_url, enabled_toolsets=["math"], record=str(path), display=False).run("2+3?")
    replayed = Agent(model=f"replay:{path}", enabled_toolsets=["math"], display=False).run("2+3?")
    assert replayed.cost is not None and replayed.cost.total.usd is None  # recorded from a local model
    as_mini = priced_as(replayed, "gpt-4o-mini")
    assert as_mini.total.usd == _list_price(100, 20) + _list_price(160, 10)
    assert str(as_mini.total).endswith("for the recorded usage") and as_mini.total.tokens == 290


def test_the_unknown_price_reason_is_said_once_per_transcript() -> None:
    with FakeOpenAI(_script()) as srv:
        result = Agent(model="qwen-local-7b", base_url=srv.base_url, enabled_toolsets=["math"]).run("2+3?")
    text = transcript_text(result.transcript)
    assert text.count("(local model)") == 1, text  # on the footer; was on every turn line too
    assert text.count("unknown price") == 3  # two turn lines, short, and the footer


def test_a_placeholder_cassette_usage_is_not_shown_as_real(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    with FakeOpenAI(_script()) as srv:
        Agent(model="gpt-4o-mini", base_url=srv.base_url, enabled_toolsets=["math"], record=str(path),
              display=False).run("2+3?")
    data = json.loads(path.read_text())
    data["usage"] = "placeholder"  # what the notebooks' scripted recordings say
    path.write_text(json.dumps(data))
    result = Agent(model=f"replay:{path}", enabled_toolsets=["math"]).run("2+3?")
    assert all(t.placeholder for t in result.turns)
    assert result.cost is not None and result.cost.total.usd is None
    assert str(result.cost.total) == "unknown price (placeholder usage of a scripted recording)"
    text = transcript_text(result.transcript)
    assert "100 + 20 tokens" not in text and "$" not in text
    from hermes_nb.display.live.seen import seen_html

    assert "placeholder usage (a scripted recording)" in seen_html(result.turns[0], None)


def test_a_runs_total_includes_its_sub_agents() -> None:
    def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        if prompt == "count birds":
            return (Reply(tool_calls=(call("delegate_task", {"tasks": [{"goal": "count penguins"},
                                                                     {"goal": "count puffins"}]}, "d1"),),
                          usage=_usage(200, 100)) if turn == 0 else Reply(content="Both counted.", usage=_usage(200, 100)))
        return Reply(content=f"{prompt}: 12", usage=_usage(500, 100))

    with RoutedOpenAI(route) as srv:
        result = Agent(model="gpt-4o-mini", base_url=srv.base_url, enabled_toolsets=["delegation"],
                       stream=False).run("count birds")
    assert len(result.children) == 2
    assert result.usage["total_tokens"] == 600 + 2 * 600  # was 600: the parent's own turns only
    cost = result.cost
    assert cost is not None and cost.own is not None and len(cost.children) == 2
    assert cost.own.usd == 2 * _list_price(200, 100)
    assert cost.total.usd == 2 * _list_price(200, 100) + 2 * _list_price(500, 100)
    assert cost.total.tokens == 1800
    assert "= 1800 (with 2 sub-agent runs)" in transcript_text(result.transcript)
    assert run_cost(result.turns, Agent(model="gpt-4o-mini", base_url=srv.base_url).model).total.tokens == 600
