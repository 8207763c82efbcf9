"""The per-turn deadline bounds a model server that trickles keep-alives or stalls, retries included."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from hermes_nb.agent.loop import Agent, AgentResult
from hermes_nb.models import DEFAULT_TURN_TIMEOUT, OpenAIModel
from tests.support.fake_openai import FakeOpenAI, Reply

WAIT = 60.0  # far above every deadline below: only a missing deadline reaches it


def _in_thread(fn: Callable[[], Any]) -> Any:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    thread.join(WAIT)
    assert not thread.is_alive(), "the run never ended"
    return out[0]


def _agent(srv: FakeOpenAI, **kw: Any) -> Agent:
    agent = Agent(model="fake-model", base_url=srv.base_url, display=False, enabled_toolsets=[], **kw)
    agent.model.wait_notice_after = 0.2  # type: ignore[attr-defined]
    return agent


def _notices(result: AgentResult) -> list[str]:
    return [item[1] for item in result.transcript.items if item[0] == "notice"]


def test_the_default_deadline_is_sensible() -> None:
    assert 60 <= DEFAULT_TURN_TIMEOUT <= 1800
    assert OpenAIModel(model="m", base_url=None, api_key="k").turn_timeout == DEFAULT_TURN_TIMEOUT


def test_a_trickling_server_is_given_up_at_the_turn_deadline() -> None:
    with FakeOpenAI([Reply(trickle=0.05), Reply(content="never asked")]) as srv:
        agent = _agent(srv, turn_timeout=1.0)
        result = _in_thread(lambda: agent.run("hi"))
        assert len(srv.requests) == 1
    assert result.stopped_reason == "error"
    assert "did not finish this turn within 1 s" in result.error and "turn_timeout" in result.error
    assert any(n.startswith("waiting for the model: nothing for") for n in _notices(result))
    assert result.messages[-2] == {"role": "user", "content": "hi"}  # nothing half-answered in the history
    assert result.messages[-1]["content"].endswith("[cut off: the model's turn failed]")  # the cut, said


@pytest.mark.parametrize("stream", [True, False])
def test_the_deadline_covers_retries_of_a_stalled_server(stream: bool) -> None:
    # each attempt hits the client's read timeout and is retried; the turn deadline ends them all
    script = [Reply(status=500), *[Reply(delay=30) for _ in range(10)]]
    with FakeOpenAI(script) as srv:
        agent = _agent(srv, turn_timeout=3.0, timeout=0.4, max_retries=10, stream=stream)
        result = _in_thread(lambda: agent.run("hi"))
        sent = len(srv.requests)
    assert result.stopped_reason == "error" and "did not finish this turn within 3 s" in result.error
    assert 2 <= sent < 11
    notices = _notices(result)
    assert any("HTTP 500 from the model; retrying" in n for n in notices)
    assert any(n.startswith("waiting for the model") for n in notices)


def test_the_next_run_after_a_deadline_works() -> None:
    with FakeOpenAI([Reply(trickle=0.05), Reply(content="fine")]) as srv:
        agent = _agent(srv, turn_timeout=0.5)
        first = _in_thread(lambda: agent.run("hi"))
        second = _in_thread(lambda: agent.run("again"))
    assert first.stopped_reason == "error"
    assert second.stopped_reason == "done" and second.text == "fine"


def test_a_slow_but_steady_answer_within_the_deadline_is_kept() -> None:
    with FakeOpenAI([Reply(content="steady answer", delay=0.3)]) as srv:
        result = _in_thread(lambda: _agent(srv, turn_timeout=20).run("hi"))
    assert result.stopped_reason == "done" and result.text == "steady answer"
    assert any(n.startswith("waiting for the model") for n in _notices(result))
