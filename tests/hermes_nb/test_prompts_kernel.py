"""The inline prompts in a real kernel: cells queued behind a prompt keep their order, ■ stops the wait.

The clicks are real widget comm messages on the shell channel, as JupyterLab sends them.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.hermes_nb.test_agent_approval_kernel import _button_ids
from tests.support.kernel import KernelSession

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(240)]


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
        ks.kc.execute("from hermes_nb.prompts import approval_prompt\n"
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
