"""execute_code through Agent.run against the scripted model server: a script calls the run's tools in a
loop, prints a summary; its calls pass the gate, show as nested cards, and obey the limits."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from hermes_nb.agent.loop import Agent
from hermes_nb.tools.registry import registry
from tests.support.fake_openai import FakeOpenAI, Reply, call

SCRIPT = """
from hermes_tools import add, shout
total = 0
for i in range(3):
    total = add(a=total, b=i + 1)["sum"]
print("total", total, shout("done"))
"""


@pytest.fixture
def tools() -> None:
    import hermes_nb.tools.execute_code_tool  # noqa: F401  (the built-in, registered at import)

    def add(args: dict[str, Any]) -> dict[str, Any]:
        return {"sum": args["a"] + args["b"]}

    registry.register(name="add", toolset="sums", handler=add, read_only=True, schema={
        "description": "Add two integers.", "parameters": {"type": "object", "properties": {
            "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}})
    registry.register(name="shout", toolset="sums", handler=lambda args: args["text"].upper(), schema={
        "description": "Upper-case a text.", "parameters": {"type": "object", "properties": {
            "text": {"type": "string"}}, "required": ["text"]}})


def _agent(srv: FakeOpenAI, answers: list[tuple[str, str]], **kw: Any) -> Agent:
    def approve(subject: str, key: str, description: str) -> str:
        answers.append((key, subject))
        return "once"

    return Agent(model="m", base_url=srv.base_url, api_key="k", stream=False, display=False,
                 enabled_toolsets=["sums", "code_execution"], approval_callback=approve, **kw)


def _tool_message(request: dict[str, Any], call_id: str) -> dict[str, Any]:
    found = [m for m in request["messages"] if m.get("role") == "tool" and m["tool_call_id"] == call_id]
    return json.loads(found[0]["content"])


def test_a_script_calls_two_tools_in_a_loop_and_only_its_print_comes_back(tools):
    script = [Reply(tool_calls=(call("execute_code", {"code": SCRIPT}, "x1"),)), Reply(content="Six.")]
    answers: list[tuple[str, str]] = []
    with FakeOpenAI(script) as srv:
        result = _agent(srv, answers).run("sum 1..3")
    assert result.stopped_reason == "done"
    got = _tool_message(srv.requests[1], "x1")
    assert got["status"] == "success", got
    assert got["output"] == "total 6 DONE\n"
    assert got["tool_calls_made"] == 4
    # the script itself asked, showing its code; its calls are not the model's own
    assert answers == [("execute-code", SCRIPT)]
    assert [r.name for r in result.tool_calls] == ["execute_code"]
    card = result.transcript.cards["x1"]
    assert [c.name for c in card.children] == ["add", "add", "add", "shout"]
    assert all(c.state == "done" for c in card.children)
    assert json.loads(card.children[-2].content) == {"sum": 6}


def _run(codes: list[str], answers: list[tuple[str, str]] | None = None, **kw: Any) -> tuple[Agent, list[dict]]:
    """One execute_code call per code, in turns; the tool results the model got, in order."""
    script = [Reply(tool_calls=(call("execute_code", {"code": c}, f"x{i}"),)) for i, c in enumerate(codes)]
    with FakeOpenAI([*script, Reply(content="ok")]) as srv:
        agent = _agent(srv, answers if answers is not None else [], **kw)
        result = agent.run("go")
    assert result.stopped_reason == "done"
    return agent, [_tool_message(srv.requests[i + 1], f"x{i}") for i in range(len(codes))]


def test_a_tool_that_needs_approval_asks_again_and_a_denial_is_its_result(tools):
    registry.register(name="wipe", toolset="sums", handler=lambda args: "wiped", needs_approval=True, schema={
        "description": "Wipe.", "parameters": {"type": "object", "properties": {}}})
    asked: list[tuple[str, str]] = []

    def approve_script_only(subject: str, key: str, description: str) -> str:
        asked.append((key, subject))
        return "once" if key == "execute-code" else "deny"

    script = [Reply(tool_calls=(call("execute_code", {"code": "from hermes_tools import wipe\nprint(wipe())"},
                                     "x0"),)), Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        agent = Agent(model="m", base_url=srv.base_url, api_key="k", stream=False, display=False,
                      enabled_toolsets=["sums", "code_execution"], approval_callback=approve_script_only)
        result = agent.run("go")
    got = _tool_message(srv.requests[1], "x0")
    assert [k for k, _ in asked] == ["execute-code", "tool:wipe"]
    assert "BLOCKED" in got["output"] and "wiped" not in got["output"]
    assert result.transcript.cards["x0"].children[0].state == "error"


def test_a_denied_script_never_runs(tools, tmp_path):
    marker = tmp_path / "ran"
    script = [Reply(tool_calls=(call("execute_code", {"code": f"open({str(marker)!r}, 'w')"}, "x0"),)),
              Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        Agent(model="m", base_url=srv.base_url, api_key="k", stream=False, display=False,
              enabled_toolsets=["code_execution"], approval_callback=lambda *a: "deny").run("go")
    assert "BLOCKED" in _tool_message(srv.requests[1], "x0")["error"]
    assert not marker.exists()


def test_execute_code_and_delegate_task_are_not_importable_inside(tools):
    code = "import hermes_tools\nprint(sorted(hermes_tools.__all__))\nfrom hermes_tools import delegate_task"
    script = [Reply(tool_calls=(call("execute_code", {"code": code}, "x0"),)), Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        Agent(model="m", base_url=srv.base_url, api_key="k", stream=False, display=False,
              enabled_toolsets=["sums", "code_execution", "delegation"], approval_callback=lambda *a: "once").run("go")
    assert "delegate_task" in [t["function"]["name"] for t in srv.requests[0]["tools"]]  # the model has it
    got = _tool_message(srv.requests[1], "x0")
    assert got["output"] == "['add', 'json_parse', 'retry', 'shell_quote', 'shout']\n"  # neither tool
    assert got["status"] == "error" and got["error"].startswith("ImportError")


def test_its_namespace_is_its_own_kept_for_the_run_and_reset_on_request(tools, ip):
    ip.user_ns["secret_notebook_var"] = 42
    ip.user_ns.pop("x", None)  # the shell is shared: an earlier test's cell may have made an `x`
    agent, got = _run(["x = 5\nprint('secret_notebook_var' in globals(), shared['n'])",
                       "print(x + 1)"], code_vars={"shared": {"n": 7}})
    assert [g["output"] for g in got] == ["False 7\n", "6\n"]
    assert "x" not in ip.user_ns
    script = [Reply(tool_calls=(call("execute_code", {"code": "print('x' in globals())", "reset": True}, "r"),)),
              Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        agent.model = Agent(model="m", base_url=srv.base_url, api_key="k", stream=False).model
        agent.run("again")
    assert _tool_message(srv.requests[1], "r")["output"] == "False\n"


def _limits(home, **values: Any) -> None:
    import yaml

    (home / "config.yaml").write_text(yaml.safe_dump({"code_execution": values}))


def test_the_tool_call_limit_stops_the_script(tools, hermes_home):
    _limits(hermes_home, max_tool_calls=2)
    _, (got,) = _run(["from hermes_tools import shout\nfor i in range(5):\n    print(shout(str(i)))"])
    assert got["output"] == "0\n1\n" and got["tool_calls_made"] == 2
    assert got["status"] == "error" and "ToolCallLimitError" in got["error"]


def test_a_script_past_its_time_is_stopped(tools, hermes_home):
    _limits(hermes_home, timeout=0.5)
    _, (got,) = _run(["print('start')\nwhile True:\n    pass"])
    assert got["status"] == "timeout" and got["output"] == "start\n"
    assert "0.5 s" in got["error"]
    for thread in [t for t in threading.enumerate() if t.name == "hermes-nb-execute-code"]:
        thread.join(5)  # the script's thread ends once stopped (it never runs on)
        assert not thread.is_alive()


def test_output_past_the_cap_is_spilled_with_a_preview(tools, hermes_home):
    _limits(hermes_home, max_output_chars=200)
    _, (got,) = _run(["for i in range(100):\n    print('line', i)"])
    from hermes_nb.tools.budget import parse_spill_block

    spill = parse_spill_block(got["output"])
    assert spill is not None and spill["size"] == sum(len(f"line {i}\n") for i in range(100))
    with open(spill["path"]) as fh:
        assert fh.read().splitlines()[-1] == "line 99"


def test_a_failing_script_reports_its_own_lines(tools):
    _, (got,) = _run(["print('before')\n1 / 0"])
    assert got["status"] == "error" and got["output"] == "before\n"
    assert got["error"] == "ZeroDivisionError: division by zero"
    assert 'line 2' in got["traceback"] and "script.py" not in got["traceback"]


def test_outside_an_agent_run_it_says_it_needs_one(tools):
    out = json.loads(registry.dispatch("execute_code", {"code": "print(1)"}, approval_callback=lambda *a: "once"))
    assert "inside an agent run" in out["error"]


def test_with_tool_search_a_script_reaches_deferred_tools_through_tool_call(tools):
    from hermes_nb.tools.config import save_config

    ran: list[str] = []
    registry.register("weather_now", "weather", {"description": "Current weather in a city.", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
        lambda a, **k: ran.append(a["city"]) or f"sunny in {a['city']}", read_only=True, metadata={"defer": True})
    save_config({"tool_search": {"enabled": "on"}})
    code = ("from hermes_tools import tool_call\n"
            "print(tool_call(calls=[{'name': 'weather_now', 'arguments': {'city': 'Lima'}}]))\n"
            "print(tool_call(calls=[{'name': 'execute_code', 'arguments': {'code': '1'}}]))")
    script = [Reply(tool_calls=(call("execute_code", {"code": code}, "x0"),)), Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        result = Agent(model="m", base_url=srv.base_url, api_key="k", stream=False, display=False,
                       enabled_toolsets=["weather", "code_execution"], approval_callback=lambda *a: "once").run("go")
    got = _tool_message(srv.requests[1], "x0")
    first, second = got["output"].splitlines()
    assert first == "sunny in Lima" and ran == ["Lima"]
    assert second.startswith("{'error': \"tool_call did not run 'execute_code'")  # never a script in a script
    assert [c.name for c in result.transcript.cards["x0"].children][0] == "weather_now"  # the real tool's card


def test_a_script_stuck_in_a_blocking_call_is_answered_and_blocks_its_namespace_until_reset(tools, hermes_home):
    # the script's first line must print within its time: 0.2 s was a bet on a busy 2-core runner; waiting
    # costs no CPU, so the margin is cheap
    _limits(hermes_home, timeout=1.0)
    release = threading.Event()
    codes = ["print('waiting')\ngate.wait()", "print('again')"]
    script = [Reply(tool_calls=(call("execute_code", {"code": codes[0]}, "x0"),)),
              Reply(tool_calls=(call("execute_code", {"code": codes[1]}, "x1"),)),
              Reply(tool_calls=(call("execute_code", {"code": codes[1], "reset": True}, "x2"),)),
              Reply(content="ok")]
    try:
        with FakeOpenAI(script) as srv:
            _agent(srv, [], code_vars={"gate": release}).run("go")
        stuck, refused, fresh = (_tool_message(srv.requests[i + 1], f"x{i}") for i in range(3))
        assert stuck["status"] == "timeout" and stuck["output"] == "waiting\n"
        assert "still in a call Python cannot interrupt" in stuck["error"]
        assert "previous script is still running" in refused["error"]
        assert fresh["status"] == "success" and fresh["output"] == "again\n"
    finally:
        release.set()  # the stuck thread ends: stopped at once when it runs Python again


def test_a_scripts_imports_are_its_own_not_hermes_nbs(tools, ip, tmp_path, monkeypatch):
    """The kernel's import guard (tools.safety.writes.imports) covers hermes_nb's own imports; a script's import of a
    module in the workspace is the approved script's, as a cell's is."""
    (tmp_path / "hnb_workspace_helper.py").write_text("ANSWER = 42\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    _, (got,) = _run(["import hnb_workspace_helper\nprint(hnb_workspace_helper.ANSWER)"])
    assert got["output"] == "42\n", got


def test_what_the_script_writes_to_stdout_and_stderr_is_its_output_its_tools_prints_are_not(tools):
    registry.register(name="chatty", toolset="sums", handler=lambda args: print("tool talk") or "said",
                      schema={"description": "Prints.", "parameters": {"type": "object", "properties": {}}})
    code = ("import sys\nsys.stdout.write('raw\\n')\nprint('err', file=sys.stderr)\n"
            "from hermes_tools import chatty\nprint(chatty())")
    _, (got,) = _run([code])
    assert got["output"] == "raw\nerr\nsaid\n"


def test_for_this_session_does_not_carry_to_the_next_script(tools):
    asked: list[str] = []

    def for_the_session(subject: str, key: str, description: str) -> str:
        asked.append(subject)
        return "session"

    code = "print('same script')"
    script = [Reply(tool_calls=(call("execute_code", {"code": code}, f"x{i}"),)) for i in range(2)]
    with FakeOpenAI([*script, Reply(content="ok")]) as srv:
        Agent(model="m", base_url=srv.base_url, api_key="k", stream=False, display=False,
              enabled_toolsets=["code_execution"], approval_callback=for_the_session).run("go")
    assert asked == [code, code]  # the same code asked again: every script is code the person sees first
    assert _tool_message(srv.requests[2], "x1")["output"] == "same script\n"
