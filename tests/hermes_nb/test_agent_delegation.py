"""``delegate_task`` through ``Agent.run`` against a scripted server that answers by conversation.

Children are told apart by their first user message (their goal), so concurrent conversations get the
right replies whatever order their requests arrive in (``RoutedOpenAI``).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from hermes_nb.agent.loop import Agent
from hermes_nb.tools import async_bridge
from hermes_nb.tools.registry import registry
from tests.support.fake_openai import Reply, call
from tests.support.routed_openai import RoutedOpenAI

SCHEMA = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}


def _names(body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools", [])}


def _results(body: dict[str, Any], call_id: str = "d1") -> list[dict[str, Any]]:
    content = next(m["content"] for m in body["messages"] if m.get("tool_call_id") == call_id)
    return json.loads(content)["results"]


def _parent(tasks: list[dict[str, Any]], **extra: Any) -> Reply:
    return Reply(tool_calls=(call("delegate_task", {"tasks": tasks, **extra}, "d1"),))


def test_two_tasks_overlap_in_time_and_each_summary_comes_back() -> None:
    both = threading.Barrier(2, timeout=20)
    spans: dict[str, list[float]] = {}

    def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        if prompt == "count birds":
            return _parent([{"goal": "count penguins"}, {"goal": "count puffins"}]) if turn == 0 else \
                Reply(content="Both counted.")
        spans[prompt] = [time.monotonic()]
        both.wait()  # each child's first request waits for the other's: they must be in flight together
        spans[prompt].append(time.monotonic())
        return Reply(content=f"{prompt}: 12")

    with RoutedOpenAI(route) as srv:
        agent = Agent(model="m", base_url=srv.base_url, enabled_toolsets=["delegation", "todo"], display=False,
                      stream=False)
        result = agent.run("count birds")
        results = _results(srv.requests[-1])
    (a0, a1), (b0, b1) = spans["count penguins"], spans["count puffins"]
    assert a0 < b1 and b0 < a1  # the two children's model turns overlapped
    assert [r["summary"] for r in results] == ["count penguins: 12", "count puffins: 12"]
    assert all(r["status"] == "completed" and r["exit_reason"] == "completed" for r in results)
    assert all(r["tokens"] == {"input": 10, "output": 5} and r["api_calls"] == 1 for r in results)
    card = result.transcript.cards["d1"]
    assert sorted(card.subagents) == [0, 1] and all(c.done for c in card.subagents.values())
    from hermes_nb.display.live import transcript_html, transcript_text

    html, text = transcript_html(result.transcript), transcript_text(result.transcript)
    assert html.count('class="hermes-nb-child"') == 2 and "count puffins: 12" in html
    lines = text.splitlines()  # the text fallback: each child's transcript indented under the card
    assert "      You: sub-agent 2: count puffins" in lines and "      count puffins: 12" in lines


def test_a_child_gets_a_subset_of_the_toolsets_and_no_delegation_memory_or_clarify() -> None:
    def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        if prompt == "go":
            return _parent([{"goal": "use todo", "toolsets": ["todo"]}, {"goal": "use files", "toolsets": ["file"]},
                            {"goal": "inherit"}]) if turn == 0 else Reply(content="ok")
        return Reply(content="child done")

    with RoutedOpenAI(route) as srv:
        Agent(model="m", base_url=srv.base_url, enabled_toolsets=["delegation", "todo", "memory", "clarify"],
              display=False, stream=False).run("go")
        results = _results(srv.requests[-1])
        child_tools = {b["messages"][1]["content"]: _names(b) for b in srv.requests
                       if b["messages"][0]["role"] == "system"}
    assert results[1]["status"] == "error" and "'file' was not offered to you" in results[1]["error"]
    assert child_tools["use todo"] == {"todo"}
    assert child_tools["inherit"] == {"todo"}  # the parent's, minus delegation, memory and clarify
    assert "use files" not in child_tools  # refused before any model turn


def test_an_orchestrator_child_may_delegate_once_more_and_no_deeper() -> None:
    def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        if prompt == "go":
            return _parent([{"goal": "orchestrate", "role": "orchestrator"}]) if turn == 0 else Reply(content="ok")
        if prompt == "orchestrate":
            if turn == 0:
                return Reply(tool_calls=(call("delegate_task", {"goal": "leaf work", "role": "orchestrator"}, "d2"),))
            return Reply(content="orchestrated")
        return Reply(content="leaf done")

    with RoutedOpenAI(route) as srv:
        result = Agent(model="m", base_url=srv.base_url, enabled_toolsets=["delegation", "todo"], display=False,
                       stream=False).run("go")
        tools = {b["messages"][1]["content"]: _names(b) for b in srv.requests if b["messages"][0]["role"] == "system"}
    assert "delegate_task" in tools["orchestrate"]
    assert "delegate_task" not in tools["leaf work"]  # depth 2: never further, whatever the role
    grandchild = result.transcript.cards["d1"].subagents[0].cards["d2"].subagents[0]
    assert grandchild.prompt.startswith("sub-agent 1: leaf work")


def test_an_output_schema_violation_gets_one_correction_turn() -> None:
    def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        if prompt == "go":
            return _parent([{"goal": "count then fix", "output_schema": SCHEMA},
                            {"goal": "never fixes", "output_schema": SCHEMA}]) if turn == 0 else Reply(content="ok")
        if prompt == "count then fix":
            return Reply(content="about twelve") if turn == 0 else Reply(content='```json\n{"count": 12}\n```')
        return Reply(content='{"count": "many"}')

    with RoutedOpenAI(route) as srv:
        Agent(model="m", base_url=srv.base_url, enabled_toolsets=["delegation"], display=False, stream=False).run("go")
        results = _results(srv.requests[-1])
        fixes = [b for b in srv.requests if b["messages"][-1]["role"] == "user"
                 and b["messages"][-1]["content"].startswith("Your final answer does not match")]
    assert results[0]["schema_valid"] is True and results[0]["output"] == {"count": 12}
    assert results[0]["api_calls"] == 2
    assert results[1]["schema_valid"] is False and "output" not in results[1]
    assert len(fixes) == 2  # exactly one correction turn per child that missed
    assert "JSON" in fixes[0]["messages"][-1]["content"] and "count" in fixes[0]["messages"][-1]["content"]


def test_the_childs_approval_prompt_goes_to_the_parents_approver_and_names_the_child() -> None:
    ran: list[str] = []
    registry.register("launch", "rockets", {"description": "Launch.", "parameters": {"type": "object",
                                                                                     "properties": {}}},
                      lambda args, **kw: ran.append("launched") or "launched", needs_approval=True)
    asked: list[str] = []

    def approve(command: str, key: str, description: str) -> str:
        asked.append(description)
        return "deny"

    def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        if prompt == "go":
            return _parent([{"goal": "launch it"}]) if turn == 0 else Reply(content="ok")
        return Reply(tool_calls=(call("launch", {}, "l1"),)) if turn == 0 else Reply(content="denied")

    with RoutedOpenAI(route) as srv:
        Agent(model="m", base_url=srv.base_url, enabled_toolsets=["delegation", "rockets"], display=False,
              stream=False, approval_callback=approve).run("go")
    assert len(asked) == 1 and asked[0].startswith("sub-agent 1: launch it asks:")
    assert ran == []  # denied: it never ran


def test_stopping_the_parent_stops_its_children_and_every_call_is_answered() -> None:
    arrived = threading.Semaphore(0)
    release = threading.Event()

    def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        if prompt == "go":
            return _parent([{"goal": "slow one"}, {"goal": "slow two"}])
        arrived.release()
        release.wait(30)  # held until the test is over: the children are mid-turn when stopped
        return Reply(content="too late")

    with RoutedOpenAI(route) as srv:
        agent = Agent(model="m", base_url=srv.base_url, enabled_toolsets=["delegation"], display=False, stream=False)
        future = async_bridge.submit(agent.run_on_loop("go"))
        try:
            assert arrived.acquire(timeout=30) and arrived.acquire(timeout=30)  # both children are waiting
            async_bridge.get_loop().call_soon_threadsafe(agent._task.cancel)  # what ■ does
            result = future.result(timeout=30)
        finally:
            release.set()
        count = srv.count
    assert result.stopped_reason == "interrupted"
    answer = next(m for m in agent.messages if m.get("tool_call_id") == "d1")
    assert "interrupted" in answer["content"]
    assert count == 3  # the parent's turn and one turn per child: no child went on after the stop


def test_a_child_stops_at_its_token_budget_and_a_broken_output_schema_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hermes_nb.agent.delegation.DEFAULT_CHILD_TOKENS", 20)  # each scripted turn costs 15

    def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        if prompt == "go":
            return _parent([{"goal": "chatty"}, {"goal": "odd", "output_schema": {"type": "frobnicate"}}]) \
                if turn == 0 else Reply(content="ok")
        return Reply(tool_calls=(call("todo", {"todos": []}, f"t{turn}"),))  # never finishes on its own

    with RoutedOpenAI(route) as srv:
        Agent(model="m", base_url=srv.base_url, enabled_toolsets=["delegation", "todo"], display=False,
              stream=False).run("go")
        results = _results(srv.requests[-1])
        chatty = [b for b in srv.requests if b["messages"][1:2] and b["messages"][1].get("content") == "chatty"]
    assert results[0]["status"] == "error" and "token budget (30 of 20)" in results[0]["error"]
    assert len(chatty) == 2  # the turn that passed the budget was the last one sent
    assert results[1]["status"] == "error" and "not a usable JSON schema" in results[1]["error"]
    assert not any(b["messages"][1:2] and b["messages"][1].get("content") == "odd" for b in srv.requests)


def test_with_no_one_to_approve_a_childs_call_is_blocked_as_for_its_parent() -> None:
    ran: list[str] = []
    registry.register("launch", "rockets", {"description": "Launch.", "parameters": {"type": "object",
                                                                                     "properties": {}}},
                      lambda args, **kw: ran.append("launched") or "launched", needs_approval=True)

    def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        if prompt == "go":
            return _parent([{"goal": "launch it"}]) if turn == 0 else Reply(content="ok")
        return Reply(tool_calls=(call("launch", {}, "l1"),)) if turn == 0 else Reply(content="could not")

    with RoutedOpenAI(route) as srv:  # no prompt installed, no approval_callback: nobody can answer
        Agent(model="m", base_url=srv.base_url, enabled_toolsets=["delegation", "rockets"], display=False,
              stream=False).run("go")
        child_turn_2 = next(b for b in srv.requests if b["messages"][1:2] and b["messages"][1]["content"] == "launch it"
                            and any(m.get("tool_call_id") == "l1" for m in b["messages"]))
    answer = next(m["content"] for m in child_turn_2["messages"] if m.get("tool_call_id") == "l1")
    assert "no one is available to approve it" in answer and ran == []


def test_the_model_sees_hermes_schema_without_toolsets_or_max_iterations_and_may_pass_background() -> None:
    """Hermes 0.19.0 hides ``toolsets`` and ``max_iterations`` from the model (hermes_nb offered both) and
    takes ``background``; what the person passes from Python still counts (the subset test above)."""
    import hermes_nb.tools.agent_loop.tool  # noqa: F401  (registers delegate_task)

    params = registry.get_entry("delegate_task").schema["parameters"]
    assert "toolsets" not in params["properties"] and "max_iterations" not in params["properties"]
    assert "toolsets" not in params["properties"]["tasks"]["items"]["properties"]
    assert params["properties"]["background"]["type"] == "boolean"

    def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        if prompt == "go":
            return _parent([{"goal": "quick"}], background=True) if turn == 0 else Reply(content="ok")
        return Reply(content="child done")

    with RoutedOpenAI(route) as srv:
        Agent(model="m", base_url=srv.base_url, enabled_toolsets=["delegation", "todo"], display=False,
              stream=False).run("go")
        sent = next(t["function"] for t in srv.requests[0]["tools"] if t["function"]["name"] == "delegate_task")
        results = _results(srv.requests[-1])
    assert "toolsets" not in sent["parameters"]["properties"]
    assert results[0]["status"] == "completed" and results[0]["summary"] == "child done"
