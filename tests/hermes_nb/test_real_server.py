"""hermes_nb against a real OpenAI-compatible server written by others: llama.cpp's own server, from
xllamacpp's prebuilt wheel, with SmolLM2-135M-Instruct (``tests.support.llama_server``, one per session).

What is asserted is what a model cannot make flaky: the request shapes are accepted, a demanded call is made
or its absence is said (this server answers SmolLM2's ``required`` in prose, and ignores the object form of a
named ``tool_choice`` with a warning: both noticed), ``max_tokens`` cuts end ``length``, streaming and not
agree, usage is reported both ways, the model is named, an interrupt mid-generation keeps the partial answer
marked as cut and leaves a history the server takes. Never the model's arithmetic.

llama-cpp-python's server, which these tests ran on before issue 34, taught quirks this one lacks (HTTP 500
on ``content: null``, no usage chunk when streaming, the function's name repeated in every chunk, an empty
500 for ``required``): ``test_models_seam`` keeps each as a scripted server.
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

# the runtime installs in seconds (a prebuilt wheel); the model turns are what take time on a busy machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


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
    return [line for line in server.log if " E " in line]  # the server's own errors (its warnings are asserted apart)


@pytest.mark.parametrize("stream", [True, False])
def test_required_is_a_call_dispatched_and_answered_or_its_absence_is_said(llama_server, adder, stream):
    before = len(_errors(llama_server))
    agent = _agent(llama_server, stream=stream, enabled_toolsets=["arith"], tool_choice="required",
                   max_iterations=3, max_tokens=48, display="text")
    result = agent.run("Add 2 and 3 with the add tool.")
    assert result.stopped_reason in ("done", "length", "max_iterations"), result.error
    if result.tool_calls:  # the server honoured it: dispatched, and every call has its one answer
        assert result.tool_calls[0].name == "add"
        call_ids = [tc["id"] for m in result.messages if m["role"] == "assistant" for tc in m.get("tool_calls", ())]
        answered = [m["tool_call_id"] for m in result.messages if m["role"] == "tool"]
        assert call_ids and sorted(call_ids) == sorted(answered)
    else:  # prose instead (what this server does with SmolLM2): said, not passed off as done
        assert "answered in prose although a tool call was required" in transcript_text(result.transcript)
    assert len(_errors(llama_server)) == before, _errors(llama_server)[before:]


def test_a_named_choice_this_server_ignores_is_sent_once_as_required_and_said(llama_server, adder):
    warned = sum("Wrong type supplied for parameter 'tool_choice'" in line for line in llama_server.log)
    agent = _agent(llama_server, enabled_toolsets=["arith"], tool_choice="add", max_iterations=2, max_tokens=48,
                   display="text")
    result = agent.run("Add 4 and 5.")
    text = transcript_text(result.transcript)
    ignored = sum("Wrong type supplied for parameter 'tool_choice'" in line for line in llama_server.log) - warned
    if ignored:  # the server dropped the object form (its log says so): the seam noticed, retried once, said
        assert ignored == 1, "the accepted form is kept for the rest of the run, not the refused one resent"
        assert "sent again as tool_choice='required'" in text
    assert result.stopped_reason in ("done", "length", "max_iterations"), result.error


@pytest.mark.parametrize("stream", [True, False])
def test_max_tokens_4_ends_length(llama_server, stream):
    result = _agent(llama_server, stream=stream, max_tokens=4, display="text").run("Tell me a long story.")
    assert result.stopped_reason == "length"
    assert result.text
    assert "max_tokens=4" in transcript_text(result.transcript)
    assert result.usage["completion_tokens"] == 4  # the server's count, not max_tokens + 1


def test_streaming_and_not_agree_on_the_record(llama_server):
    records = [_agent(llama_server, stream=stream, max_tokens=16).run("Name three colours.") for stream in (True, False)]
    streamed, whole = records
    assert streamed.text == whole.text  # temperature 0, one seed: the same tokens either way
    assert streamed.stopped_reason == whole.stopped_reason
    assert [m["role"] for m in streamed.messages] == [m["role"] for m in whole.messages]


@pytest.mark.parametrize("stream", [True, False])
def test_usage_is_reported_streamed_and_whole(llama_server, stream):
    result = _agent(llama_server, stream=stream, max_tokens=8).run("Say hello.")
    assert result.usage["prompt_tokens"] > 0 and result.usage["completion_tokens"] > 0
    assert "unreported" not in result.usage  # this server streams a usage chunk
    assert "not reported" not in usage_text(result.usage)


def test_with_no_model_named_the_header_names_the_served_model(llama_server):
    result = _agent(llama_server, max_tokens=4, display="text").run("Hi")
    assert result.model == llama_server.gguf.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert transcript_text(result.transcript).splitlines()[0] == f"🤖 agent ({llama_server.gguf.name})"


def test_a_wrong_model_name_is_not_taken_for_the_served_one(llama_server):
    result = _agent(llama_server, model="gpt-4o-typo", max_tokens=4).run("Hi")
    assert result.model in (llama_server.gguf.name, "gpt-4o-typo (not listed by the server)"), result.model


def test_an_assistant_message_with_null_content_is_accepted(llama_server, adder):
    agent = _agent(llama_server, max_tokens=4)
    agent.messages = [{"role": "user", "content": "Add 2 and 3."},
                      {"role": "assistant", "content": None, "tool_calls": [
                          {"id": "c1", "type": "function", "function": {"name": "add", "arguments": json.dumps({"a": 2, "b": 3})}}]},
                      {"role": "tool", "tool_call_id": "c1", "content": "5"}]
    result = agent.run("So?")
    assert result.stopped_reason in ("done", "length"), result.error


def test_an_interrupt_mid_generation_keeps_the_partial_answer_and_the_server_takes_the_history(llama_server):
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
    last = result.messages[-1]
    assert last["role"] == "assistant" and last["content"].endswith("[cut off: interrupted by the user]")
    again = agent.run("Now say hello.")
    assert again.stopped_reason in ("done", "length"), again.error
    roles = [m["role"] for m in again.messages]
    assert all(not (a == b == "user") for a, b in zip(roles, roles[1:], strict=False))  # no prompt sent twice
