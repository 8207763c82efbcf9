"""The agent-loop tools in real kernels: the checklist is one output updated in place, sub-agents are nested
in it, and memory and past runs reach a second kernel through the shared home."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply, call
from tests.support.kernel import KernelSession
from tests.support.routed_openai import RoutedOpenAI

pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.timeout(300)]

PLAN = [{"id": "1", "content": "look", "status": "in_progress"}, {"id": "2", "content": "tell", "status": "pending"}]


def _agent(kernel: KernelSession, base_url: str, toolsets: list[str]) -> None:
    kernel.run(f"from hermes_nb import Agent\nagent = Agent(model='m', base_url={base_url!r}, "
               f"enabled_toolsets={toolsets!r}, stream=False)")


def test_the_checklist_is_one_output_updated_in_place_and_children_nest_under_their_card(tmp_path: Path) -> None:
    import queue
    import threading

    drawn = threading.Event()  # the test saw the first plan in the cell's live output

    def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        if prompt == "plan and delegate":
            if turn == 1:
                drawn.wait(60)  # the model's next turn waits until the plan is on screen: live, not at the end
            return [Reply(tool_calls=(call("todo", {"todos": PLAN}, "t1"),)),
                    Reply(tool_calls=(call("delegate_task", {"tasks": [{"goal": "look left"},
                                                                       {"goal": "look right"}]}, "d1"),)),
                    Reply(tool_calls=(call("todo", {"todos": [{"id": "1", "content": "look", "status": "completed"},
                                                              {"id": "2", "content": "tell", "status": "completed"}]},
                                           "t2"),)),
                    Reply(content="All clear.")][turn]
        return Reply(content=f"{prompt}: nothing there")

    outputs: list[dict[str, Any]] = []
    with KernelSession(cwd=tmp_path, env={"HERMES_NB_HOME": str(tmp_path)}) as k, RoutedOpenAI(route) as srv:
        k.run("%load_ext hermes_nb")
        _agent(k, srv.base_url, ["todo", "delegation"])
        msg_id = k.kc.execute("result = agent.run('plan and delegate')\nprint(result.stopped_reason, len(result.todos))")
        stdout = ""
        while True:  # the cell's messages as they come (KernelSession.collect, with a look at each output)
            try:
                msg = k.kc.get_iopub_msg(timeout=120)
            except queue.Empty:
                raise AssertionError("the cell did not finish") from None
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind in ("display_data", "update_display_data"):
                outputs.append({"type": kind, **content})
                if "0/2 done" in content["data"].get("text/html", ""):
                    drawn.set()
            elif kind == "stream":
                stdout += content["text"]
            elif kind == "error":
                raise AssertionError(content["evalue"])
            elif kind == "status" and content["execution_state"] == "idle":
                break
    assert drawn.is_set(), "the plan was not drawn while the run went on"
    assert stdout.strip() == "done 2"
    shown = [o for o in outputs if o["type"] == "display_data"]
    updates = [o for o in outputs if o["type"] == "update_display_data"]
    assert len(shown) == 1 and len(updates) >= 2, "one live output, updated in place"
    display_id = shown[0]["transient"]["display_id"]
    assert all(u["transient"]["display_id"] == display_id for u in updates)
    final = updates[-1]["data"]["text/html"]
    assert final.count('class="hermes-nb-checklist"') == 1 and "2/2 done" in final and "updated 2×" in final
    assert "<b>todo</b>" not in final  # no card per todo call
    assert final.count('class="hermes-nb-child"') == 2 and "look right: nothing there" in final
    assert "📋 plan · 2/2 done" in updates[-1]["data"]["text/plain"]  # the text fallback says the same


def test_memory_and_a_past_run_reach_a_second_kernel(tmp_path: Path) -> None:
    env = {"HERMES_NB_HOME": str(tmp_path / "home")}
    first = [Reply(tool_calls=(call("memory", {"action": "add", "target": "user",
                                               "content": "Works on the walrus survey"}, "m1"),)),
             Reply(content="The walrus count is 57.")]
    second = [Reply(tool_calls=(call("session_search", {"query": "walrus"}, "s1"),)), Reply(content="57.")]
    with KernelSession(cwd=tmp_path, env=env) as a, KernelSession(cwd=tmp_path, env=env) as b:
        for k in (a, b):
            k.run("%load_ext hermes_nb")
        with FakeOpenAI(first) as srv:
            _agent(a, srv.base_url, ["memory"])
            a.run("agent.run('count the walrus herd', )")
        with FakeOpenAI(second) as srv:
            _agent(b, srv.base_url, ["memory", "session_search"])
            b.run("agent.run('what did we count before?')")
            system = srv.requests[0]["messages"][0]
            answer = next(m["content"] for m in srv.requests[1]["messages"] if m.get("tool_call_id") == "s1")
        listed = b.run("%sessions walrus").text
        shown = b.run("%memory").text
    assert system["role"] == "system" and "Works on the walrus survey" in system["content"]
    found = json.loads(answer)
    assert found["count"] == 1 and found["results"][0]["title"] == "count the walrus herd"
    assert any("57" in m["content"] for m in found["results"][0]["messages"])
    assert "walrus" in listed and "Works on the walrus survey" in shown


def test_stop_in_the_kernel_stops_the_children(tmp_path: Path) -> None:
    import threading

    arrived = threading.Semaphore(0)
    release = threading.Event()

    def route(prompt: str, turn: int, body: dict[str, Any]) -> Reply:
        if prompt == "go":
            return Reply(tool_calls=(call("delegate_task", {"tasks": [{"goal": "wait one"}, {"goal": "wait two"}]},
                                          "d1"),))
        arrived.release()
        release.wait(60)  # mid-turn until the test ends
        return Reply(content="too late")

    with KernelSession(cwd=tmp_path, env={"HERMES_NB_HOME": str(tmp_path)}) as k, RoutedOpenAI(route) as srv:
        k.run("%load_ext hermes_nb")
        _agent(k, srv.base_url, ["delegation"])
        msg_id = k.kc.execute("result = agent.run('go')\nprint(result.stopped_reason)")
        try:
            assert arrived.acquire(timeout=60) and arrived.acquire(timeout=60)  # both children are mid-turn
            k.interrupt()  # ■
            r = k.collect(msg_id, timeout=60)
        finally:
            release.set()
        count = srv.count
        answered = k.run("print([m['content'][:60] for m in agent.messages if m.get('tool_call_id') == 'd1'])").stdout
    assert r.stdout.strip() == "interrupted"
    assert "interrupted" in answered
    assert count == 3  # no child turn after the stop
