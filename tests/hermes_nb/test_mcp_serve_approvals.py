"""Served calls and "for this session": a client never rides on the notebook's answers nor on another
client's, and a client's name reaches the prompt with hidden characters made visible. Real server, real
SDK clients (``tests.support.mcp_clients``)."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_nb.tools.approval import reset_session_approvals
from hermes_nb.tools.registry import registry
from tests.hermes_nb import test_mcp_serve as base
from tests.support.mcp_clients import connect

tools = base.tools  # the served demo tools (a fixture)
run = base.run


@pytest.fixture
def served(tools: dict[str, Any]) -> Any:
    from hermes_nb.serve import server as mcp_serve

    recorder = base.Recorder()
    server = mcp_serve.start_serving(mcp_serve.ServeOptions(toolsets=("served_demo",)), events=recorder,
                                     approver=recorder.approve)
    try:
        yield server, recorder
    finally:
        tools["release"].set()
        mcp_serve.stop_serving()


@pytest.fixture(autouse=True)
def _clean() -> Any:
    reset_session_approvals()
    yield
    reset_session_approvals()


async def _call(server: Any, name: str) -> Any:
    async with connect(server.url, server.token, name=name) as c:
        return await c.session.call_tool("srv_ask", {})


def test_a_notebook_session_answer_does_not_let_a_client_run_unasked(served) -> None:
    server, recorder = served
    assert registry.dispatch("srv_ask", {}, approval_callback=lambda *a: "session") == "did it"
    assert registry.dispatch("srv_ask", {}, approval_callback=lambda *a: "deny") == "did it"  # the notebook's own
    recorder.answer = "deny"
    result = run(_call(server, "client-a"))
    assert result.is_error and "BLOCKED" in result.content[0].text
    assert [c for _, c in recorder.asked] and recorder.asked[0][1].startswith("client-a")


def test_one_clients_session_answer_is_its_own(served) -> None:
    server, recorder = served
    recorder.answer = "session"

    async def twice_then_other() -> list[Any]:
        async with connect(server.url, server.token, name="client-a") as a:
            first = await a.session.call_tool("srv_ask", {})
            second = await a.session.call_tool("srv_ask", {})
        recorder.answer = "deny"
        async with connect(server.url, server.token, name="client-b") as b:
            other = await b.session.call_tool("srv_ask", {})
        return [first, second, other]

    first, second, other = run(twice_then_other())
    assert not first.is_error and not second.is_error
    assert other.is_error and "BLOCKED" in other.content[0].text
    assert [c.split(" ")[0] for _, c in recorder.asked] == ["client-a", "client-b"]  # a's second call: not asked
    assert registry.dispatch("srv_ask", {}, approval_callback=lambda *a: "deny") != "did it"  # nor the notebook


def test_a_clients_name_reaches_the_prompt_with_hidden_characters_visible(served) -> None:
    server, recorder = served
    recorder.answer = "deny"
    run(_call(server, "\u202etnega koobeton nwo ruoy\u2066"))
    [(_, client)] = recorder.asked
    assert "\u202e" not in client and "<U+202E>" in client and "<U+2066>" in client
