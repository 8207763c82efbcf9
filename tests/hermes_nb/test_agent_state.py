"""The agent-loop tools through ``Agent.run`` against the scripted model server: todo, memory, session_search.

Each test drives the real ``openai`` client against ``FakeOpenAI`` and checks what the model was sent (the
request bodies) as well as what the run returned and showed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes_nb.agent.loop import Agent
from tests.support.fake_openai import FakeOpenAI, Reply, call


def _agent(srv: FakeOpenAI, *toolsets: str) -> Agent:
    return Agent(model="m", base_url=srv.base_url, enabled_toolsets=list(toolsets), display=False, stream=False)


def _tool_answer(request: dict[str, Any], call_id: str) -> dict[str, Any]:
    content = next(m["content"] for m in request["messages"] if m.get("tool_call_id") == call_id)
    return json.loads(content)


PLAN = [{"id": "1", "content": "load the data", "status": "in_progress"},
        {"id": "2", "content": "plot it", "status": "pending"}]


# -- todo ---------------------------------------------------------------------------------------------

def test_the_plan_is_one_checklist_updated_in_place_and_survives_runs() -> None:
    script = [Reply(tool_calls=(call("todo", {"todos": PLAN}, "t1"),)),
              Reply(tool_calls=(call("todo", {"todos": [{"id": "1", "content": "load the data",
                                                          "status": "completed"}], "merge": True}, "t2"),)),
              Reply(tool_calls=(call("todo_list", {"todos": [{"id": "2", "content": "plot it",
                                                               "status": "in_progress"}], "merge": True}, "t3"),)),
              Reply(content="Planned."),
              Reply(tool_calls=(call("todo", {}, "t4"),)),  # a read, in the next run
              Reply(content="Still the same plan.")]
    with FakeOpenAI(script) as srv:
        agent = _agent(srv, "todo", "todo_list")
        result = agent.run("plan the analysis")
        answer = _tool_answer(srv.requests[3], "t3")
        later = agent.run("what is the plan?")
        read = _tool_answer(srv.requests[5], "t4")
    t = result.transcript
    kinds = [item[0] for item in t.items]
    assert kinds.count("checklist") == 1 and "tool" not in kinds  # one checklist, no card per todo call
    assert t.checklist is not None and t.checklist.updates == 3
    assert [i["status"] for i in t.checklist.todos] == ["completed", "in_progress"]
    assert result.todos == ({"id": "1", "content": "load the data", "status": "completed"},
                            {"id": "2", "content": "plot it", "status": "in_progress"})
    assert answer["summary"] == {"total": 2, "pending": 0, "in_progress": 1, "completed": 1, "cancelled": 0}
    assert read["todos"] == list(result.todos) and later.todos == result.todos  # kept across runs
    agent.reset()
    assert agent.todo_store.read() == []


def test_the_checklist_html_and_text_say_the_same_statuses() -> None:
    from hermes_nb.display.live import transcript_html, transcript_text

    script = [Reply(tool_calls=(call("todo", {"todos": PLAN + [{"id": "3", "content": "<b>x</b>",
                                                                "status": "cancelled"}]}, "t1"),)),
              Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        result = _agent(srv, "todo").run("plan")
    html, text = transcript_html(result.transcript), transcript_text(result.transcript)
    assert html.count('class="hermes-nb-checklist"') == 1
    assert 'data-status="in_progress"' in html and "line-through" in html
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html  # the model's text is escaped
    assert "▶ load the data" in text and "☐ plot it" in text and "☒ <b>x</b>" in text and "0/3 done" in text


def test_a_bad_todo_call_keeps_its_card_and_the_plan_is_unchanged() -> None:
    script = [Reply(tool_calls=(call("todo", {"todos": "not a list"}, "t1"),)), Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        result = _agent(srv, "todo").run("plan")
        answer = _tool_answer(srv.requests[1], "t1")
    assert "error" in answer
    assert result.todos == () and [i[0] for i in result.transcript.items if i[0] != "turn"][0] == "tool"


# -- memory -------------------------------------------------------------------------------------------

def test_memory_written_in_one_run_is_in_the_next_runs_system_prompt_frozen_for_the_run(hermes_home: Path) -> None:
    script = [Reply(tool_calls=(call("memory", {"action": "add", "target": "user",
                                                "content": "Prefers metric units"}, "m1"),)),
              Reply(content="Noted."),
              Reply(tool_calls=(call("memory", {"action": "add", "target": "memory",
                                                "content": "Data lives in ./data"}, "m2"),)),
              Reply(content="Noted too.")]
    with FakeOpenAI(script) as srv:
        agent = Agent(model="m", base_url=srv.base_url, enabled_toolsets=["memory"], display=False, stream=False,
                      system_prompt="You are terse.")
        agent.run("I like metric units")
        assert (hermes_home / "memories" / "USER.md").read_text() == "Prefers metric units"
        assert srv.requests[0]["messages"][0] == {"role": "system", "content": "You are terse."}
        agent.run("my data is in ./data")
    second_run = [r["messages"][0]["content"] for r in srv.requests[2:]]
    assert second_run[0] == second_run[1]  # frozen for the run: the write in turn 1 does not change turn 2
    assert second_run[0].startswith("You are terse.\n\nUSER PROFILE") and "Prefers metric units" in second_run[0]
    assert "Data lives in ./data" not in second_run[0]
    assert (hermes_home / "memories" / "MEMORY.md").read_text() == "Data lives in ./data"


def test_memory_is_not_put_in_the_prompt_of_an_agent_without_the_memory_tool(hermes_home: Path) -> None:
    from hermes_nb.agent.memory_store import MemoryStore

    MemoryStore().add("user", "a secret preference")
    with FakeOpenAI([Reply(content="hi")]) as srv:
        _agent(srv, "file").run("hello")
    assert [m["role"] for m in srv.requests[0]["messages"]] == ["user"]


def test_outside_a_notebook_memory_joins_the_prompt_only_when_its_tool_is_offered(
        hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's prompt and its tools read one answer to "what does this agent offer": outside a notebook,
    with nothing chosen, the memory tool is not offered (only the person's own toolsets are), so neither are
    its files; once the memory toolset is chosen, both are."""
    import hermes_nb._state as state
    import hermes_nb.selection as sel
    from hermes_nb.agent.memory_store import MemoryStore

    MemoryStore().add("user", "a secret preference")
    monkeypatch.setattr(state, "shell", None)
    monkeypatch.setattr(sel.selection, "mode", "default")  # nobody chose yet (an earlier test may have)
    with FakeOpenAI([Reply(content="a"), Reply(content="b")]) as srv:
        agent = Agent(model="m", base_url=srv.base_url, display=False, stream=False)
        agent.run("hello")
        monkeypatch.setattr(sel.selection, "mode", "list")
        monkeypatch.setattr(sel.selection, "enabled", ["memory"])
        agent.run("hello again")
    first, second = srv.requests
    assert "memory" not in {t["function"]["name"] for t in first.get("tools", ())}
    assert [m["role"] for m in first["messages"]] == ["user"]
    assert "memory" in {t["function"]["name"] for t in second["tools"]}
    assert second["messages"][0]["role"] == "system" and "a secret preference" in second["messages"][0]["content"]


def test_a_full_memory_refuses_the_add_with_the_current_entries(hermes_home: Path) -> None:
    from hermes_nb.agent.memory_store import LIMITS, MemoryStore

    MemoryStore().add("user", "x" * (LIMITS["user"] - 10))
    script = [Reply(tool_calls=(call("memory", {"action": "add", "target": "user", "content": "one more fact"},
                                     "m1"),)), Reply(content="Full.")]
    with FakeOpenAI(script) as srv:
        _agent(srv, "memory").run("remember this")
        answer = _tool_answer(srv.requests[1], "m1")
    assert answer["success"] is False and "USER.md is full" in answer["error"]
    assert answer["current_entries"] == ["x" * (LIMITS["user"] - 10)]
    assert MemoryStore().entries("user") == ["x" * (LIMITS["user"] - 10)]  # nothing lost


@pytest.mark.parametrize(("args", "needle"), [
    ({"action": "replace", "target": "memory", "old_text": "nothing like it", "content": "y"}, "No entry matched"),
    ({"action": "remove", "target": "memory", "old_text": ""}, "needs old_text"),
    ({"action": "add", "target": "memory", "content": "   "}, "empty"),
])
def test_memory_mistakes_are_one_clear_error(args: dict[str, Any], needle: str) -> None:
    script = [Reply(tool_calls=(call("memory", args, "m1"),)), Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        _agent(srv, "memory").run("edit memory")
        answer = _tool_answer(srv.requests[1], "m1")
    assert answer["success"] is False and needle in answer["error"]


# -- session_search -----------------------------------------------------------------------------------

def test_a_run_is_found_by_a_later_agent_and_the_current_run_is_left_out() -> None:
    with FakeOpenAI([Reply(content="The penguin colony counts 412 birds.")]) as srv:
        _agent(srv, "file").run("count the penguin colony")
    script = [Reply(tool_calls=(call("session_search", {"query": "penguin"}, "s1"),)), Reply(content="412.")]
    with FakeOpenAI(script) as srv:
        result = _agent(srv, "session_search").run("how many penguin birds did we count?")
        answer = _tool_answer(srv.requests[1], "s1")
    assert answer["success"] is True and answer["mode"] == "discover" and answer["count"] == 1
    hit = answer["results"][0]
    assert hit["title"] == "count the penguin colony" and "»penguin«" in hit["snippet"]
    assert any("412 birds" in m["content"] for m in hit["messages"])
    assert result.stopped_reason == "done"  # this run's own "penguin" prompt was not a result


def test_messages_are_stored_as_the_run_goes() -> None:
    from hermes_nb.agent.session_store import session_store

    seen: list[int] = []

    class Counting(FakeOpenAI):
        def next_reply(self, body: dict[str, Any]) -> Reply:
            seen.append(session_store().count())  # what is stored when the model is asked again
            return super().next_reply(body)

    script = [Reply(tool_calls=(call("todo", {"todos": PLAN}, "t1"),)), Reply(content="done")]
    with Counting(script) as srv:
        _agent(srv, "todo").run("plan")
    assert seen == [1, 3]  # the prompt before turn 1; then the assistant's call and its answer before turn 2
    assert session_store().count() == 4


def test_a_corrupt_session_db_is_reported_once_and_the_run_goes_on(hermes_home: Path) -> None:
    (hermes_home / "sessions.db").write_bytes(b"this is not a database" * 100)
    script = [Reply(tool_calls=(call("todo", {"todos": PLAN}, "t1"),)), Reply(content="still fine")]
    with FakeOpenAI(script) as srv:
        result = _agent(srv, "todo").run("plan")
    notes = [item for item in result.transcript.items if item[0] == "notice" and "session store" in item[1]]
    assert result.stopped_reason == "done" and result.text == "still fine"
    assert len(notes) == 1 and "not stored for session_search" in notes[0][1]


def test_search_text_that_is_not_fts5_syntax_still_searches() -> None:
    from hermes_nb.agent.recall import search_runs

    with FakeOpenAI([Reply(content="see report: final")]) as srv:
        _agent(srv, "file").run('the "quarterly report: final')
    found = search_runs('"quarterly report:')
    assert found["success"] and found["count"] == 1


def test_operations_make_room_and_add_in_one_call_or_change_nothing(hermes_home: Path) -> None:
    from hermes_nb.agent.memory_store import LIMITS, MemoryStore

    big = "y" * (LIMITS["memory"] - 20)
    MemoryStore().add("memory", big)
    swap = [{"action": "remove", "old_text": "yyyy"}, {"action": "add", "content": "Uses uv"}]
    broken = [{"action": "add", "content": "kept?"}, {"action": "remove", "old_text": "not there"}]
    script = [Reply(tool_calls=(call("memory", {"target": "memory", "operations": broken}, "m1"),)),
              Reply(tool_calls=(call("memory", {"target": "memory", "operations": swap}, "m2"),)),
              Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        _agent(srv, "memory").run("tidy memory")
        failed, done = _tool_answer(srv.requests[1], "m1"), _tool_answer(srv.requests[2], "m2")
    assert failed["success"] is False and failed["error"].startswith("Operation 2: No entry matched")
    assert done["success"] is True and done["message"] == "Applied 2 operations."
    assert MemoryStore().entries("memory") == ["Uses uv"]  # the failed batch added nothing


def test_subtasks_nest_under_their_parent_and_a_loop_is_broken() -> None:
    from hermes_nb.display.live import transcript_text

    todos = [{"id": "a", "content": "survey", "status": "in_progress"},
             {"id": "b", "content": "north beach", "status": "pending", "parent": "a"},
             {"id": "c", "content": "loop one", "status": "pending", "parent": "d"},
             {"id": "d", "content": "loop two", "status": "pending", "parent": "c"},
             {"id": "e", "content": "orphan", "status": "pending", "parent": "nobody"}]
    script = [Reply(tool_calls=(call("todo", {"todos": todos}, "t1"),)), Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        result = _agent(srv, "todo").run("plan")
    parents = {i["id"]: i.get("parent") for i in result.todos}
    assert parents["b"] == "a" and parents["e"] is None
    assert [parents["c"], parents["d"]].count(None) == 1  # the loop is cut once
    text = transcript_text(result.transcript).splitlines()
    assert "    ▶ survey" in text and "      ☐ north beach" in text and "    ☐ orphan" in text


def test_a_locked_session_db_is_reported_once_and_the_run_goes_on(hermes_home: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    from hermes_nb.agent.session_store import session_store

    monkeypatch.setattr("hermes_nb.agent.session_store.RETRY_AFTER", 3600.0)

    session_store().begin("earlier", prompt="an earlier run")  # the database exists, in WAL mode
    other = sqlite3.connect(hermes_home / "sessions.db", isolation_level=None)  # another kernel, writing
    other.execute("BEGIN EXCLUSIVE")
    try:
        script = [Reply(tool_calls=(call("todo", {"todos": PLAN}, "t1"),)), Reply(content="still fine")]
        with FakeOpenAI(script) as srv:
            result = _agent(srv, "todo").run("plan")
    finally:
        other.execute("ROLLBACK")
        other.close()
    notes = [item[1] for item in result.transcript.items if item[0] == "notice"]
    assert result.stopped_reason == "done" and result.text == "still fine"
    assert len(notes) == 1 and "database is locked" in notes[0] and "not stored" in notes[0]
    # the store rests after failing: the next run does not wait for the lock again, and says so once too
    with FakeOpenAI([Reply(content="next")]) as srv:
        later = _agent(srv, "todo").run("again")
    again = [item[1] for item in later.transcript.items if item[0] == "notice"]
    assert len(again) == 1 and "database is locked" in again[0]
    monkeypatch.setattr(session_store(), "_resting_until", 0.0)
    assert session_store().count() == 0  # nothing of either run was stored
