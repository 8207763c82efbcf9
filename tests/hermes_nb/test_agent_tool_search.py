"""Tool search in the agent loop, against the scripted server and the real ``openai`` client: the request
offers the bridge instead of the deferred schemas, the system prompt lists them, and a ``tool_call`` runs
the real tool (its card, record and approval name it) while the model's history keeps what it called."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes_nb.agent.loop import Agent
from hermes_nb.display.live import transcript_text
from hermes_nb.tools.config import save_config
from hermes_nb.tools.registry import registry
from tests.support.fake_openai import FakeOpenAI, Reply, call

OBJ = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


@pytest.fixture
def weather() -> list[str]:
    ran: list[str] = []

    def now(args: dict[str, Any], **_: Any) -> str:
        ran.append(args["city"])
        return f"sunny in {args['city']}"

    registry.register("weather_now", "weather", {"description": "Current weather in a city.", "parameters": OBJ},
                      now, read_only=True, metadata={"defer": True}, emoji="☀️")
    registry.register("weather_storm", "weather", {"description": "Start a storm in a city.", "parameters": OBJ},
                      lambda a, **k: "storm", needs_approval=True, metadata={"defer": True})
    registry.register("greet", "hello", {"description": "Say hello.", "parameters": {"type": "object"}},
                      lambda a, **k: "hello")
    save_config({"tool_search": {"enabled": "on"}})
    return ran


def _bridge(name: str, args: dict[str, Any], id: str) -> dict[str, str]:
    return call("tool_call", {"calls": [{"name": name, "arguments": args}]}, id)


def test_a_run_finds_describes_and_calls_a_deferred_tool(weather: list[str]) -> None:
    script = [
        Reply(tool_calls=(call("tool_search", {"queries": ["weather city"]}, "s"),)),
        Reply(tool_calls=(call("tool_describe", {"names": ["weather_now"]}, "d"),)),
        Reply(tool_calls=(_bridge("weather_now", {"city": "Lima"}, "c"),)),
        Reply(content="It is sunny in Lima."),
    ]
    with FakeOpenAI(script) as srv:
        agent = Agent(model="gpt-4o", base_url=srv.base_url, display=False, enabled_toolsets=["weather", "hello"],
                      system_prompt="Be brief.")
        result = agent.run("Weather in Lima?")
    first = srv.requests[0]
    offered = sorted(t["function"]["name"] for t in first["tools"])
    assert offered == ["greet", "tool_call", "tool_describe", "tool_search"]  # no deferred schema is sent
    system = first["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Be brief.\n\nDeferred tools (2)")
    assert "- weather_now: Current weather in a city." in system["content"]
    assert agent.messages[0] == {"role": "system", "content": "Be brief."}  # the history keeps the person's own

    found = json.loads(srv.requests[1]["messages"][-1]["content"])
    assert found["results"][0]["matches"][0] == "weather_now"
    described = json.loads(srv.requests[2]["messages"][-1]["content"])
    assert described["tools"]["weather_now"]["parameters"] == OBJ
    answer = srv.requests[3]["messages"][-1]
    assert (answer["role"], answer["tool_call_id"], answer["content"]) == ("tool", "c", "sunny in Lima")
    kept = [m for m in agent.messages if m.get("tool_call_id") == "c"]
    assert [m["name"] for m in kept] == ["tool_call"]  # the history answers the call the model made
    assert weather == ["Lima"]

    names = [(r.name, json.loads(r.arguments)) for r in result.tool_calls]
    assert names[2] == ("weather_now", {"city": "Lima"})  # the record and the card name the real tool
    assert [n for n, _ in names[:2]] == ["tool_search", "tool_describe"]
    card = result.transcript.cards["c"]
    assert (card.name, card.emoji, json.loads(card.arguments)) == ("weather_now", "☀️", {"city": "Lima"})
    assert "✓ weather_now" in transcript_text(result.transcript) and result.text == "It is sunny in Lima."


def test_the_approval_asked_through_the_bridge_names_the_real_tool(weather: list[str]) -> None:
    asked: list[str] = []
    script = [Reply(tool_calls=(_bridge("weather_storm", {"city": "Oslo"}, "c"),)), Reply(content="refused")]
    with FakeOpenAI(script) as srv:
        agent = Agent(model="gpt-4o", base_url=srv.base_url, display=False, enabled_toolsets=["weather"],
                      approval_callback=lambda command, key, description: asked.append(command) or "deny")
        result = agent.run("Storm?")
    assert asked and "weather_storm" in asked[0]
    [record] = result.tool_calls
    assert record.name == "weather_storm" and record.is_error


def test_a_run_without_the_toolset_cannot_reach_its_tool_through_the_bridge(weather: list[str]) -> None:
    script = [Reply(tool_calls=(_bridge("weather_now", {"city": "Lima"}, "c"),)), Reply(content="no")]
    with FakeOpenAI(script) as srv:
        agent = Agent(model="gpt-4o", base_url=srv.base_url, display=False, enabled_toolsets=["hello"])
        result = agent.run("Weather?")
    assert sorted(t["function"]["name"] for t in srv.requests[0]["tools"]) == ["greet"]  # nothing deferred here
    [record] = result.tool_calls
    # nothing is deferred, so the bridge itself was not offered: the batch's scope refuses it before its handler
    assert record.name == "tool_call" and record.is_error
    assert json.loads(record.content) == {"error": "tool 'tool_call' was not offered in this run"}
    assert weather == []


@pytest.fixture
def plugin_tools() -> list[str]:
    """Unmarked plugin tools (deferrable by their source) in toolsets ``plug`` and ``other``, beside ``greet``."""
    ran: list[str] = []

    def handler(name: str) -> Any:
        return lambda args, **_: ran.append(name) or f"{name} ran"

    for name, toolset in (("plug_lookup", "plug"), ("plug_store", "plug"), ("other_wipe", "other")):
        registry.register(name, toolset, {"description": f"Plugin tool {name}.", "parameters": OBJ},
                          handler(name), source="plugin")
    registry.register("greet", "hello", {"description": "Say hello.", "parameters": {"type": "object"}},
                      lambda a, **k: "hello")
    save_config({"tools": {"tool_search": {"enabled": "on"}}})
    return ran


def test_unmarked_plugin_tools_are_deferred_and_reached_through_the_bridge_or_by_name(plugin_tools: list[str]) -> None:
    """Deferred tools of the run's catalog count as offered (issue 31's scope check): the bridge reaches them
    and so does a call by name; a plugin tool of a toolset the run did not tick is refused both ways."""
    script = [
        Reply(tool_calls=(_bridge("plug_lookup", {"city": "Lima"}, "a"), call("plug_store", {"city": "Oslo"}, "b"),
                          _bridge("other_wipe", {"city": "x"}, "c"), call("other_wipe", {"city": "x"}, "d"))),
        Reply(content="done"),
    ]
    with FakeOpenAI(script) as srv:
        agent = Agent(model="gpt-4o", base_url=srv.base_url, display=False, enabled_toolsets=["plug", "hello"])
        result = agent.run("Go")
    assert sorted(t["function"]["name"] for t in srv.requests[0]["tools"]) == [
        "greet", "tool_call", "tool_describe", "tool_search"]  # no plugin schema is sent
    assert "- plug_lookup: Plugin tool plug_lookup." in srv.requests[0]["messages"][0]["content"]
    assert sorted(plugin_tools) == ["plug_lookup", "plug_store"]
    by_id = {m["tool_call_id"]: m["content"] for m in srv.requests[1]["messages"] if m["role"] == "tool"}
    assert by_id["a"] == "plug_lookup ran" and by_id["b"] == "plug_store ran"
    assert json.loads(by_id["c"])["error"].startswith("tool_call did not run 'other_wipe': not deferred tools of")
    assert json.loads(by_id["d"]) == {"error": "tool 'other_wipe' was not offered in this run"}
    assert [r.is_error for r in result.tool_calls] == [False, False, True, True]


def test_a_pinned_plugin_toolset_is_sent_whole(plugin_tools: list[str]) -> None:
    save_config({"tools": {"tool_search": {"enabled": "on", "pin": ["plug"]}}})
    with FakeOpenAI([Reply(content="ok")]) as srv:
        Agent(model="gpt-4o", base_url=srv.base_url, display=False, enabled_toolsets=["plug", "hello"]).run("Go")
    assert sorted(t["function"]["name"] for t in srv.requests[0]["tools"]) == ["greet", "plug_lookup", "plug_store"]
    assert "Deferred tools" not in json.dumps(srv.requests[0]["messages"])
