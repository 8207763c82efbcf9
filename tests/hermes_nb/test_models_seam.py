"""The eight ways a real server (llama-cpp-python's, SmolLM2) broke the model seam, each reproduced with the
scripted server: options that could not be set, ``content: null``, a retried deterministic 500 that hid its
message, an empty stream, usage shown as 0, a ``length`` cut taken for done, the wrong model named, and
``terminal``/``python`` offered by default outside a notebook. ``test_real_server`` proves them on the real one."""

from __future__ import annotations

import pytest

from hermes_nb.agent.loop import Agent
from hermes_nb.display.live.render import transcript_text, usage_text
from tests.support.fake_openai import FakeOpenAI, Reply, call

#: llama-cpp-python 0.3.36's answer to an assistant message with ``"content": null`` (HTTP 500), as it was sent.
VALIDATION_500 = (
    "7 validation errors:\n"
    "  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestSystemMessage', 'role'), "
    "'msg': \"Input should be 'system'\", 'input': 'assistant', 'ctx': {'expected': \"'system'\"}}\n"
    "  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestUserMessage', 'role'), "
    "'msg': \"Input should be 'user'\", 'input': 'assistant', 'ctx': {'expected': \"'user'\"}}\n"
    "  {'type': 'string_type', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestAssistantMessage', 'content'), "
    "'msg': 'Input should be a valid string', 'input': None}\n"
    "  {'type': 'literal_error', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestToolMessage', 'role'), "
    "'msg': \"Input should be 'tool'\", 'input': 'assistant', 'ctx': {'expected': \"'tool'\"}}\n"
    "  {'type': 'missing', 'loc': ('body', 'messages', 1, 'ChatCompletionRequestToolMessage', 'tool_call_id'), "
    "'msg': 'Field required', 'input': {'role': 'assistant', 'content': None}}\n"
    "\n  File \"/venv/lib/python3.11/site-packages/llama_cpp/server/app.py\", line 376, in create_chat_completion\n"
    "    POST /v1/chat/completions"
)


@pytest.fixture
def adder():
    from hermes_nb.tools.registry import registry

    def add(args, **kw):
        return str(args["a"] + args["b"])

    schema = {"description": "Add two integers.", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}
    registry.register("add", "arith", schema, add, read_only=True, source="notebook")
    registry.register("mul", "arith", {**schema, "description": "Multiply."}, add, read_only=True, source="notebook")


def _agent(srv: FakeOpenAI, **kw) -> Agent:
    kw.setdefault("display", False)
    kw.setdefault("enabled_toolsets", [])
    kw.setdefault("model", "fake-model")
    return Agent(base_url=srv.base_url, **kw)


# 1. tool_choice & co. reach the server ------------------------------------------------------------------

@pytest.mark.parametrize("stream", [True, False])
def test_request_options_reach_the_server_and_a_forced_choice_holds_until_a_call(adder, stream):
    script = [Reply(tool_calls=(call("add", {"a": 2, "b": 3}, "c1"),)), Reply(content="5")]
    with FakeOpenAI(script) as srv:
        result = _agent(srv, stream=stream, enabled_toolsets=["arith"], tool_choice="required", max_tokens=64,
                        temperature=0.0, seed=7, parallel_tool_calls=False, extra_body={"top_k": 1}).run("2+3?")
    first, second = srv.requests
    assert first["tool_choice"] == "required"
    assert (first["max_tokens"], first["temperature"], first["seed"], first["top_k"]) == (64, 0.0, 7, 1)
    assert first["parallel_tool_calls"] is False
    assert second["tool_choice"] == "auto"  # the model has called: now it may call again or answer (issue 34)
    assert result.stopped_reason == "done" and result.text == "5"


def test_required_with_one_tool_is_sent_as_that_tools_name(adder):
    from hermes_nb.tools.registry import registry

    registry.deregister("mul")
    with FakeOpenAI([Reply(content="no")]) as srv:
        _agent(srv, enabled_toolsets=["arith"], tool_choice="required").run("x")
    assert srv.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "add"}}


def test_a_bad_tool_choice_is_one_clear_error():
    with pytest.raises(ValueError, match="tool_choice must be"):
        Agent(model="m", base_url="http://127.0.0.1:9/v1", tool_choice={"type": "nonsense"})


def test_a_stream_that_names_the_function_in_every_chunk_gives_the_name_once(adder):
    """Found by the real server: llama-cpp-python repeats the name in each chunk ("addaddadd...")."""
    script = [Reply(tool_calls=(call("add", {"a": 20, "b": 22}, "c1"),), repeat_name=True), Reply(content="42")]
    with FakeOpenAI(script) as srv:
        result = _agent(srv, enabled_toolsets=["arith"]).run("x")
    assert [r.name for r in result.tool_calls] == ["add"] and result.tool_calls[0].content == "42"


# 2. content "" and the truth of errors ------------------------------------------------------------------

def test_assistant_message_with_tool_calls_is_sent_with_empty_content_not_null(adder):
    script = [Reply(tool_calls=(call("add", {"a": 1, "b": 1}, "c1"),)), Reply(content="2")]
    with FakeOpenAI(script) as srv:
        _agent(srv, enabled_toolsets=["arith"]).run("1+1")
    assistant = [m for m in srv.requests[1]["messages"] if m["role"] == "assistant"]
    assert assistant[0]["content"] == "" and assistant[0]["tool_calls"][0]["id"] == "c1"


def test_a_deterministic_500_is_not_retried_and_keeps_the_line_that_names_the_problem():
    with FakeOpenAI([Reply(status=500, content=VALIDATION_500)] * 4) as srv:
        result = _agent(srv, max_retries=3).run("x")
    assert len(srv.requests) == 2  # the same body twice is the server's answer, not a hiccup
    assert result.stopped_reason == "error"
    assert "messages.1.content: Input should be a valid string (got null)" in result.error
    assert "Input should be 'system'" not in result.error and "File " not in result.error
    assert "the same error twice" in result.error


def test_a_500_that_changes_is_retried_and_a_busy_503_keeps_being_retried():
    script = [Reply(status=500, content="worker 1 died"), Reply(status=500, content="worker 2 died"),
              Reply(content="fine")]
    with FakeOpenAI(script) as srv:
        assert _agent(srv, max_retries=3).run("x").text == "fine"
    assert len(srv.requests) == 3
    with FakeOpenAI([Reply(status=503, headers={"Retry-After": "0"})] * 3 + [Reply(content="up")]) as srv:
        assert _agent(srv, max_retries=3).run("x").text == "up"


def test_an_empty_500_says_the_server_gave_no_message_and_hints_at_required(adder):
    with FakeOpenAI([Reply(status=500, empty=True)] * 2) as srv:
        result = _agent(srv, enabled_toolsets=["arith"], tool_choice="required", max_retries=1).run("x")
    assert "(the server gave no message)" in result.error
    assert "tool_choice='required' was sent" in result.error


# 3. an empty stream is an error ---------------------------------------------------------------------------

@pytest.mark.parametrize("stream", [True, False])
def test_an_empty_answer_is_an_error_not_done(stream):
    with FakeOpenAI([Reply(empty=True)]) as srv:
        result = _agent(srv, stream=stream).run("x")
    assert result.stopped_reason == "error"
    assert "the server sent no answer" in result.error
    # nothing half-made in the history, and the prompt is not left unanswered (issue 34: the next run's prompt
    # would follow it, two user messages in a row)
    assert result.messages == [{"role": "user", "content": "x"},
                               {"role": "assistant", "content": "[cut off: the model's turn failed]"}]


# 4. usage not reported is said, never shown as 0 -------------------------------------------------------------

@pytest.mark.parametrize("stream", [True, False])
def test_usage_the_server_did_not_report_shows_as_not_reported(stream):
    with FakeOpenAI([Reply(content="hi", usage=None)]) as srv:
        result = _agent(srv, stream=stream, display="text").run("x")
    assert result.usage["unreported"] == 1
    assert usage_text(result.usage) == "tokens: not reported by the server"
    assert "0 prompt" not in transcript_text(result.transcript)
    assert "tokens not reported" in str(result._repr_mimebundle_()["text/plain"])


def test_a_run_with_some_turns_reported_says_how_many_were_not(adder):
    script = [Reply(tool_calls=(call("add", {"a": 1, "b": 2}, "c1"),)), Reply(content="3", usage=None)]
    with FakeOpenAI(script) as srv:
        result = _agent(srv, enabled_toolsets=["arith"]).run("x")
    assert usage_text(result.usage) == "tokens: 10 prompt + 5 completion = 15 (1 turn(s) not reported)"


# 5. finish_reason "length" ends "length" --------------------------------------------------------------------

@pytest.mark.parametrize("stream", [True, False])
def test_a_length_cut_ends_length_with_a_notice_naming_max_tokens(stream):
    with FakeOpenAI([Reply(content="Once upon a", finish_reason="length")]) as srv:
        result = _agent(srv, stream=stream, max_tokens=4, display="text").run("story")
    assert result.stopped_reason == "length"
    assert result.text == "Once upon a"
    assert "max_tokens=4" in transcript_text(result.transcript)
    assert result.messages[-1] == {"role": "assistant", "content": "Once upon a"}


def test_a_tool_call_cut_by_length_is_not_run_and_leaves_a_valid_history(adder):
    cut = Reply(tool_calls=(call("add", '{"a": 1, "b"', "c1"),), finish_reason="length")
    with FakeOpenAI([cut]) as srv:
        result = _agent(srv, enabled_toolsets=["arith"], max_tokens=8).run("x")
    assert result.stopped_reason == "length" and result.tool_calls == []
    assert all("tool_calls" not in m for m in result.messages)


# 6. the header names the model the server ran ------------------------------------------------------------

def test_with_no_model_named_the_server_is_asked_and_the_header_names_its_model():
    gguf = "/opt/models/SmolLM2-135M-Instruct.Q4_1.gguf"
    with FakeOpenAI([Reply(content="hi")], model=gguf) as srv:
        agent = Agent(base_url=srv.base_url, display="text", enabled_toolsets=[])
        result = agent.run("x")
    assert srv.requests[0]["model"] == gguf  # what the server listed is what it is asked for
    assert result.model == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert transcript_text(result.transcript).splitlines()[0] == "🤖 agent (SmolLM2-135M-Instruct.Q4_1.gguf)"
    assert "gpt-4o-mini" not in transcript_text(result.transcript)


def test_the_model_the_answer_names_replaces_the_one_asked_for():
    with FakeOpenAI([Reply(content="hi", model="gpt-4o-mini-2024-07-18")]) as srv:
        result = _agent(srv, model="gpt-4o-mini", display="text").run("x")
    assert result.model == "gpt-4o-mini-2024-07-18"
    assert "gpt-4o-mini-2024-07-18" in transcript_text(result.transcript).splitlines()[0]


# 7. outside a notebook, terminal and python only when asked for ----------------------------------------------

def test_outside_a_notebook_the_default_offers_the_persons_tools_not_terminal_or_python(adder, monkeypatch):
    import hermes_nb._state as state
    import hermes_nb.selection as sel

    monkeypatch.setattr(state, "shell", None)
    monkeypatch.setattr(sel.selection, "mode", "default")  # nobody chose yet (an earlier test may have)
    with FakeOpenAI([Reply(content="a"), Reply(content="b")]) as srv:
        agent = _agent(srv, enabled_toolsets=None)
        agent.run("one")
        offered = {t["function"]["name"] for t in srv.requests[0]["tools"]}
        assert {"add", "mul"} <= offered
        assert not offered & {"terminal", "python", "write_file"}
        monkeypatch.setattr(sel.selection, "mode", "list")
        monkeypatch.setattr(sel.selection, "enabled", ["terminal"])
        agent.run("two")
    assert {t["function"]["name"] for t in srv.requests[1]["tools"]} == {"terminal", "process"}


# 8. %%agent --base-url --api-key --tool-choice ----------------------------------------------------------------

def test_an_options_quotes_are_the_shells_not_part_of_its_value(ip, adder):
    """IPython splits a magic's line keeping quotes (Windows style): a quoted URL, model or toolset list reached
    %%agent with its quotes, so the URL did not parse and the toolset '"arith' was unknown (only %%tool dropped
    them). Every magic's options lose one matching pair, in the one parser; a positional word keeps its own
    (%sessions "a phrase" is an FTS5 phrase)."""
    with FakeOpenAI([Reply(content="ok")]) as srv:
        result = ip.run_cell_magic("agent", f"--base-url \"{srv.base_url}\" --model 'fake' --toolsets \"arith\"",
                                   "2+2?")
        assert result.text == "ok"
        assert srv.requests[0]["model"] == "fake"
        assert sorted(t["function"]["name"] for t in srv.requests[0]["tools"]) == ["add", "mul"]
    from hermes_nb.magics.arguments import parse_line
    from hermes_nb.magics.sessions import SessionMagics

    args = parse_line(SessionMagics.sessions, '"a phrase" --limit 3', "%sessions")
    assert args.query == ['"a phrase"'] and args.limit == 3


def test_agent_magic_takes_the_endpoint_and_options_and_never_shows_the_key(ip, adder, capsys):
    from hermes_nb.magics import agent as agent_magics

    secret = "sk-local-" + "9" * 20
    script = [Reply(tool_calls=(call("add", {"a": 2, "b": 2}, "c1"),)), Reply(content="4"), Reply(status=401)]
    with FakeOpenAI(script) as srv:
        ip.user_ns["key"] = secret
        result = ip.run_cell_magic(
            "agent", f"--base-url {srv.base_url} --api-key $key --model fake --tool-choice add --max-tokens 32 "
                     "--seed 3 --temperature 0 --toolsets arith", "2+2?")
        assert result.text == "4"
        assert srv.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "add"}}
        assert (srv.requests[0]["max_tokens"], srv.requests[0]["seed"], srv.requests[0]["temperature"]) == (32, 3, 0)
        failed = ip.run_cell_magic("agent", "", "again")  # the settings hold; the key is refused (401)
        assert failed.stopped_reason == "error"
    shown = capsys.readouterr()
    for text in (shown.out, shown.err, failed.error, repr(agent_magics.current_agent()),
                 repr(agent_magics.current_agent().model), str(failed._repr_mimebundle_())):
        assert secret not in text
