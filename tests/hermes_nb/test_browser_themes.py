"""Both themes: hermes_nb's HTML takes its colours from JupyterLab, and its text reads in light and dark.

The browser test runs one notebook (tool cards with a warning, an error result with its traceback, the
picker, an agent transcript from a recording and its %trace waterfall, an evaluation, a batch's segments and
timeline, a comparison of two selections, a plan's checklist, a call's countdown line) once in JupyterLab,
then measures the contrast of every visible text from computed styles (WCAG AA: 4.5:1) in the light theme
and, switched in place, the dark one.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.support.jupyterlab import ROOT, JupyterLab
from tests.support.lab_page import (
    ARGS,
    CHROMIUM,
    contrast,
    error_outputs,
    open_and_run_all,
    require_chromium,
    use_theme,
)

ARTIFACTS = ROOT / "test-artifacts" / "themes"
HTML_MODULES = ["display/cards.py", "display/live/render.py", "display/live/seen.py", "display/picker.py",
                "display/prompts.py", "display/markdown.py", "traces/waterfall.py", "display/segments.py",
                "display/timeline.py", "display/checklist.py", "display/countdown.py", "display/jobs.py",
                "display/nested.py", "display/progress.py", "evaluation/compare.py", "magics/memory.py"]
THEMES = ("JupyterLab Light", "JupyterLab Dark")

CELLS = [
    "%load_ext hermes_nb",
    '%%tool --toolset demo --read-only --emoji 🌦\ndef weather(city: str) -> dict:\n'
    '    """Today\'s weather for a city (canned data for this demo).\n\n    Args:\n'
    '        city: The city name, e.g. "Paris".\n        citty: a typo, for a warning\n    """\n'
    '    table = {"paris": ("sunny", 21), "oslo": ("light rain", 12)}\n'
    '    sky, temp = table.get(city.lower(), ("unknown", None))\n    return {"city": city, "sky": sky, "temp_c": temp}',
    '%%tool --toolset demo\ndef ratio(a: float, b: float) -> float:\n    """a / b."""\n'
    '    print("dividing", a, "by", b)\n    return a / b',
    "%tools call ratio a=1 b=0",
    "%tools call weather city=Paris",
    "%toolsets",
    "%%agent --model replay:cassettes/quickstart_magic.json --toolsets demo --new\n"
    "Is it warmer in Paris or in Oslo today? One sentence.",
    "%trace",  # the run's waterfall (issue 36): its labels and figures read in both themes
    # an evaluation's table and chart (issue 26: the chart's labels were black on the dark theme)
    "from hermes_nb.evaluation.cases import CallMade, Case, Outcome\nfrom hermes_nb.evaluation.result import build_result\n"
    "cases = [Case(index=0, prompt='weather in Paris', expected_tools=('weather',))]\n"
    "build_result(cases, {0: Outcome(index=0, fingerprint=cases[0].fingerprint, text='sunny', calls=(CallMade("
    "name='weather', arguments={'city': 'Paris'}),), tokens=30, seconds=0.1, api_calls=2, stopped_reason='done')},"
    " seconds=0.2)",
    # issue 35: why calls ran together or apart (segments), the timeline's labels, legend, axis and an error
    "import json\nfrom hermes_nb import timeline\nfrom hermes_nb.display.segments import explain\n"
    "from hermes_nb.tools.batch.scheduling import run_tool_batch\n"
    "calls = [{'id': f'c{i}', 'type': 'function', 'function': {'name': n, 'arguments': json.dumps(a)}} for i, (n, a)"
    " in enumerate([('weather', {'city': 'Paris'}), ('weather', {'city': 'Oslo'}), ('ratio', {'a': 1, 'b': 0})])]\n"
    "display(explain(calls))\ntimeline(run_tool_batch(calls), titles=['two lookups, one division'])",
    "import hermes_nb\nhermes_nb.compare(['demo'], ['demo', 'todo'])",  # two selections side by side
    "from IPython.display import HTML\nfrom hermes_nb.display.checklist import checklist_html\n"
    "plan = [{'id': '1', 'content': 'count', 'status': 'completed'}, {'id': '2', 'content': 'plot',"
    " 'status': 'in_progress'}, {'id': '3', 'content': 'write up', 'status': 'pending'},"
    " {'id': '4', 'content': 'old idea', 'status': 'cancelled'}]\n"
    "HTML(checklist_html(plan, updates=2, history=[plan[:1], plan]))",
    # the line under %tools call while a tool runs (cleared when it returns, so kept drawn here)
    "from hermes_nb.display.countdown import Countdown\nCountdown('slow_tool', 60, display=True, every=3600).__enter__();",
]


def _outputs_of(cell: int) -> str:
    """The outputs of the notebook's cell ``cell`` (from 0; every cell is drawn: ``windowingMode`` "none")."""
    return f".jp-Notebook .jp-Cell:nth-child({cell + 1} of .jp-Cell) .jp-OutputArea-output"

GROUPS = {
    "transcript": ".hermes-nb-transcript",
    "cards": ".hermes-nb-card, .hermes-nb-result",
    "picker": ".jp-OutputArea-output .widget-vbox:not(.widget-vbox .widget-vbox)",
    "evaluation": ".hermes-nb-eval",  # its table and chart (issue 26)
    "trace": ".hermes-nb-trace",  # %trace's waterfall (issue 36)
    "segments and timeline": _outputs_of(len(CELLS) - 4),
    "comparison": _outputs_of(len(CELLS) - 3),
    "checklist": ".hermes-nb-checklist",
    "countdown": _outputs_of(len(CELLS) - 1),
}


def test_html_colours_come_from_jupyterlab_variables() -> None:
    """No colour literal outside a ``var(--jp-..., fallback)`` in the modules that write HTML."""
    bare = re.compile(r"(?<![,\w])#[0-9a-fA-F]{3,8}\b")
    for name in HTML_MODULES:
        source = (ROOT / "hermes_nb" / name).read_text()
        code = "\n".join(line.split("#", 1)[0] if line.lstrip().startswith("#") else line
                         for line in source.splitlines())
        found = [m.group(0) for m in bare.finditer(code)]
        assert not found, f"{name}: colour literals outside var(): {found}"


def _notebook(folder: Path) -> str:
    shutil.copytree(ROOT / "notebooks" / "cassettes", folder / "cassettes")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, folder / "themes.ipynb")
    return "themes.ipynb"


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_text_contrast_in_both_themes(tmp_path: Path) -> None:
    require_chromium()
    from playwright.sync_api import sync_playwright

    path = _notebook(tmp_path)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    measured: dict[str, list[dict[str, Any]]] = {}
    with JupyterLab(tmp_path, env={"HERMES_NB_HOME": str(tmp_path / "home")}, theme=THEMES[0],
                    windowing="none") as lab, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            state = open_and_run_all(page, lab, path)
            assert state == "done", error_outputs(page)
            # the picker's static record hides beside the drawn widget: one visible "the model sees" line
            shown = page.evaluate("""() => [...document.querySelectorAll('.jp-OutputArea-output')]
                .filter(o => o.getClientRects().length && o.innerText.includes('the model sees')).length""")
            assert shown == 1, shown
            for theme in THEMES:  # run once, read in each theme
                use_theme(page, theme)
                light = page.evaluate("() => document.body.dataset.jpThemeLight")
                assert light == ("true" if theme == THEMES[0] else "false")  # the theme really is the one asked for
                measured[theme] = contrast(page, GROUPS)
                page.screenshot(path=str(ARTIFACTS / f"themes-{theme.split()[-1].lower()}.png"), full_page=True)
        finally:
            browser.close()
    for theme, found in measured.items():
        for group in GROUPS:
            assert any(m["group"] == group for m in found), f"no {group} text found in {theme}"
    low = [f"{theme}, {m['group']}: {m['ratio']:.2f} {m['color']} {m['text']!r}" for theme, found in measured.items()
           for m in found if m["ratio"] < 4.5]
    assert not low, "\n".join(low)
