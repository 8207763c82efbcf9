"""Drive a notebook in JupyterLab + Chromium: open it, Run All, wait, read outputs, measure text contrast."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


def require_chromium() -> None:
    if shutil.which(CHROMIUM) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing (apt-get install -y chromium fonts-noto-color-emoji)")
        pytest.skip(f"{CHROMIUM} is not installed")


def wait_for(page: Any, js: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = page.evaluate(js)
        if value:
            return value
        page.wait_for_timeout(200)  # polling with a deadline, not a fixed sleep
    raise TimeoutError(f"not true after {timeout} s: {js}")


_PANEL = "window.jupyterapp.shell.currentWidget"

#: Run All is over: the kernel is idle and every code cell ran, or an error output stopped the run.
_DONE = f"""() => {{
    const panel = {_PANEL};
    const kernel = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
    if (!kernel || kernel.status !== 'idle') return false;
    const cells = panel.content.widgets.filter(c => c.model.type === 'code');
    const outputs = cells.map(c => c.model.outputs.toJSON());
    if (outputs.some(o => o.some(x => x.output_type === 'error'))) return 'error';
    const pending = cells.filter(c => c.model.executionCount === null && c.model.sharedModel.source.trim());
    const running = [...panel.content.node.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('*'));
    return pending.length === 0 && !running ? 'done' : false;
}}"""


def open_and_run_all(page: Any, lab: Any, path: str, timeout: float = 300, *, clicks: Sequence[str] = (),
                     before_click: Callable[[Any, str], Any] | None = None) -> str:
    """Open ``path``, accept a kernel dialog, Run All, and wait; ``'done'`` or ``'error'``.

    ``clicks``: button labels a person would click during the run (an approval prompt's "Approve once"),
    each clicked in order once it shows; a label never shown fails the wait (TimeoutError).
    ``before_click(page, label)`` runs while the button waits (a screenshot of the prompt, say).
    """
    # A workspace of its own, reset: JupyterLab would otherwise reopen the notebooks of earlier pages,
    # whose widgets belong to kernels stopped since
    workspace = "".join(ch if ch.isalnum() else "-" for ch in path)
    page.goto(lab.url(f"lab/workspaces/{workspace}/tree/{path}") + "&reset")
    dialog = page.locator(".jp-Dialog .jp-mod-accept")
    deadline = time.monotonic() + 180
    # ready: the notebook's file and kernel session are loaded, the kernel idle (a kernel-choice dialog
    # may come first: accept the default)
    while not page.evaluate(f"() => !!(window.jupyterapp && {_PANEL} && {_PANEL}.context && {_PANEL}.context.isReady"
                            f" && {_PANEL}.sessionContext.isReady && {_PANEL}.sessionContext.session"
                            f" && {_PANEL}.sessionContext.session.kernel"
                            f" && {_PANEL}.sessionContext.session.kernel.status === 'idle')"):
        if dialog.count():
            dialog.first.click()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path}: the notebook and its kernel were not ready in 180 s")
        page.wait_for_timeout(200)  # polling with a deadline, not a fixed sleep
    # not awaited: Run All's promise settles only when every cell ran, which may wait for ``clicks``
    page.evaluate("() => { window.jupyterapp.commands.execute('runmenu:run-all'); }")
    # started: a cell has run or is running
    wait_for(page, f"() => {_PANEL}.content.widgets.some(c => c.model.type === 'code'"
                   " && (c.model.executionCount !== null || c.node.querySelector('.jp-InputPrompt')"
                   "?.textContent.includes('*')))", 300)
    deadline = time.monotonic() + timeout
    for label in clicks:  # a cell waits for each click; Run All cannot be done before the last one
        wait_for(page, "() => [...document.querySelectorAll('.jp-OutputArea-output .widget-button')]"
                       f".some(b => !b.disabled && b.textContent.trim() === {json.dumps(label)})",
                 max(1.0, deadline - time.monotonic()))
        button = page.locator(".jp-OutputArea-output").get_by_role("button", name=label, exact=True).first
        if before_click is not None:
            before_click(page, label)
        handle = button.element_handle()
        handle.click()
        # answered: the prompt replaced its buttons (so the next label is not found on this prompt)
        page.wait_for_function("b => !b.isConnected", arg=handle,
                               timeout=max(1.0, deadline - time.monotonic()) * 1000)
    return str(wait_for(page, _DONE, max(1.0, deadline - time.monotonic())))


def error_outputs(page: Any) -> list[str]:
    """``ename: evalue`` of every error output in the open notebook."""
    return list(page.evaluate(f"""() => {_PANEL}.content.widgets.flatMap(c => c.model.type !== 'code' ? [] :
        c.model.outputs.toJSON().filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue))"""))


#: For every visible text in outputs: its group, text, contrast ratio against what is behind it.
CONTRAST_JS = r"""(groups) => {
  function parse(c) {
    let m = c.match(/^rgba?\(([^)]+)\)/);
    if (m) { const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
             return [p[0] / 255, p[1] / 255, p[2] / 255, p.length > 3 ? p[3] : 1]; }
    m = c.match(/^color\(srgb ([^)]+)\)/);
    if (m) { const p = m[1].split(/[\s\/]+/).filter(Boolean).map(Number);
             return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; }
    return null;
  }
  const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]);
  function background(el) {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const bg = parse(getComputedStyle(e).backgroundColor);
      if (bg && bg[3] > 0) { layers.push(bg); if (bg[3] >= 1) break; }
    }
    let out = [1, 1, 1, 1];
    for (const layer of layers.reverse()) out = over(layer, out);
    return out;
  }
  function opacity(el) {
    let o = 1;
    for (let e = el; e; e = e.parentElement) o *= Number(getComputedStyle(e).opacity);
    return o;
  }
  const lin = c => c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
  const lum = c => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  const results = [];
  for (const [group, selector] of Object.entries(groups)) {
    for (const root of document.querySelectorAll(selector)) {
      for (const el of [root, ...root.querySelectorAll('*')]) {
        const own = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim();
        if (!own || !el.getClientRects().length) continue;
        const label = el.closest('label');
        if (label && label.querySelector('input:disabled')) continue;  // WCAG: disabled controls are exempt
        if (el.closest('.mod-disabled, button:disabled')) continue;
        const bg = background(el);
        const fg = parse(getComputedStyle(el).color);
        if (!fg) { results.push({group, text: own.slice(0, 60), ratio: 0, color: getComputedStyle(el).color}); continue; }
        const text = over([fg[0], fg[1], fg[2], fg[3] * opacity(el)], bg);
        const [a, b] = [lum(text), lum(bg)].sort((x, y) => y - x);
        results.push({group, text: own.slice(0, 60), ratio: (a + 0.05) / (b + 0.05),
                      color: getComputedStyle(el).color});
      }
    }
  }
  return results;
}"""


def contrast(page: Any, groups: dict[str, str]) -> list[dict[str, Any]]:
    """Open every ``<details>`` in outputs, then measure each text (see ``CONTRAST_JS``)."""
    page.evaluate("() => document.querySelectorAll('.jp-OutputArea details').forEach(d => d.open = true)")
    return list(page.evaluate(CONTRAST_JS, groups))


def screenshot_outputs(page: Any, folder: Path, stem: str) -> list[Path]:
    """One PNG per output area of the open notebook, under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    shots = []
    outputs = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .jp-OutputArea-output")
    for i in range(outputs.count()):
        item = outputs.nth(i)
        if not item.is_visible():
            continue
        path = folder / f"{stem}-output-{i:02d}.png"
        item.scroll_into_view_if_needed()
        item.screenshot(path=str(path))
        shots.append(path)
    return shots


def use_theme(page: Any, theme: str, timeout: float = 30) -> None:
    """Switch the open page to ``theme`` ("JupyterLab Dark") in place: nothing re-runs, the outputs stay. Waits until
    it is drawn (JupyterLab hides its shell while a theme loads and shows it again on the next frame)."""
    page.evaluate("theme => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", theme)
    wait_for(page, f"() => document.body.dataset.jpThemeName === {json.dumps(theme)}"
                   " && !window.jupyterapp.shell.isHidden", timeout)


#: Per code cell of the open notebook: how many outputs its model holds, and whether it is trusted.
_OUTPUTS = f"""() => {_PANEL}.content.widgets.filter(c => c.model.type === 'code')
    .map(c => ({{outputs: c.model.outputs.length, trusted: c.model.trusted}}))"""


def cell_outputs(page: Any) -> list[dict[str, Any]]:
    """``{"outputs": n, "trusted": bool}`` for each code cell of the open notebook."""
    return list(page.evaluate(_OUTPUTS))


def save_and_reopen(page: Any, lab: Any, path: str, timeout: float = 60) -> None:
    """Save the open notebook with its outputs, take its signature away (``lab.untrust``), close it and open it
    again from disk: it is the notebook a teacher hands out. Waits until every saved output is drawn."""
    page.evaluate(f"() => {_PANEL}.context.save()")
    lab.untrust(path)
    page.evaluate(f"""async path => {{
        const old = {_PANEL};
        if (old.context.model.dirty) throw new Error(path + ': changed after it was saved');
        old.dispose();  // its context goes with it: the next open reads the file again
        const panel = await window.jupyterapp.commands.execute('docmanager:open', {{path, factory: 'Notebook'}});
        if (panel.context === old.context) throw new Error(path + ': reopened from memory, not from disk');
        await panel.context.ready;
    }}""", path)
    # drawn: one output node per output of the model, in every cell (windowingMode "none" draws every cell)
    wait_for(page, f"""() => {{
        const panel = {_PANEL};
        if (!panel || !panel.context || !panel.context.isReady) return false;
        const held = panel.content.widgets.filter(c => c.model.type === 'code')
            .reduce((n, c) => n + c.model.outputs.length, 0);
        return panel.content.node.querySelectorAll('.jp-OutputArea-child .jp-OutputArea-output').length >= held;
    }}""", timeout)
