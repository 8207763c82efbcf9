"""Every notebook under notebooks/ runs top to bottom in a real kernel, offline.

nbclient sends cells without stdin, as nbconvert, papermill and ``make demo`` do: no person can click, so
notebook 02's approval prompts must take the no-person path at once (a hang would hit the timeout); and
notebook 03's Run All must leave its servers running (its clean-up is a button nobody clicks here).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ is empty"


@pytest.mark.kernel
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path: Path, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nb = nbformat.read(path, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit notebooks without outputs"
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(path.parent))
    client = NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    check = CHECKS.get(path.name)
    if check is not None:
        nb.cells.append(nbformat.v4.new_code_cell(PROBE))  # runs after the notebook, in the same kernel
    client.execute()
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"
    ]
    assert errors == []
    if check is not None:
        check(nb)


#: What the kernel holds once Run All is over: the extension loaded? which MCP servers run?
PROBE = """import hermes_nb._state
from hermes_nb.tools.mcp_tool import mcp_status
print("PROBE", bool(hermes_nb._state.undos), [(s.name, s.status) for s in mcp_status()])"""


def _text(cell: Any) -> str:
    """Everything a cell showed, as text."""
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.get("outputs", []))


def _cell(nb: Any, needle: str) -> Any:
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and needle in c.source]
    return cell


def _check_safe_scheduling(nb: Any) -> None:
    """No person: the prompt is not shown, the cell says so, and the command does not run."""
    for needle in ('registry.dispatch("terminal", {"command": "rm -rf build"})', "check_dangerous_command(sneaky)"):
        cell = _cell(nb, needle)
        assert not any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in cell.outputs), \
            "a prompt was shown to nobody"
        assert "hermes_nb: no one can answer a prompt in this run" in _text(cell)
        assert "no one is available to approve it" in _text(cell)
    assert "build/ still there: True" in _text(_cell(nb, "\"rm -rf build\"}"))
    timeline = _cell(nb, "timeline(parallel, serial")
    (shown,) = [o for o in timeline.outputs if o.get("output_type") == "execute_result"]
    assert "var(--jp-" in shown["data"]["text/html"]  # bars in the theme's colours
    assert "4 fetches (one parallel segment): 4 calls" in shown["data"]["text/plain"]
    # issue 35: each segment says why, on an axis with a legend; no raw BatchSegment(...) reprs
    html = shown["data"]["text/html"]
    assert "segment 0: read-only → shared time" in html and "same file notes.txt → one at a time" in html
    assert "runs alone" in html and " ms</span>" in html  # the legend and the axis's end
    plan = _text(_cell(nb, "explain(batch)"))
    assert "BatchSegment(" not in plan and "segment 0: fetch_doc, fetch_doc, fetch_doc, fetch_doc · read-only" in plan
    assert "segment 1: read_note · same file notes.txt → one at a time" in plan, plan
    from hermes_nb.tools.safety.sandbox import box as sandbox

    if sandbox.status().mechanism.startswith("bubblewrap"):  # the tour's sandbox cell shows what it hides
        shown = _text(_cell(nb, "print(sandbox.status().detail)"))
        assert "wrote outside: False" in shown and ".gitattributes kept: False" in shown, shown
        assert "No such file" in shown and ".gitattributes was not landed" in shown, shown


def _check_mcp_and_plugins(nb: Any) -> None:
    """Run All leaves the extension loaded and the time server running; the last cell is the button."""
    assert "PROBE True [('time', 'ready')]" in _text(nb.cells[-1]), _text(nb.cells[-1])
    clean_up = nb.cells[-2]
    assert "CLEAN-UP" in clean_up.source
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in clean_up.outputs)
    assert "Button(" not in _text(clean_up) and "🧹 Clean up: a button" in _text(clean_up)  # untrusted: a sentence
    offered = _text(_cell(nb, "turn = assemble_tool_definitions("))  # tool search: the bridge, not the schemas
    assert "'tool_search'" in offered and "'mcp__time__" not in offered.split("\n")[0] and "Deferred tools (2)" in offered
    assert "mcp__time__convert_time -> {" in _text(_cell(nb, "with use_catalog(turn.catalog)"))
    assert "notebook_call char_count -> 5" in _text(_cell(nb, "lists-once"))  # the bridge of %mcp serve
    writes = [c.source.splitlines()[0] for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%writefile")]
    assert writes == ["%%writefile {plugin}/plugin.yaml", "%%writefile {plugin}/__init__.py",
                      "%%writefile {tools_dir}/reverse.py", "%%writefile {tools_dir}/reverse.py"]


def _check_test_and_evaluate(nb: Any) -> None:
    """The execute_code section: one script, its six calls nested under its card, no replay drift."""
    run = _cell(nb, "cassettes/execute-code-04.json")
    html = "".join(o.get("data", {}).get("text/html", "") for o in run.outputs)
    nested = html.split('class="hermes-nb-nested"', 1)[1]
    assert nested.count("<b>convert_temperature</b>") == 4 and nested.count("<b>word_count</b>") == 2
    assert "Replay drift" not in html and "212 °F" in html
    assert "'status': 'success'" in _text(_cell(nb, "json.loads(run.tool_calls[0].content)"))
    evaluated = _text(_cell(nb, "result = hermes_nb.evaluate(cases"))
    assert "replayed from" in evaluated and "eval-04 (recorded turns, no model called)" in evaluated, evaluated
    assert '✗ sent convert_temperature(value=50, to="F")' in evaluated  # the arguments behind a failed check
    compared = _text(_cell(nb, "hermes_nb.compare("))  # issue 35: two selections side by side
    for row in ("tools offered              3", "  word_count               59", "errors                     0"):
        assert row in compared, compared
    # the script's turns were recorded against a scripted server: its usage is a placeholder, not a count
    assert "placeholder usage (a scripted recording)" in html and "10 + 5 tokens" not in html


def _check_agent_state(nb: Any) -> None:
    """One checklist updated in place, the second kernel's recall, two nested sub-agents, no replay drift."""
    every = "".join(_text(c) + "".join(o.get("data", {}).get("text/html", "") for o in c.get("outputs", []))
                    for c in nb.cells if c.cell_type == "code")
    assert "Replay drift" not in every and "different tool results" not in every
    (plan,) = [o["data"]["text/html"] for o in _cell(nb, "planner.run(").outputs if "text/html" in o.get("data", {})]
    assert plan.count('class="hermes-nb-checklist"') == 1 and "3/3 done" in plan and "updated 3×" in plan
    assert "how the plan changed (3 states)" in plan and "written: " in plan  # issue 35: saved, the whole story
    second = _text(_cell(nb, "start_new_kernel"))
    pids = {line.split(":")[0]: line.split(":")[1].strip() for line in second.splitlines()
            if line.startswith(("this kernel:", "second kernel:"))}
    assert pids["this kernel"] != pids["second kernel"]
    assert "You study Adélie penguins on Ross Island (that is in my memory)" in second
    assert '✓ session_search' in second and '"mode": "discover"' in second
    (lead,) = [o["data"]["text/html"] for o in _cell(nb, "lead.run(").outputs if "text/html" in o.get("data", {})]
    assert lead.count('class="hermes-nb-child"') == 2 and "emperors breed through the winter" in lead
    assert "(with 2 sub-agent runs)" in lead  # issue 35: the total includes the sub-agents
    assert "🤖 agent · replay:cassettes/state-delegate.call_delegate.0.json" in lead  # a sub-agent's header names its own cassette
    cost = _text(_cell(nb, "priced_as(compared"))
    assert "tokens: 1800 · the lead's own: 600 · its sub-agents': [600, 600]" in cost, cost
    assert "as gpt-4o-mini: $" in cost and "for the recorded usage" in cost, cost
    assert "Studies Adélie penguins on Ross Island" in _text(_cell(nb, "%memory"))


CHECKS: dict[str, Callable[[Any], None]] = {
    "05-agent-state.ipynb": _check_agent_state,
    "02-safe-scheduling.ipynb": _check_safe_scheduling,
    "04-test-and-evaluate.ipynb": _check_test_and_evaluate,
    "03-mcp-and-plugins.ipynb": _check_mcp_and_plugins,
}
