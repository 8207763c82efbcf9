"""The OpenAI adapter against a scripted server with the real openai client: streaming, retries, failures."""

from __future__ import annotations

import socket

import pytest

from hermes_nb.agent.loop import Agent
from hermes_nb.models import ModelConfigError, OpenAIModel
from hermes_nb.models.model_choice import resolve_model
from tests.support.fake_openai import FakeOpenAI, Reply, call


@pytest.fixture
def echo_tool():
    from hermes_nb.tools.registry import registry

    seen = []

    def echo(args, **kw):
        seen.append(args)
        return f"echo {args['text']}"

    registry.register("echo", "testing", {"description": "Echo text.", "parameters": {
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}, echo, read_only=True)
    return seen


def _agent(srv: FakeOpenAI, **kw) -> Agent:
    kw.setdefault("display", False)
    kw.setdefault("enabled_toolsets", [])
    return Agent(model="fake-model", base_url=srv.base_url, **kw)


@pytest.mark.parametrize("stream", [True, False])
def test_tool_call_arguments_arrive_whole(echo_tool, stream):
    long_text = "split across many chunks " * 5
    script = [Reply(content="calling", tool_calls=(call("echo", {"text": long_text}, "c1"),)), Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        result = _agent(srv, stream=stream, enabled_toolsets=["testing"]).run("hi")
    assert echo_tool == [{"text": long_text}]
    assert result.text == "ok" and result.stopped_reason == "done"
    assert bool(srv.requests[0].get("stream")) is stream
    assert result.usage == {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}
    if stream:
        assert srv.requests[0]["stream_options"] == {"include_usage": True}


def test_429_with_retry_after_then_success():
    notices = []
    with FakeOpenAI([Reply(status=429, headers={"Retry-After": "0.05"}), Reply(content="fine")]) as srv:
        model = OpenAIModel(model="m", base_url=srv.base_url, api_key="k", max_retries=2)
        from hermes_nb.tools.async_bridge import run_sync

        turn = run_sync(model.complete([{"role": "user", "content": "x"}], [], on_retry=notices.append))
    assert turn.content == "fine"
    assert len(srv.requests) == 2
    assert len(notices) == 1 and "HTTP 429" in notices[0] and "retrying in 0.1 s" in notices[0]


def test_5xx_retried_then_reported():
    with FakeOpenAI([Reply(status=500)] * 3) as srv:
        result = _agent(srv, max_retries=1).run("x")
    assert len(srv.requests) == 2
    assert result.stopped_reason == "error"
    assert "HTTP 500" in result.error and "2 attempts" in result.error
    assert result.messages[-2] == {"role": "user", "content": "x"}  # nothing lost, and marked unanswered
    assert result.messages[-1] == {"role": "assistant", "content": "[cut off: the model's turn failed]"}


@pytest.mark.parametrize(("status", "words"), [(401, "OPENAI_API_KEY"), (404, "'fake-model' was not found")])
def test_client_errors_are_not_retried(status, words):
    with FakeOpenAI([Reply(status=status), Reply(content="never")]) as srv:
        result = _agent(srv).run("x")
    assert len(srv.requests) == 1
    assert result.stopped_reason == "error" and words in result.error


def test_connection_refused_is_clear():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    agent = Agent(model="m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0, display=False)
    result = agent.run("x")
    assert result.stopped_reason == "error"
    assert f"could not connect to the model server at http://127.0.0.1:{port}/v1" in result.error


def test_missing_key_is_reported_at_run_not_construction():
    agent = Agent(model="m", display=False)  # no key, no base URL: constructing is fine
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        agent.run("x")
    remote = Agent(model="m", base_url="https://example.invalid/v1", display=False)
    with pytest.raises(ModelConfigError, match="no API key") as caught:
        remote.run("x")
    assert caught.value._render_traceback_() == [f"ModelConfigError: {caught.value}"]  # one line in a cell


def test_defaults_come_from_the_environment_at_construction(monkeypatch):
    monkeypatch.setenv("HERMES_NB_MODEL", "llama3")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    model = resolve_model(None, None, None)
    assert (model.name, model.base_url, model.api_key) == ("llama3", "http://localhost:11434/v1", "not-needed")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert resolve_model(None, None, None).api_key == "sk-test"


def test_tool_messages_are_sent_without_local_name_field(echo_tool):
    script = [Reply(tool_calls=(call("echo", {"text": "a"}, "c1"),)), Reply(content="done")]
    with FakeOpenAI(script) as srv:
        _agent(srv, enabled_toolsets=["testing"]).run("x")
    tool_msgs = [m for m in srv.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_msgs == [{"role": "tool", "tool_call_id": "c1", "content": "echo a"}]
