"""Every notebook under notebooks/ in JupyterLab + Chromium: Run All, as a teacher would before class.

Fails on an error output or a browser console error (one known, named below); keeps a screenshot of every output under
test-artifacts/notebooks/ and the run times in test-artifacts/notebooks/times.json. JupyterLab draws
all cells (``windowingMode`` "none"), so every output is rendered and screenshotted.
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.jupyterlab import ROOT, JupyterLab
from tests.support.lab_page import (
    ARGS,
    CHROMIUM,
    error_outputs,
    open_and_run_all,
    require_chromium,
    screenshot_outputs,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
ARTIFACTS = ROOT / "test-artifacts" / "notebooks"



#: Known console errors, per notebook, each with its reason. Notebook 02's scripted "Deny" answers an
#: approval prompt in the cell that shows it; hermes_nb.prompts then replaces the prompt's children and
#: closes its buttons, and when the front end is still drawing them ipywidgets logs this (intermittent,
#: about one run in three here). Issue 10 replaces that cell with real buttons a person clicks.
KNOWN: dict[str, tuple[str, ...]] = {"02-safe-scheduling.ipynb": ("Could not add child view to box",)}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[JupyterLab, Path]]:
    require_chromium()
    folder = tmp_path_factory.mktemp("notebooks")
    shutil.copytree(ROOT / "notebooks", folder, dirs_exist_ok=True)
    env = {"HERMES_NB_HOME": str(folder / ".home"), "HERMES_NB_WORKSPACE": str(folder)}
    with JupyterLab(folder, env=env, windowing="none") as server:
        yield server, folder


@pytest.fixture(scope="module")
def times() -> Iterator[dict[str, float]]:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)  # only this run's screenshots
    out: dict[str, float] = {}
    yield out
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "times.json").write_text(json.dumps(out, indent=2))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_in_the_browser(lab: tuple[JupyterLab, Path], times: dict[str, float], path: Path) -> None:
    from playwright.sync_api import sync_playwright

    server, _folder = lab
    console: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda msg: console.append(msg.text) if msg.type == "error" else None)
            page.on("pageerror", lambda exc: console.append(f"page error: {exc}"))
            start = time.monotonic()
            state = open_and_run_all(page, server, path.name, timeout=600)
            times[path.name] = round(time.monotonic() - start, 1)
            errors = error_outputs(page)
            shots = screenshot_outputs(page, ARTIFACTS, path.stem)
        finally:
            browser.close()
            _stop_kernels(server)
    assert state == "done" and not errors, errors
    assert shots, "no output was rendered"
    unknown = [m for m in console if not any(k in m for k in KNOWN.get(path.name, ()))]
    assert not unknown, "\n".join(unknown)


def _stop_kernels(server: JupyterLab) -> None:
    """Stop every session, so the next notebook does not share the machine with this one's kernel."""
    base = server.url("api/sessions")
    with urllib.request.urlopen(base, timeout=30) as resp:
        sessions = json.load(resp)
    for session in sessions:
        url = server.url(f"api/sessions/{session['id']}")
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=60).close()
