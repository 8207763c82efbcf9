"""Text can never break the history: split surrogate pairs, lone surrogates, unsendable messages.

The real openai client against the scripted server; every case also checks that the next request (or
the next run) of the same agent goes through.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes_nb.agent.loop import Agent
from hermes_nb.models import OpenAIModel
from hermes_nb.tools.async_bridge import run_sync
from tests.support.fake_openai import FakeOpenAI, Reply, call

SCHEMA: dict[str, Any] = {"description": "t", "parameters": {"type": "object", "properties": {}}}
SPLIT = "abcdef😀 and 🚀 done"  # with 7-unit chunks the 😀's halves land in chunks 1 and 2


@pytest.fixture
def tools() -> None:
    from hermes_nb.tools.registry import registry

    registry.register("echo", "texting", SCHEMA, lambda a, **k: "echoed", read_only=True)
    registry.register("garble", "texting", SCHEMA, lambda a, **k: "bad \udc80 text", read_only=True)


def _agent(srv: FakeOpenAI, **kw: Any) -> Agent:
    return Agent(model="fake-model", base_url=srv.base_url, display=False, enabled_toolsets=["texting"], **kw)


def _sent(srv: FakeOpenAI, n: int) -> list[dict[str, Any]]:
    return srv.requests[n]["messages"]


def test_an_emoji_split_across_stream_chunks_is_joined() -> None:
    deltas: list[str] = []
    with FakeOpenAI([Reply(content=SPLIT, utf16_chunks=True)]) as srv:
        model = OpenAIModel(model="m", base_url=srv.base_url, api_key="k")
        turn = run_sync(model.complete([{"role": "user", "content": "x"}], [], on_text=deltas.append))
    assert turn.content == SPLIT
    assert "".join(deltas) == SPLIT  # the live display never gets half a character
    assert all(d.encode() for d in deltas)


@pytest.mark.usefixtures("tools")
def test_split_emoji_in_content_and_arguments_reach_the_next_request() -> None:
    script = [Reply(content=SPLIT, tool_calls=(call("echo", {"note": SPLIT}, "c1"),), utf16_chunks=True),
              Reply(content="fine")]
    with FakeOpenAI(script) as srv:
        result = _agent(srv).run("go")
    assert result.stopped_reason == "done" and result.text == "fine"
    assistant = _sent(srv, 1)[-2]
    assert assistant["content"] == SPLIT
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"note": SPLIT}


@pytest.mark.usefixtures("tools")
@pytest.mark.parametrize("stream", [True, False])
def test_a_lone_surrogate_in_a_tool_name_is_replaced_visibly(stream: bool) -> None:
    script = [Reply(tool_calls=(call("echo\ud800", {}, "c1"),)), Reply(content="fine")]
    with FakeOpenAI(script) as srv:
        agent = _agent(srv, stream=stream)
        result = agent.run("go")
    assert result.stopped_reason == "done" and result.text == "fine"
    sent = _sent(srv, 1)
    assert sent[-2]["tool_calls"][0]["function"]["name"] == "echo\ufffd"
    assert sent[-1]["tool_call_id"] == "c1" and json.loads(sent[-1]["content"])["error"] == "tool 'echo\ufffd' was not offered in this run"


@pytest.mark.usefixtures("tools")
def test_a_tool_result_with_a_lone_surrogate_is_replaced_visibly() -> None:
    with FakeOpenAI([Reply(tool_calls=(call("garble", {}, "c1"),)), Reply(content="fine")]) as srv:
        result = _agent(srv).run("go")
    assert result.stopped_reason == "done"
    assert _sent(srv, 1)[-1]["content"] == "bad \ufffd text"
    assert result.tool_calls[0].content == "bad \ufffd text"


@pytest.mark.usefixtures("tools")
def test_a_prompt_with_a_lone_surrogate_is_replaced_visibly() -> None:
    with FakeOpenAI([Reply(content="fine")]) as srv:
        result = _agent(srv).run("half \ud83d an emoji")
    assert result.stopped_reason == "done"
    assert _sent(srv, 0)[-1] == {"role": "user", "content": "half \ufffd an emoji"}


@pytest.mark.usefixtures("tools")
def test_unsendable_history_ends_the_run_with_an_error_and_the_next_run_works() -> None:
    with FakeOpenAI([Reply(content="fine")]) as srv:
        agent = _agent(srv)
        # a person editing the history by hand can put in anything
        agent.messages.append({"role": "user", "content": "poked \udc80 in", "extra": b"bytes"})
        first = agent.run("go")
        assert first.stopped_reason == "error"
        assert first.error is not None and "could not be sent" in first.error and "next run continues" in first.error
        assert srv.requests == []
        second = agent.run("again")
    assert second.stopped_reason == "done" and second.text == "fine"
    assert _sent(srv, 0)[0] == {"role": "user", "content": "poked \ufffd in", "extra": "b'bytes'"}


def test_a_tool_description_with_a_lone_surrogate_is_sent_cleaned() -> None:
    from hermes_nb.tools.registry import registry

    registry.register("odd", "oddset", {"description": "half \udc80 a character",
                                        "parameters": {"type": "object", "properties": {}}},
                      lambda a, **k: "odd", read_only=True)
    with FakeOpenAI([Reply(content="fine"), Reply(content="again")]) as srv:
        agent = Agent(model="fake-model", base_url=srv.base_url, display=False, enabled_toolsets=["oddset"])
        first, second = agent.run("go"), agent.run("more")
    assert first.stopped_reason == second.stopped_reason == "done"
    assert srv.requests[0]["tools"][0]["function"]["description"] == "half \ufffd a character"
    assert any("tool definition" in item[1] for item in first.transcript.items if item[0] == "notice")
