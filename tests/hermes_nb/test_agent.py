"""The agent loop in plain Python against the scripted server: tools, budget, batches, interrupts."""

from __future__ import annotations

import _thread
import json
import threading

import pytest

from hermes_nb.agent.loop import Agent, AgentResult
from hermes_nb.display.live import transcript_html, transcript_text
from hermes_nb.tools.registry import registry
from tests.support.fake_openai import FakeOpenAI, Reply, call
from tests.support.interrupts import interrupts_land

OBJ = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@pytest.fixture
def tools():
    """Two toolsets: `alpha` (a slow read-only tool, a big one) and `beta` (one more)."""
    started = threading.Event()
    release = threading.Event()  # ends every sleep at teardown: a long "sleep" is a wait, not a race

    def slow(args, **kw):
        started.set()
        release.wait(args.get("sleep", 0.2))
        return f"slow {args['n']}"

    registry.register("slow", "alpha", {"description": "Sleep then answer.", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer"}, "sleep": {"type": "number"}},
        "required": ["n"]}}, slow, read_only=True, emoji="🐢")
    registry.register("big", "alpha", {"description": "A large result.", "parameters": OBJ},
                      lambda a, **kw: "x" * a["n"], read_only=True, max_result_size_chars=1000)
    registry.register("other", "beta", {"description": "Other.", "parameters": OBJ}, lambda a, **kw: "other")
    yield started
    release.set()


def _agent(srv, **kw):
    kw.setdefault("display", False)
    kw.setdefault("enabled_toolsets", ["alpha"])
    return Agent(model="fake", base_url=srv.base_url, **kw)


def _tool_names(request):
    return sorted(t["function"]["name"] for t in request.get("tools", []))


def _answers(request):
    return [m["tool_call_id"] for m in request["messages"] if m["role"] == "tool"]


def _call_ids(request):
    return [c["id"] for m in request["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", [])]


def test_definitions_follow_the_selected_toolsets_afresh_each_turn(tools):
    import hermes_nb.selection as sel

    with FakeOpenAI([Reply(content="a"), Reply(content="b")]) as srv:
        agent = _agent(srv, enabled_toolsets=None)
        sel.select(["alpha"])
        try:
            agent.run("one")
            sel.select(["beta"])
            agent.run("two")
        finally:
            sel.select(None)
    assert _tool_names(srv.requests[0]) == ["big", "slow"]
    assert _tool_names(srv.requests[1]) == ["other"]
    assert srv.requests[0]["parallel_tool_calls"] is True


def test_parallel_batch_answers_every_call_in_order(tools):
    script = [Reply(content="both", tool_calls=(call("slow", {"n": 1}, "a"), call("slow", {"n": 2}, "b"))),
              Reply(content="done")]
    with FakeOpenAI(script) as srv:
        result = _agent(srv).run("go")
    assert _answers(srv.requests[1]) == ["a", "b"]
    first, second = result.tool_calls
    assert (first.content, second.content) == ("slow 1", "slow 2")
    assert first.parallel and second.parallel
    assert first.started < second.ended and second.started < first.ended  # they overlapped
    assert result.iterations == 2 and result.text == "done"


def test_bad_arguments_and_unknown_tools_go_back_to_the_model(tools):
    script = [Reply(tool_calls=(call("slow", '{"n": 1', "broken"), call("nope", {}, "unknown"),
                                call("slow", {"n": "x"}, "invalid"))),
              Reply(content="sorry")]
    with FakeOpenAI(script) as srv:
        result = _agent(srv).run("go")
    sent = {m["tool_call_id"]: json.loads(m["content"])["error"] for m in srv.requests[1]["messages"]
            if m["role"] == "tool"}
    assert "not valid JSON" in sent["broken"]
    assert sent["unknown"] == "tool 'nope' was not offered in this run"  # inside a run, unknown is unoffered
    assert "Invalid arguments for slow" in sent["invalid"]
    assert all(r.is_error for r in result.tool_calls)


def test_big_results_are_spilled_before_the_model_sees_them(tools):
    from hermes_nb.tools.budget import parse_spill_block

    with FakeOpenAI([Reply(tool_calls=(call("big", {"n": 5000}, "c"),)), Reply(content="ok")]) as srv:
        result = _agent(srv).run("go")
    sent = [m["content"] for m in srv.requests[1]["messages"] if m["role"] == "tool"][0]
    info = parse_spill_block(sent)
    assert info is not None and info["size"] == 5000
    assert result.tool_calls[0].content == sent


def test_max_iterations_stops_with_a_message(tools):
    script = [Reply(tool_calls=(call("slow", {"n": i, "sleep": 0}, f"c{i}"),)) for i in range(3)]
    with FakeOpenAI(script) as srv:
        result = _agent(srv, max_iterations=2).run("loop")
    assert result.stopped_reason == "max_iterations"
    assert "max_iterations=2" in result.text
    assert len(srv.requests) == 2
    assert result.messages[-1]["role"] == "tool"  # every call answered


def test_denied_command_is_an_answer_not_a_crash(tmp_path, monkeypatch):
    from hermes_nb.tools.model_tools import ensure_discovered

    ensure_discovered()
    monkeypatch.chdir(tmp_path)
    asked = []

    def deny(command, key, description):
        asked.append(command)
        return "deny"

    script = [Reply(tool_calls=(call("terminal", {"command": "rm -rf important"}, "t"),)), Reply(content="ok")]
    (tmp_path / "important").mkdir()
    with FakeOpenAI(script) as srv:
        result = _agent(srv, enabled_toolsets=["terminal"], approval_callback=deny).run("clean")
    assert asked == ["rm -rf important"]
    answer = json.loads(result.tool_calls[0].content)
    assert answer["blocked"] is True
    assert (tmp_path / "important").exists()
    lines = transcript_text(result.transcript).splitlines()
    asked_at = next(i for i, line in enumerate(lines) if "approval asked for `rm -rf important`" in line)
    result_at = next(i for i, line in enumerate(lines) if "✗ terminal" in line or "✓ terminal" in line)
    assert asked_at < result_at, "the approval shows when it is asked, before the call's result"
    assert lines[asked_at].endswith("→ deny")
    html = transcript_html(result.transcript)
    assert "approval asked for" in html.split('<details style="margin:3px 0">')[0]  # above the result card


def test_conversation_is_kept_until_reset(tools):
    with FakeOpenAI([Reply(content="1"), Reply(content="2"), Reply(content="3")]) as srv:
        agent = _agent(srv, system_prompt="Be brief.")
        agent.run("first")
        agent.run("second")
        agent.reset()
        agent.run("third")
    assert [m["content"] for m in srv.requests[1]["messages"]] == ["Be brief.", "first", "1", "second"]
    assert [m["content"] for m in srv.requests[2]["messages"]] == ["Be brief.", "third"]


def test_interrupt_mid_batch_answers_every_call_and_next_run_works(tools):
    """A KeyboardInterrupt in the calling thread (what a kernel interrupt is) while a tool sleeps."""
    started = tools
    # `other` is not read-only, so it runs alone: "fast" has finished when the slow call starts
    # (the slow call waits until teardown, so the interrupt lands while it runs however late it comes)
    script = [Reply(tool_calls=(call("other", {"n": 1}, "fast"), call("slow", {"n": 2, "sleep": 600}, "slow"),
                                call("other", {"n": 3}, "after"))),
              Reply(content="fresh start")]
    with FakeOpenAI(script) as srv:
        agent = _agent(srv, enabled_toolsets=["alpha", "beta"])
        # however late the slow call starts on a busy machine, the interrupt lands while it runs
        timer = threading.Thread(target=lambda: (started.wait(240), _thread.interrupt_main()))
        with interrupts_land():
            timer.start()
            result = agent.run("go")
            timer.join()
        assert result.stopped_reason == "interrupted"
        # issue 35's decision: a re-run continues the conversation, and the transcript says how to start fresh
        assert "continues the conversation; %agent reset or agent.reset() starts fresh" in transcript_text(
            result.transcript)
        again = agent.run("try again")
    assert again.stopped_reason == "done" and again.text == "fresh start"
    request = srv.requests[-1]
    assert _answers(request) == _call_ids(request) == ["fast", "slow", "after"]
    contents = {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}
    assert contents["fast"] == "other"  # finished results are kept
    assert "nterrupted" in contents["slow"] and "nterrupted" in contents["after"]


def test_result_shows_itself_as_html_and_text(tools):
    with FakeOpenAI([Reply(content="All <done>.")]) as srv:
        result = _agent(srv).run("go")
    assert isinstance(result, AgentResult)
    bundle = result._repr_mimebundle_()
    assert "All &lt;done&gt;." in bundle["text/html"]
    assert "All <done>." in bundle["text/plain"]


def test_text_display_prints_from_the_calling_thread(tools, capsys):
    script = [Reply(content="Looking.", tool_calls=(call("slow", {"n": 1, "sleep": 0}, "a"),)), Reply(content="Done.")]
    with FakeOpenAI(script) as srv:
        _agent(srv, display="text").run("go")
    out = capsys.readouterr().out
    assert "Looking." in out and "✓ slow" in out and "Done." in out and "■ done after 2 turn(s)" in out


def test_arun_from_a_running_loop(tools):
    import asyncio

    with FakeOpenAI([Reply(tool_calls=(call("slow", {"n": 1, "sleep": 0}, "a"),)), Reply(content="async ok")]) as srv:
        result = asyncio.run(_agent(srv).arun("go"))
    assert result.text == "async ok"


def test_run_on_the_background_loop_is_refused(tools):
    from hermes_nb.tools import async_bridge
    from hermes_nb.tools.errors import BridgeError

    agent = Agent(model="m", api_key="k", display=False)

    async def inside():
        agent.run("x")

    with pytest.raises(BridgeError, match="await agent.arun"):
        async_bridge.run_sync(inside())


def test_a_timed_out_tool_is_an_answer(tools):
    script = [Reply(tool_calls=(call("slow", {"n": 1, "sleep": 2}, "late"),)), Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        result = _agent(srv, tool_timeout=0.1).run("go")
    [record] = result.tool_calls
    assert record.timed_out and "timed out after 0.1 s" in record.content
    assert _answers(srv.requests[1]) == ["late"]


@pytest.mark.mcp
def test_a_tool_an_mcp_server_adds_during_a_batch_is_offered_on_the_next_turn():
    """Real server (tests/fixtures/mcp_servers/dynamic_server.py): its `mutate` call adds `extra` and
    sends tools/list_changed; the next model request already lists it, and the model can call it."""
    import sys
    from pathlib import Path

    from hermes_nb.tools.mcp_client.config import parse_server
    from hermes_nb.tools.mcp_tool import add_mcp_server, remove_mcp_server

    server = Path(__file__).resolve().parents[1] / "fixtures" / "mcp_servers" / "dynamic_server.py"
    add_mcp_server(parse_server("dyn", {"command": sys.executable, "args": [str(server)]}))
    try:
        script = [Reply(tool_calls=(call("mcp__dyn__mutate", {"what": "add"}, "m1"),)),
                  Reply(tool_calls=(call("mcp__dyn__extra", {}, "x1"),)),
                  Reply(content="done")]
        with FakeOpenAI(script) as srv:
            result = _agent(srv, enabled_toolsets=["mcp-dyn"]).run("add a tool, then use it")
        assert "mcp__dyn__extra" not in _tool_names(srv.requests[0])
        assert "mcp__dyn__extra" in _tool_names(srv.requests[1])
        assert [c.content for c in result.tool_calls] == ["done: add", "extra!"]
    finally:
        remove_mcp_server("dyn")
