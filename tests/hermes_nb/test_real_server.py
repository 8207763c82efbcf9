"""hermes_nb against a real OpenAI-compatible server written by others: llama-cpp-python 0.3.36's
``llama_cpp.server`` with SmolLM2-135M-Instruct (``tests.support.llama_server``, one per session).

What is asserted is what a model cannot make flaky: the request shapes are accepted, a forced call is made,
dispatched and answered, ``max_tokens`` cuts end ``length``, streaming and not agree, usage is reported or
said to be missing, the model is named, an interrupt mid-generation leaves a history the server takes.
Never the model's arithmetic.
"""

from __future__ import annotations

import _thread
import json
import threading

import pytest

from hermes_nb.agent.loop import Agent
from hermes_nb.display.live.render import transcript_text, usage_text
from tests.support.interrupts import interrupts_land
from tests.support.llama_server import LlamaServer

# the first run on a machine may compile llama-cpp-python (make test builds it first; a lone run waits)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


@pytest.fixture
def adder():
    from hermes_nb.tools.registry import registry

    seen = []

    def add(args, **kw):
        seen.append(args)
        return str(args["a"] + args["b"])

    registry.register("add", "arith", {"description": "Add two integers.", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"]}}, add, read_only=True, source="notebook")
    return seen


def _agent(server: LlamaServer, **kw) -> Agent:
    kw.setdefault("display", False)
    kw.setdefault("enabled_toolsets", [])
    kw.setdefault("temperature", 0.0)
    kw.setdefault("seed", 1)
    kw.setdefault("max_retries", 0)
    return Agent(base_url=server.base_url, **kw)


def _errors(server: LlamaServer) -> list[str]:
    return [line for line in server.log if '" 4' in line or '" 5' in line]


@pytest.mark.parametrize("stream", [True, False])
def test_required_yields_a_call_that_is_dispatched_answered_and_accepted(llama_server, adder, stream):
    before = len(_errors(llama_server))
    agent = _agent(llama_server, stream=stream, enabled_toolsets=["arith"], tool_choice="required",
                   max_iterations=2, max_tokens=48)
    result = agent.run("Add 2 and 3 with the add tool.")
    assert result.stopped_reason in ("done", "length"), result.error  # forced, then answered (tool_choice none)
    assert result.tool_calls and result.tool_calls[0].name == "add"
    assert adder and all(isinstance(a.get("a"), int) and isinstance(a.get("b"), int) for a in adder)
    call_ids = [tc["id"] for m in result.messages if m["role"] == "assistant" for tc in m.get("tool_calls", ())]
    answered = [m["tool_call_id"] for m in result.messages if m["role"] == "tool"]
    assert call_ids and sorted(call_ids) == sorted(answered)  # every call has its one answer
    assert result.iterations == 2  # the history with the call and its answer was sent back, and taken
    assert len(_errors(llama_server)) == before, _errors(llama_server)[before:]


@pytest.mark.parametrize("stream", [True, False])
def test_max_tokens_4_ends_length(llama_server, stream):
    result = _agent(llama_server, stream=stream, max_tokens=4, display="text").run("Tell me a long story.")
    assert result.stopped_reason == "length"
    assert result.text
    assert "max_tokens=4" in transcript_text(result.transcript)


def test_streaming_and_not_agree_on_the_record(llama_server, adder):
    records = []
    for stream in (True, False):
        result = _agent(llama_server, stream=stream, enabled_toolsets=["arith"], tool_choice="add",
                        max_iterations=1, max_tokens=48).run("Add 4 and 5.")
        records.append(result)
    streamed, whole = records
    assert [(r.name, json.loads(r.arguments)) for r in streamed.tool_calls] == \
        [(r.name, json.loads(r.arguments)) for r in whole.tool_calls]
    assert streamed.stopped_reason == whole.stopped_reason == "max_iterations"
    assert [m["role"] for m in streamed.messages] == [m["role"] for m in whole.messages]


def test_usage_is_reported_when_whole_and_said_missing_when_streamed(llama_server):
    whole = _agent(llama_server, stream=False, max_tokens=8).run("Say hello.")
    assert whole.usage["prompt_tokens"] > 0 and whole.usage["completion_tokens"] > 0
    assert "unreported" not in whole.usage
    streamed = _agent(llama_server, stream=True, max_tokens=8).run("Say hello.")
    assert streamed.usage["unreported"] == 1  # this server sends no usage chunk, include_usage or not
    assert usage_text(streamed.usage) == "tokens: not reported by the server"


def test_with_no_model_named_the_header_names_the_served_model(llama_server):
    result = _agent(llama_server, max_tokens=4, display="text").run("Hi")
    assert result.model == llama_server.gguf.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert transcript_text(result.transcript).splitlines()[0] == f"🤖 agent ({llama_server.gguf.name})"


def test_a_message_the_server_refuses_is_tried_twice_and_its_own_words_are_kept(llama_server):
    agent = _agent(llama_server, max_retries=3, max_tokens=4)
    agent.messages = [{"role": "tool", "content": "a tool answer with no call"}]  # no tool_call_id: refused
    notices = []
    real = agent.model.complete

    async def complete(messages, tools, *, on_text=None, on_retry=None):
        return await real(messages, tools, on_text=on_text, on_retry=lambda m: notices.append(m))

    agent.model.complete = complete  # type: ignore[method-assign]
    result = agent.run("Hi")
    assert result.stopped_reason == "error"
    assert len(notices) == 1 and "HTTP 500" in notices[0]  # one retry, then the same answer: not again
    assert "the same error twice" in result.error
    assert "tool_call_id: Field required" in result.error
    assert "Input should be 'system'" not in result.error


def test_an_interrupt_mid_generation_leaves_a_history_the_server_takes(llama_server):
    agent = _agent(llama_server, stream=True, max_tokens=400)
    talking = threading.Event()
    real = agent.model.complete

    async def complete(messages, tools, *, on_text=None, on_retry=None):
        def heard(delta: str) -> None:
            talking.set()
            if on_text is not None:
                on_text(delta)
        return await real(messages, tools, on_text=heard, on_retry=on_retry)

    agent.model.complete = complete  # type: ignore[method-assign]
    timer = threading.Thread(target=lambda: (talking.wait(120), _thread.interrupt_main()))
    with interrupts_land():
        timer.start()
        result = agent.run("Write a very long story about a dragon who learns to bake bread.")
        timer.join()
    assert result.stopped_reason == "interrupted"
    assert result.messages[-1]["role"] == "user"  # no half answer kept
    again = agent.run("Now say hello.")
    assert again.stopped_reason in ("done", "length"), again.error
