"""The approval prompt in a real JupyterLab 4 and Chromium, during a Run All of several cells.

An ``Agent.run`` cell (the scripted model server on 127.0.0.1, reached from the kernel) asks to run
``rm -rf``; the test clicks "Approve once" in the page, and the cells after it run in order. A second
``Agent.run`` later in the same Run All asks again; the test presses ■ in the toolbar: that run stops
as on any interrupt, the buttons become a record, and the remaining cells still run, in order.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import nbformat
import pytest

from tests.hermes_nb.test_browser import ARTIFACTS
from tests.support.fake_openai import FakeOpenAI, Reply, call
from tests.support.jupyterlab import JupyterLab
from tests.support.lab_page import ARGS, CHROMIUM
from tests.support.lab_page import require_chromium as _require_chromium
from tests.support.lab_page import wait_for as _wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]


def _cells(base_url: str, one: Path, two: Path) -> list[str]:
    return [
        "%load_ext hermes_nb\norder = []",
        f"from hermes_nb import Agent\nagent = Agent(model='m', base_url={base_url!r}, enabled_toolsets=['terminal'])\n"
        "order.append('setup')",
        "first = agent.run('clean scratch one')\norder.append(('first', first.stopped_reason))",
        "order.append(3)",
        "order.append(4)",
        "second = agent.run('clean scratch two')\norder.append(('second', second.stopped_reason))",
        "order.append(6)",
        "print('ORDER', order)",
    ]


def _write_notebook(path: Path, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, path)


def _render_every_cell(root: Path) -> None:
    """JupyterLab 4 draws only visible cells; with windowing off every cell's output is in the page."""
    tracker = root / ".jupyterlab-settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True, exist_ok=True)
    tracker.write_text(json.dumps({"windowingMode": "none"}))


def test_approval_click_and_interrupt_during_run_all(tmp_path: Path) -> None:
    _require_chromium()
    from playwright.sync_api import expect, sync_playwright

    one, two = tmp_path / "scratch-one", tmp_path / "scratch-two"
    one.mkdir()
    two.mkdir()
    script = [
        Reply(tool_calls=(call("terminal", {"command": f"rm -rf {one}"}, "t1"),)),
        Reply(content="Cleaned scratch one."),
        Reply(tool_calls=(call("terminal", {"command": f"rm -rf {two}"}, "t2"),)),
        Reply(content="carried on after the interrupt"),  # must never be asked for
    ]
    ARTIFACTS.mkdir(exist_ok=True)
    _render_every_cell(tmp_path)
    env = {"HERMES_NB_HOME": str(tmp_path / "home"), "HERMES_NB_WORKSPACE": str(tmp_path)}
    timings: dict[str, float] = {}
    with FakeOpenAI(script) as srv:
        cells = _cells(srv.base_url, one, two)
        _write_notebook(tmp_path / "prompt.ipynb", cells)
        with JupyterLab(tmp_path, env=env) as lab, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1400})
                page.goto(lab.url("lab/tree/prompt.ipynb"))
                _wait_for(page, "() => !!(window.jupyterapp && window.jupyterapp.shell.currentWidget"
                                " && window.jupyterapp.shell.currentWidget.sessionContext"
                                " && window.jupyterapp.shell.currentWidget.sessionContext.session"
                                " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel)", 90)
                dialog = page.locator(".jp-Dialog .jp-mod-accept")
                if dialog.count():
                    dialog.first.click()
                start = time.monotonic()
                # not awaited: Run All's promise settles only when every cell ran, after the clicks below
                page.evaluate("() => { window.jupyterapp.commands.execute('runmenu:run-all'); }")

                approve = page.get_by_role("button", name="Approve once", exact=True)
                expect(approve).to_have_count(1, timeout=120_000)
                timings["first prompt shown"] = time.monotonic() - start
                page.screenshot(path=str(ARTIFACTS / "approval-prompt.png"), full_page=True)
                # the running card says it once, and the footer says who is awaited (issue 35), not the model
                expect(page.get_by_text("⏳", exact=False)).to_have_count(2)
                expect(page.get_by_text("⏳ waiting for you", exact=False)).to_have_count(1)
                expect(page.get_by_text("waiting for the model", exact=False)).to_have_count(0)
                approve.click()
                expect(page.get_by_text("Approved once", exact=False).first).to_be_visible(timeout=60_000)
                expect(page.get_by_text("Cleaned scratch one.", exact=False).first).to_be_visible(timeout=60_000)

                # the second run asks again; ■ in the notebook toolbar while its prompt waits
                expect(approve).to_have_count(1, timeout=120_000)
                timings["second prompt shown"] = time.monotonic() - start
                page.locator("jp-button[data-command='notebook:interrupt-kernel']").first.click()
                expect(page.get_by_text("ORDER [", exact=False)).to_be_visible(timeout=120_000)
                timings["run all finished"] = time.monotonic() - start
                expect(page.get_by_text("⏹ Interrupted", exact=False).first).to_be_visible()
                expect(page.locator(".widget-button")).to_have_count(0)  # no dead buttons left
                page.screenshot(path=str(ARTIFACTS / "approval-after-interrupt.png"), full_page=True)
                order = page.get_by_text("ORDER [", exact=False).inner_text()
            finally:
                browser.close()
    print("browser timings (s):", {k: round(v, 1) for k, v in timings.items()})
    assert order.strip() == "ORDER ['setup', ('first', 'done'), 3, 4, ('second', 'interrupted'), 6]", order
    assert not one.exists() and two.exists()
    assert len(srv.requests) == 3  # the interrupted run did not go on to another model turn
    answers = [m for m in srv.requests[-1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answers] == ["t1"]
