"""The toolset picker in a real JupyterLab and Chromium: rendered, clicked, read back by the kernel."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from tests.support.jupyterlab import ROOT, JupyterLab
from tests.support.lab_page import ARGS, CHROMIUM
from tests.support.lab_page import require_chromium as _require_chromium
from tests.support.lab_page import wait_for as _wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]

ARTIFACTS = ROOT / "test-artifacts"

CELLS = [
    "%load_ext hermes_nb",
    '%%tool --toolset geometry --emoji 📐\ndef area(width: float, height: float = 1.0) -> dict:\n'
    '    """Area of a rectangle."""\n    return {"area": width * height}',
    '%%tool --toolset text --emoji 🔤 --read-only\ndef word_count(text: str) -> dict:\n'
    '    """Count the words in a text."""\n    return {"words": len(text.split())}',
    "%toolsets",
    'import hermes_nb\nprint("SELECTION", hermes_nb.toolsets.enabled_toolsets())',
]


def _write_notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    # kernelspec metadata, so JupyterLab starts python3 without asking
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, path)


def test_picker_renders_and_a_click_reaches_the_kernel(tmp_path: Path) -> None:
    _require_chromium()
    from playwright.sync_api import expect, sync_playwright

    _write_notebook(tmp_path / "picker.ipynb")
    ARTIFACTS.mkdir(exist_ok=True)
    with JupyterLab(tmp_path, env={"HERMES_NB_HOME": str(tmp_path / "home")}) as lab, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(lab.url("lab/tree/picker.ipynb"))
            _wait_for(page, "() => !!(window.jupyterapp && window.jupyterapp.shell.currentWidget"
                            " && window.jupyterapp.shell.currentWidget.sessionContext"
                            " && window.jupyterapp.shell.currentWidget.sessionContext.session"
                            " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel)", 90)
            dialog = page.locator(".jp-Dialog .jp-mod-accept")
            if dialog.count():  # a kernel-choice dialog: accept the default
                dialog.first.click()
            page.evaluate("window.jupyterapp.commands.execute('runmenu:run-all')")

            # the checkboxes themselves (the static record below the picker repeats the labels in a table)
            geometry = page.get_by_role("checkbox", name="geometry (1 tool)", exact=True)
            text_box = page.get_by_role("checkbox", name="text (1 tool)", exact=True)
            expect(geometry).to_be_visible(timeout=90_000)
            expect(text_box).to_be_visible()
            # Run All finished; the default selection is the person's own toolsets (issue 31), both ticked
            expect(page.get_by_text(re.compile(r"SELECTION \[('geometry', 'text'|'text', 'geometry')\]"))).to_be_visible(
                timeout=60_000)

            text_box.click()  # untick the text toolset
            expect(page.get_by_text("the model sees", exact=False).first).to_be_visible()
            # JupyterLab's "get notified about official Jupyter news?" toast must not cover the picker
            expect(page.get_by_text("official Jupyter news", exact=False)).to_have_count(0)
            page.screenshot(path=str(ARTIFACTS / "toolset-picker.png"), full_page=True)

            last = len(CELLS) - 1
            page.evaluate(f"""() => {{
                const panel = window.jupyterapp.shell.currentWidget;
                panel.content.activeCellIndex = {last};
                return window.jupyterapp.commands.execute('notebook:run-cell');
            }}""")
            out = page.locator(".jp-OutputArea-output", has_text="SELECTION ['geometry']")  # the re-run's, not Run All's
            expect(out).to_be_visible(timeout=60_000)
            selection = out.inner_text()
            page.screenshot(path=str(ARTIFACTS / "toolset-picker-after-click.png"), full_page=True)
        finally:
            browser.close()
    assert "'geometry'" in selection and "'text'" not in selection, selection
