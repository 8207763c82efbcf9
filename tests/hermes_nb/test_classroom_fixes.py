"""Small things a class met (issue 26, item 12): each says what to do, or reads in both themes."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError

from hermes_nb.display import colours


def test_tools_test_without_examples_says_how_to_add_one(ip: Any) -> None:
    ip.run_cell_magic("tool", "", "def plain(x: int) -> int:\n    '''Same.'''\n    return x")
    with pytest.raises(UsageError, match=r"plain has no examples; give its %%tool cell --example 'a=2 b=3 -> 6'"):
        ip.run_line_magic("tools", "test plain")


def test_the_always_button_is_not_white_on_orange() -> None:
    from hermes_nb.display.prompts import ApprovalPrompt

    prompt = ApprovalPrompt("rm -rf x", "rm -rf", "deletes", timeout=0)
    assert prompt.buttons["always"].button_style == ""  # the theme's own button colours (was "warning": 2.7:1)


def test_the_served_calls_header_takes_the_themes_muted_colour() -> None:
    from hermes_nb.serve.panel import ServePanel

    html = ServePanel(title="hermes-nb on 127.0.0.1", widgets=False).html()
    assert "#666" not in html and f"color:{colours.MUTED}" in html  # was #666: 3.3:1 on the dark theme


def test_fuzzing_with_approvals_says_what_the_sandbox_covers(ip: Any) -> None:
    with pytest.raises(UsageError, match="terminal commands still run in the sandbox"):
        ip.run_line_magic("tools", "fuzz write_file --n 5")


def test_tools_show_names_an_mcp_servers_annotations(ip: Any) -> None:
    from hermes_nb.tools.registry import registry

    registry.register("stamp", "t26", {"name": "stamp", "description": "The time.", "parameters": {
        "type": "object", "properties": {}}}, lambda args, **kw: "now", source="mcp", origin="time",
        metadata={"server": "time", "annotations": {"read_only_hint": True, "title": "Stamp"}})
    card = ip.run_line_magic("tools", "show stamp")
    assert "annotations: read_only_hint=True, title=Stamp" in card.text()  # notebook 03 points at it
    assert "annotations: read_only_hint=True, title=Stamp" in card._repr_mimebundle_()["text/html"]


def test_every_tour_notebook_loads_with_a_home_of_its_own() -> None:
    """quickstart and 01 wrote into the real ~/.hermes_nb; 02-04 already used a temporary home."""
    import json
    from pathlib import Path

    for path in sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb")):
        cells = [("".join(c["source"])) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        load = next(i for i, c in enumerate(cells) if "%load_ext hermes_nb" in c)
        before = "\n".join(cells[: load + 1])
        assert 'os.environ["HERMES_NB_HOME"] = ' in before and "mkdtemp" in before, path.name
