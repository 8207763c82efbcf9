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
