"""Every notebook under notebooks/ in JupyterLab + Chromium: Run All, as a teacher would before class.

Where a notebook waits for a person (02's approval prompts) the test clicks the buttons, as a person
would; 03's clean-up button is clicked after Run All. Fails on an error output or any browser console
error; keeps a screenshot of every output under test-artifacts/notebooks/ and the run times in
test-artifacts/notebooks/times.json. JupyterLab draws all cells (``windowingMode`` "none"), so every
output is rendered and screenshotted.

Each notebook runs once; its outputs are then read four ways without running again: in the light and the
dark theme (switched in place), and saved, unsigned and reopened untrusted (JupyterLab sanitizes the HTML
and drops every style holding ``var()``), in both themes again. Every visible text of every output must
read at 4.5:1 or better against what is behind it (WCAG AA, ``lab_page.contrast``).
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.jupyterlab import ROOT, JupyterLab
from tests.support.lab_page import (
    ARGS,
    CHROMIUM,
    cell_outputs,
    contrast,
    error_outputs,
    open_and_run_all,
    require_chromium,
    save_and_reopen,
    screenshot_outputs,
    use_theme,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
ARTIFACTS = ROOT / "test-artifacts" / "notebooks"

THEMES = ("JupyterLab Light", "JupyterLab Dark")
#: every output of the open notebook, whoever drew it (hermes_nb, JupyterLab, pandas, ipywidgets)
OUTPUTS = {"outputs": ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output"}

#: What a person clicks during Run All, per notebook: 02's approval prompts wait for these buttons.
CLICKS: dict[str, tuple[str, ...]] = {"02-safe-scheduling.ipynb": ("Approve once", "Deny")}

#: Text each click leaves in the outputs (the prompt's record, and what the approved command did).
AFTER_CLICKS: dict[str, tuple[str, ...]] = {
    "02-safe-scheduling.ipynb": ("Approved once", "build/ still there: False", "Denied", "False — BLOCKED: the person denied this"),
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[JupyterLab, Path]]:
    require_chromium()
    folder = tmp_path_factory.mktemp("notebooks")
    shutil.copytree(ROOT / "notebooks", folder, dirs_exist_ok=True)
    env = {"HERMES_NB_HOME": str(folder / ".home"), "HERMES_NB_WORKSPACE": str(folder)}
    with JupyterLab(folder, env=env, theme=THEMES[0], windowing="none") as server:
        yield server, folder


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for every notebook (each gets a page of its own)."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def times() -> Iterator[dict[str, float]]:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)  # only this run's screenshots
    out: dict[str, float] = {}
    yield out
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "times.json").write_text(json.dumps(out, indent=2))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_in_the_browser(lab: tuple[JupyterLab, Path], browser: Any, times: dict[str, float],
                                      path: Path) -> None:
    server, _folder = lab
    console: list[str] = []
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.on("console", lambda msg: console.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: console.append(f"page error: {exc}"))
        start = time.monotonic()
        state = open_and_run_all(page, server, path.name, timeout=600, clicks=CLICKS.get(path.name, ()),
                                 before_click=lambda page, label: _shoot_prompt(page, label, path.stem))
        times[path.name] = round(time.monotonic() - start, 1)
        errors = error_outputs(page)
        assert state == "done" and not errors, errors
        text = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea").all_inner_texts()
        shots = screenshot_outputs(page, ARTIFACTS, path.stem)
        cleaned = _clean_up(page) if path.name == "03-mcp-and-plugins.ipynb" else None
        start = time.monotonic()
        read = _read_every_way(page, server, path.name)
        times[f"{path.name}: themes, untrusted"] = round(time.monotonic() - start, 1)
    finally:
        page.close()
        _stop_kernels(server)
    assert shots, "no output was rendered"
    missing = [t for t in AFTER_CLICKS.get(path.name, ()) if not any(t in out for out in text)]
    assert not missing, f"not in the outputs: {missing}"
    assert cleaned in (None, "🧹 Cleaned up: hermes_nb unloaded, 0 MCP servers left"), cleaned
    assert not console, "\n".join(console)
    for way, measured in read.items():
        assert measured, f"{way}: no output text"
    low = [f"{way}: {m['ratio']:.2f} {m['color']} {m['text']!r}" for way, measured in read.items()
           for m in measured if m["ratio"] < 4.5]
    assert not low, "text below 4.5:1\n" + "\n".join(low)


def _read_every_way(page: Any, server: JupyterLab, name: str) -> dict[str, list[dict[str, Any]]]:
    """The open notebook's output texts, measured in each theme, then saved and reopened untrusted in each theme
    (ending in the first, the theme the next notebook starts in)."""
    read = {}
    for theme in THEMES:
        use_theme(page, theme)
        read[theme] = contrast(page, OUTPUTS)
    ran = cell_outputs(page)
    save_and_reopen(page, server, name)
    reopened = cell_outputs(page)
    assert not any(c["trusted"] for c in reopened if c["outputs"]), "the saved notebook must reopen untrusted"
    assert [c["outputs"] for c in reopened] == [c["outputs"] for c in ran], "the saved outputs are not all back"
    for theme in reversed(THEMES):
        use_theme(page, theme)
        read[f"untrusted, {theme}"] = contrast(page, OUTPUTS)
    return read


def _shoot_prompt(page: Any, label: str, stem: str) -> None:
    """The prompt as the person sees it, buttons and all, before the test clicks ``label``."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    button = page.get_by_role("button", name=label, exact=True)
    prompt = page.locator(".jp-OutputArea-output", has=button).first
    prompt.scroll_into_view_if_needed()
    prompt.screenshot(path=str(ARTIFACTS / f"{stem}-prompt-{label.lower().replace(' ', '-')}.png"))


def _clean_up(page: object) -> str:
    """Notebook 03 ends with a clean-up button Run All leaves alone: still there after Run All, it then
    unloads the extension when clicked (its label then says how many MCP servers are left)."""
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    button = page.locator(".jp-OutputArea-output .widget-button", has_text="🧹")  # its label changes on click
    expect(button).to_be_enabled()  # Run All did not clean up
    expect(page.get_by_text("picker closed", exact=False)).to_have_count(0)
    button.click()
    expect(button).to_be_disabled(timeout=120_000)
    return button.inner_text().strip()


def _stop_kernels(server: JupyterLab) -> None:
    """Stop every session, so the next notebook does not share the machine with this one's kernel."""
    base = server.url("api/sessions")
    with urllib.request.urlopen(base, timeout=30) as resp:
        sessions = json.load(resp)
    for session in sessions:
        url = server.url(f"api/sessions/{session['id']}")
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=60).close()
