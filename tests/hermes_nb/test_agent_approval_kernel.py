"""A real click on a real approval prompt, while Agent.run waits in a sync cell of a real kernel.

The terminal tool runs in a worker thread; its prompt must reach the main thread (tools.interaction)
and the click must arrive over the shell channel while the cell is still running.
"""

from __future__ import annotations

import queue
import time
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply, call
from tests.support.kernel import KernelSession

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(240)]


def _button_ids(ks: KernelSession, labels: set[str], deadline: float) -> dict[str, str]:
    found: dict[str, str] = {}
    while time.monotonic() < deadline and set(found) != labels:
        try:
            msg = ks.kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if msg["msg_type"] != "comm_open":
            continue
        state = msg["content"].get("data", {}).get("state", {})
        if state.get("_model_name") == "ButtonModel" and state.get("description") in labels:
            found[state["description"]] = msg["content"]["comm_id"]
    return found


@pytest.mark.parametrize(
    ("label", "ran", "cell"),
    [
        ("Approve once", True, "result = agent.run('clean the scratch folder')"),
        ("Deny", False, "result = agent.run('clean the scratch folder')"),
        ("Approve once", True, "result = await agent.arun('clean the scratch folder')"),
    ],
    ids=["run-once", "run-deny", "arun-once"],
)
def test_click_on_inline_approval_during_agent_run(tmp_path: Path, label: str, ran: bool, cell: str) -> None:
    victim = tmp_path / "scratch"
    victim.mkdir()
    script = [
        Reply(tool_calls=(call("terminal", {"command": f"rm -rf {victim}"}, "t1"),)),
        Reply(content="Cleaned up." if ran else "Left it alone."),
    ]
    env = {"HERMES_NB_HOME": str(tmp_path / "home"), "HERMES_NB_WORKSPACE": str(tmp_path)}
    with FakeOpenAI(script) as srv, KernelSession(cwd=tmp_path, env=env) as ks:
        ks.run("%load_ext hermes_nb")
        ks.run(f"from hermes_nb import Agent\nagent = Agent(model='m', base_url={srv.base_url!r}, "
               "enabled_toolsets=['terminal'])")
        running = ks.kc.execute(f"{cell}\nprint('DONE', result.text)")
        buttons = _button_ids(ks, {"Approve once", "Deny"}, time.monotonic() + 60)
        assert set(buttons) == {"Approve once", "Deny"}, "the approval prompt never appeared"
        click = {"comm_id": buttons[label], "data": {"method": "custom", "content": {"event": "click"}}}
        ks.kc.shell_channel.send(ks.kc.session.msg("comm_msg", click))
        out = ks.collect(running, timeout=60)
    assert ("DONE Cleaned up." if ran else "DONE Left it alone.") in out.stdout
    # the prompt's static record replaced the buttons in this very cell's output (not some other cell)
    records = [o["data"].get("text/html", "") for o in out.outputs if o["type"] == "update_display_data"]
    assert any(("Denied" if not ran else "Approved") in html and "rm -rf" in html for html in records)
    # ...and ends on the call's card in the transcript, with nothing left below it (issue 35)
    shown: dict[str, list[dict[str, str]]] = {}
    for o in out.outputs:
        if o["type"] in ("display_data", "update_display_data") and o.get("transient", {}).get("display_id"):
            shown.setdefault(o["transient"]["display_id"], []).append(o["data"])
    prompt_ids = [d for d, data in shown.items() if "application/vnd.jupyter.widget-view+json" in data[0]]
    assert [shown[d][-1].get("text/html") for d in prompt_ids] == [""]
    said = "Approved once by you" if ran else "Denied by you"
    assert any(said in data[-1].get("text/html", "") for d, data in shown.items() if d not in prompt_ids)
    assert victim.exists() is not ran
    tool_answer = [m for m in srv.requests[-1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_answer] == ["t1"]
    assert ("denied" in tool_answer[0]["content"]) is not ran
