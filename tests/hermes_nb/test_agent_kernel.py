"""The agent in a real kernel: sync run and top-level await on the kernel's running loop, %%tool tools,
%%agent, an MCP tool, and a kernel interrupt in the middle of a batch."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply, call
from tests.support.kernel import KernelSession

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(240)]

TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")

NAP = '''%%tool --toolset naps --read-only --emoji 😴
def nap(seconds: float) -> str:
    """Sleep, then say how long.

    Args:
        seconds: How long to sleep.
    """
    import time
    time.sleep(seconds)
    return f"slept {seconds}"
'''


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[KernelSession]:
    with KernelSession(cwd=tmp_path, env={"HERMES_NB_HOME": str(tmp_path)}) as k:
        k.run("%load_ext hermes_nb")
        k.run(NAP)
        yield k


def _answers(request):
    return [m["tool_call_id"] for m in request["messages"] if m["role"] == "tool"]


def _call_ids(request):
    return [c["id"] for m in request["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", [])]


def test_sync_run_and_await_arun_in_a_cell(kernel):
    script = [Reply(content="Napping twice.", tool_calls=(call("nap", {"seconds": 0.3}, "a"),
                                                          call("nap", {"seconds": 0.3}, "b"))),
              Reply(content="Rested."),
              Reply(tool_calls=(call("nap", {"seconds": 0}, "c"),)),
              Reply(content="Async rested.")]
    with FakeOpenAI(script) as srv:
        kernel.run(f"from hermes_nb import Agent\nagent = Agent(model='m', base_url={srv.base_url!r}, "
                   "enabled_toolsets=['naps'])")
        r = kernel.run("result = agent.run('nap please')\nprint(result.stopped_reason, result.text)")
        assert "done Rested." in r.stdout
        # one live output updated in place, ending with the static transcript
        assert r.outputs[0]["type"] == "display_data"
        updates = [o for o in r.outputs if o["type"] == "update_display_data"]
        assert updates, "the live display was never updated"
        final = updates[-1]["data"]["text/html"]
        assert "Napping twice." in final and "batch of 2 calls, in parallel" in final and "running…" not in final
        overlap = kernel.run("a, b = result.tool_calls\nprint(a.started < b.ended and b.started < a.ended)")
        assert overlap.stdout.strip() == "True"
        r2 = kernel.run("result2 = await agent.arun('again')\nprint(result2.text)")
        assert "Async rested." in r2.stdout
    assert _answers(srv.requests[-1]) == _call_ids(srv.requests[-1]) == ["a", "b", "c"]
    assert [t["function"]["name"] for t in srv.requests[0]["tools"]] == ["nap"]


def test_agent_magic_returns_the_result(kernel):
    script = [Reply(content="Hello from the magic.")]
    with FakeOpenAI(script) as srv:
        os_env = f"import os\nos.environ['OPENAI_BASE_URL'] = {srv.base_url!r}\nos.environ['HERMES_NB_MODEL'] = 'm'"
        kernel.run(os_env)
        r = kernel.run("%%agent --toolsets naps --out answer\nSay hello.")
        assert any(o["type"] == "execute_result" for o in r.outputs)
        check = kernel.run("print(answer.text, '|', _.text)")
        assert check.stdout.strip() == "Hello from the magic. | Hello from the magic."
        bad = kernel.run("%%agent --toolsets nosuch\nhi", allow_error=True)
        assert bad.stderr.strip().startswith("UsageError: unknown toolset 'nosuch'")  # one line, no traceback
    assert srv.requests[0]["messages"] == [{"role": "user", "content": "Say hello."}]


MARKED_NAP = '''%%tool --toolset naps --read-only
def marked_nap(seconds: float, marker: str) -> str:
    """Create the marker file, then sleep.

    Args:
        seconds: How long to sleep.
        marker: A file to create first.
    """
    import pathlib, time
    pathlib.Path(marker).touch()
    time.sleep(seconds)
    return f"slept {seconds}"
'''


def test_interrupt_mid_batch_then_a_valid_next_run(kernel, tmp_path):
    marker = tmp_path / "long-nap-started"
    kernel.run(MARKED_NAP)
    # not read-only, so it runs alone, before the nap: when the marker exists, "quick" has finished
    kernel.run('%%tool --toolset naps\ndef note(text: str) -> str:\n    """Note it."""\n    return text\n')
    script = [Reply(tool_calls=(call("note", {"text": "noted"}, "quick"),
                                call("marked_nap", {"seconds": 30, "marker": str(marker)}, "long"))),
              Reply(content="Back again.")]
    with FakeOpenAI(script) as srv:
        kernel.run(f"from hermes_nb import Agent\nagent = Agent(model='m', base_url={srv.base_url!r}, "
                   "enabled_toolsets=['naps'])")
        msg_id = kernel.kc.execute("result = agent.run('nap')\nprint('STOPPED', result.stopped_reason)")
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:  # the long call is running now
            time.sleep(0.02)
        assert marker.exists(), "the long tool call never started"
        kernel.interrupt()
        r = kernel.collect(msg_id, timeout=60)
        assert "STOPPED interrupted" in r.stdout
        again = kernel.run("print(agent.run('are you there?').text)")
        assert "Back again." in again.stdout
    request = srv.requests[-1]
    assert _answers(request) == _call_ids(request) == ["quick", "long"]
    contents = {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}
    assert contents["quick"] == "noted"  # finished results are kept
    assert "nterrupted" in contents["long"]


@pytest.mark.mcp
def test_mcp_tool_through_the_agent(kernel):
    if not os.path.exists(TIME_SERVER):
        if os.environ.get("CI"):
            pytest.fail(f"{TIME_SERVER} is missing")
        pytest.skip(f"{TIME_SERVER} is not installed")
    script = [Reply(tool_calls=(call("mcp__time__get_current_time", {"timezone": "UTC"}, "t"),)),
              Reply(content="It is now.")]
    with FakeOpenAI(script) as srv:
        kernel.run("from hermes_nb.tools.mcp_tool import discover_mcp_tools\n"
                   f"print(discover_mcp_tools({{'mcp_servers': {{'time': {{'command': {TIME_SERVER!r}}}}}}}))")
        r = kernel.run(f"from hermes_nb import Agent\nres = Agent(model='m', base_url={srv.base_url!r}, "
                       "enabled_toolsets=['mcp-time']).run('time?')\nprint(res.text)")
        assert "It is now." in r.stdout
    tool_msg = [m for m in srv.requests[-1]["messages"] if m["role"] == "tool"][0]
    assert '"timezone": "UTC"' in tool_msg["content"] and "datetime" in tool_msg["content"]


def test_demo_runs_a_notebook_and_fails_loudly(tmp_path, capsys):
    import nbformat

    from scripts import demo

    good = tmp_path / "good.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# A heading\n\nWhy this step\nmatters.\n\n- first\n- second"),
        nbformat.v4.new_code_cell("print('hello from the demo')"), nbformat.v4.new_code_cell("40 + 2")]), good)
    assert demo.main([str(good)]) == 0
    out = capsys.readouterr().out
    assert "A HEADING" in out and "In [1]: print('hello from the demo')" in out and "│ hello from the demo" in out
    assert "Why this step matters." in out and "- first\n- second" in out  # the prose a newcomer needs
    assert "In [2]: 40 + 2\n   Out:\n   │ 42" in out
    assert (tmp_path / "good.html").exists()
    bad = tmp_path / "bad.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")]), bad)
    assert demo.main([str(bad)]) == 1
    assert "ZeroDivisionError" in capsys.readouterr().err
