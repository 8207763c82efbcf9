"""A saved notebook a teacher hands out, opened untrusted: hermes_nb's output still reads (issue 26, item 5).

The notebook is executed offline (nbclient) and saved unsigned, so JupyterLab opens it untrusted and
sanitizes its HTML: no JavaScript, SVG removed, and every style declaration holding ``var()`` dropped.
Measured in both themes (switched in place on one page): the timeline's and the evaluation chart's bars
keep a colour and a width, the transcript keeps its border, and every text of the transcript, the cards
and the evaluation table reads at 4.5:1 or better.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.support.jupyterlab import ROOT, JupyterLab
from tests.support.lab_page import ARGS, CHROMIUM, contrast, require_chromium, use_theme, wait_for

ARTIFACTS = ROOT / "test-artifacts" / "untrusted"

CELLS = [
    "%load_ext hermes_nb",
    '%%tool --toolset demo --read-only --emoji 🌦\ndef weather(city: str) -> dict:\n'
    '    """Today\'s weather for a city (canned data for this demo).\n\n    Args:\n        city: The city name.\n    """\n'
    '    table = {"paris": ("sunny", 21), "oslo": ("light rain", 12)}\n'
    '    sky, temp = table.get(city.lower(), ("unknown", None))\n    return {"city": city, "sky": sky, "temp_c": temp}',
    "%tools call weather city=Paris",
    "%%agent --model replay:cassettes/quickstart_magic.json --toolsets demo --new\n"
    "Is it warmer in Paris or in Oslo today? One sentence.",
    "import json\nfrom hermes_nb import timeline\nfrom hermes_nb.tools.batch.scheduling import run_tool_batch\n"
    "calls = [{'id': f'c{i}', 'type': 'function', 'function': {'name': 'weather', 'arguments': json.dumps({'city': c})}}"
    " for i, c in enumerate(['Paris', 'Oslo'])]\ntimeline(run_tool_batch(calls), titles=['two lookups'])",
    "from hermes_nb.evaluation.cases import CallMade, Case, Outcome\nfrom hermes_nb.evaluation.result import build_result\n"
    "cases = [Case(index=0, prompt='weather in Paris', expected_tools=('weather',)),"
    " Case(index=1, prompt='say hi', expected_tools=())]\n"
    "outcomes = {0: Outcome(index=0, fingerprint=cases[0].fingerprint, text='sunny', calls=(CallMade(name='weather',"
    " arguments={'city': 'Paris'}),), tokens=30, seconds=0.1, api_calls=2, stopped_reason='done'),"
    " 1: Outcome(index=1, fingerprint=cases[1].fingerprint, text='hi', calls=(CallMade(name='weather', arguments={}),),"
    " tokens=10, seconds=0.1, api_calls=1, stopped_reason='done')}\nbuild_result(cases, outcomes, seconds=0.2)",
]

GROUPS = {"transcript": ".hermes-nb-transcript", "cards": ".hermes-nb-card, .hermes-nb-result",
          "evaluation": ".hermes-nb-eval"}

#: The bars (timeline, evaluation chart) and the transcript's border as the page draws them.
DRAWN_JS = r"""() => {
  const opaque = c => c && c !== 'transparent' && !/rgba\(.*,\s*0\)$/.test(c);
  const bars = [...document.querySelectorAll('.jp-OutputArea-output div')]
    .filter(d => d.style.height === '10px' && d.style.position === 'absolute'
                 || d.parentElement && d.parentElement.parentElement
                    && d.parentElement.parentElement.closest('.hermes-nb-eval-chart') && d.style.height === '14px')
    .map(d => ({width: d.getBoundingClientRect().width, colour: getComputedStyle(d).backgroundColor}));
  const t = document.querySelector('.hermes-nb-transcript');
  const s = t ? getComputedStyle(t) : null;
  return {bars: bars.map(b => b.width > 0 && opaque(b.colour)), chart: !!document.querySelector('.hermes-nb-eval-chart'),
          border: s ? parseFloat(s.borderLeftWidth) > 0 && opaque(s.borderLeftColor) : false,
          trusted: window.jupyterapp.shell.currentWidget.content.widgets
                     .filter(c => c.model.type === 'code').some(c => c.model.trusted)};
}"""


def _executed_notebook(folder: Path) -> str:
    shutil.copytree(ROOT / "notebooks" / "cassettes", folder / "cassettes")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    nbformat.write(nb, folder / "handout.ipynb")  # unsigned: JupyterLab opens it untrusted
    return "handout.ipynb"


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_saved_notebook_opened_untrusted_reads_in_both_themes(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    require_chromium()
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("HERMES_NB_HOME", str(tmp_path / "home"))
    path = _executed_notebook(tmp_path)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    seen: dict[str, tuple[dict[str, object], list[dict[str, object]]]] = {}
    with JupyterLab(tmp_path, theme="JupyterLab Light", windowing="none") as lab, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(lab.url(f"lab/workspaces/untrusted/tree/{path}") + "&reset")
            wait_for(page, "() => document.querySelectorAll('.hermes-nb-eval').length > 0", 120)
            for theme in ("JupyterLab Light", "JupyterLab Dark"):
                stem = theme.split()[-1].lower()
                use_theme(page, theme)
                seen[stem] = (page.evaluate(DRAWN_JS), contrast(page, GROUPS))
                page.screenshot(path=str(ARTIFACTS / f"untrusted-{stem}.png"), full_page=True)
        finally:
            browser.close()
    for stem, (drawn, measured) in seen.items():
        assert drawn["trusted"] is False, "the handed-out notebook must open untrusted"
        assert len(drawn["bars"]) >= 4 and all(drawn["bars"]), (stem, drawn)  # timeline (2) and chart bars
        assert drawn["chart"] and drawn["border"], (stem, drawn)
        for group in GROUPS:
            assert any(m["group"] == group for m in measured), f"no {group} text in {stem}"
        low = [m for m in measured if m["ratio"] < 4.5]
        assert not low, stem + "\n" + "\n".join(f"{m['group']}: {m['ratio']:.2f} {m['color']} {m['text']!r}"
                                                for m in low)
