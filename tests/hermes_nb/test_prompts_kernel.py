"""The inline prompts in a real kernel: cells queued behind a prompt keep their order, ■ stops the wait.

The clicks are real widget comm messages on the shell channel, as JupyterLab sends them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.hermes_nb.test_agent_approval_kernel import _button_ids
from tests.support.kernel import KernelSession

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(240)]


def test_kernel_runs_the_expected_ipykernel(tmp_path: Path) -> None:
    """Run from the ipykernel 6.29 venv (test_prompts_ipykernel6), the kernels really are 6.29."""
    expected = os.environ.get("HERMES_NB_EXPECT_IPYKERNEL", "")
    with KernelSession(cwd=tmp_path) as ks:
        out = ks.run("import ipykernel; print('IPYKERNEL', ipykernel.__version__)")
    assert f"IPYKERNEL {expected}" in out.stdout, out.stdout


def _click(ks: KernelSession, comm_id: str) -> None:
    click = {"comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}}}
    ks.kc.shell_channel.send(ks.kc.session.msg("comm_msg", click))


def test_cells_queued_behind_a_prompt_run_in_order(tmp_path: Path) -> None:
    """Run All: the requests held back while the prompt waited run after it, in the order they came.

    A first cell blocks until every request has reached the kernel, so that when it ends the kernel's
    stream has read the prompt cell and the next one, and the prompt holds back the rest: the case in
    which the replay used to overtake the next cell.
    """
    gate = tmp_path / "all-sent"
    with KernelSession(cwd=tmp_path, env={"HERMES_NB_HOME": str(tmp_path / "home")}) as ks:
        ks.run("%load_ext hermes_nb\norder = []")
        ks.kc.execute(f"import pathlib, time\nwhile not pathlib.Path({str(gate)!r}).exists(): time.sleep(0.02)")
        ks.kc.execute("from hermes_nb.display.prompts import approval_prompt\n"
                      "order.append(approval_prompt('rm x', 'rm', 'deletes files'))")
        for i in range(1, 5):
            ks.kc.execute(f"order.append({i})")
        last = ks.kc.execute("print('ORDER', order)")
        gate.touch()
        buttons = _button_ids(ks, {"Approve once"}, time.monotonic() + 60)
        assert buttons, "the approval prompt never appeared"
        _click(ks, buttons["Approve once"])
        out = ks.collect(last)
    assert "ORDER ['once', 1, 2, 3, 4]" in out.stdout, out.stdout


@pytest.mark.parametrize("start", ["agent.run", "await agent.arun"])
def test_interrupt_during_a_prompt_stops_the_agent_run(tmp_path: Path, start: str) -> None:
    """■ while the approval prompt waits inside ``Agent.run``: the run stops as on any interrupt, the call
    gets one answer ("interrupted"), nothing runs, the model is not asked again, and the buttons
    become a record."""
    from tests.support.fake_openai import FakeOpenAI, Reply, call

    victim = tmp_path / "scratch"
    victim.mkdir()
    script = [Reply(tool_calls=(call("terminal", {"command": f"rm -rf {victim}"}, "t1"),)),
              Reply(content="carried on after the interrupt")]
    env = {"HERMES_NB_HOME": str(tmp_path / "home"), "HERMES_NB_WORKSPACE": str(tmp_path)}
    with FakeOpenAI(script) as srv, KernelSession(cwd=tmp_path, env=env) as ks:
        ks.run("%load_ext hermes_nb")
        ks.run(f"from hermes_nb import Agent\nagent = Agent(model='m', base_url={srv.base_url!r}, "
               "enabled_toolsets=['terminal'])")
        running = ks.kc.execute(
            f"result = {start}('clean the scratch folder')\n"
            "tools = [m for m in agent.messages if m['role'] == 'tool']\n"
            "print('REASON', result.stopped_reason)\n"
            "print('TOOLS', [(m['tool_call_id'], m['content']) for m in tools])\n")
        assert _button_ids(ks, {"Approve once"}, time.monotonic() + 60), "the approval prompt never appeared"
        ks.interrupt()
        out = ks.collect(running, timeout=60)
        after = ks.run("print('NEXT CELL RUNS')")
    assert "REASON interrupted" in out.stdout, out.stdout
    assert "TOOLS [('t1', " in out.stdout and "interrupted" in out.stdout.split("TOOLS", 1)[1], out.stdout
    assert victim.exists()
    assert len(srv.requests) == 1  # the agent did not carry on to another model turn
    records = [o["data"].get("text/html", "") for o in out.outputs if o["type"] == "update_display_data"]
    assert any("Interrupted" in html and "rm -rf" in html for html in records), records
    assert "NEXT CELL RUNS" in after.stdout


def test_nbclient_run_fails_fast_and_the_model_hears_no_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """nbconvert/nbclient (an autograder): nobody can click, so no prompt waits; one line says so, and the
    model is told that no one was available to answer, not that the person denied it."""
    import nbformat
    from nbclient import NotebookClient

    from tests.support.fake_openai import FakeOpenAI, Reply, call

    victim = tmp_path / "scratch"
    victim.mkdir()
    script = [Reply(tool_calls=(call("terminal", {"command": f"rm -rf {victim}"}, "t1"),)),
              Reply(content="I could not get an approval.")]
    with FakeOpenAI(script) as srv:
        cells = ["%load_ext hermes_nb",
                 f"from hermes_nb import Agent\nagent = Agent(model='m', base_url={srv.base_url!r}, "
                 "enabled_toolsets=['terminal'])\nresult = agent.run('clean the scratch folder')",
                 "print('REASON', result.stopped_reason)"]
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        monkeypatch.setenv("HERMES_NB_HOME", str(tmp_path / "home"))  # the kernel nbclient starts inherits these
        monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
        # the timeout is far below a prompt's 300 s: a silent wait fails here as a cell timeout
        NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    agent_cell = nb.cells[1]
    stdout = "".join(o.get("text", "") for o in agent_cell.outputs if o.output_type == "stream")
    told = [line for line in stdout.splitlines() if line.startswith("hermes_nb: no one can answer")]
    assert len(told) == 1, stdout
    assert not any("widget-view" in str(o.get("data", {})) for o in agent_cell.outputs)  # no buttons shown
    tool_answer = [m for m in srv.requests[-1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_answer] == ["t1"]
    assert "no one is available" in tool_answer[0]["content"] and "denied" not in tool_answer[0]["content"]
    assert victim.exists()
    assert "REASON done" in nb.cells[2].outputs[0]["text"]
