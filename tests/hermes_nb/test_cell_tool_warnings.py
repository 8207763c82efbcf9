"""``%%tool`` says what the model will miss: warnings on the card, variadics refused, ``--as NAME``."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError

from hermes_nb.display.cards import ToolCard
from hermes_nb.tools.registry import registry
from hermes_nb.tools.schema.lint import did_you_mean, lint_function


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What ``%%tool`` displays (it returns nothing, so the card is only seen through display)."""
    out: list[Any] = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: out.extend(objs))
    return out


def card_of(ip: Any, shown: list[Any], line: str, body: str) -> ToolCard:
    ip.run_cell_magic("tool", line, body)
    cards = [o for o in shown if isinstance(o, ToolCard)]
    assert cards, shown
    return cards[-1]


GOOD = '''
def area(width: float, height: float) -> float:
    """Area of a rectangle.

    Args:
        width: in metres
        height: in metres
    """
    return width * height
'''

TYPO = '''
def area(width: float, height: float) -> float:
    """Area of a rectangle.

    Args:
        widht: in metres
        height: in metres
    """
    return width * height
'''


@pytest.mark.parametrize(("body", "expected"), [
    (GOOD, []),
    ("def f(x: int) -> int:\n    return x", ["no description"]),
    (TYPO, ["documents 'widht', which is not a parameter (did you mean 'width'?)"]),
    ('def f(a, b: int, c=1):\n    """Doc."""\n    return a', ["no type for a, c"]),
])
def test_card_warns_once_per_problem(ip: Any, shown: list[Any], body: str, expected: list[str]) -> None:
    card = card_of(ip, shown, "", body)
    assert len(card.warnings) == len(expected)
    for warning, text in zip(card.warnings, expected, strict=True):
        assert text in warning
        assert "\n" not in warning
    html = card._repr_mimebundle_()["text/html"]
    plain = card.text()
    for warning in card.warnings:
        assert f"warning: {warning}" in plain
        assert "hermes-nb-warning" in html


def test_description_option_silences_the_missing_description(ip: Any, shown: list[Any]) -> None:
    card = card_of(ip, shown, "--description 'Doubles x.'", "def f(x: int) -> int:\n    return 2 * x")
    assert card.warnings == ()


@pytest.mark.parametrize("signature", ["*values: float", "x: int, **options: str", "*args, **kwargs"])
def test_variadic_parameters_are_refused_in_one_line(ip: Any, signature: str) -> None:
    with pytest.raises(UsageError) as info:
        ip.run_cell_magic("tool", "", f"def f({signature}):\n    '''Doc.'''\n    return 1")
    message = str(info.value)
    assert "\n" not in message and "cannot fill" in message
    assert registry.get_entry("f") is None  # no tool that silently ignores what the model sends


def test_as_registers_under_another_name(ip: Any, shown: list[Any]) -> None:
    card = card_of(ip, shown, "--as my_read_file", 'def read_file(path: str) -> str:\n    """Reads."""\n    return path')
    assert card.entry.name == "my_read_file"
    assert registry.dispatch("my_read_file", {"path": "p"}) == "p"
    assert ip.user_ns["read_file"]("q") == "q"


def test_clash_message_names_the_option_that_works(ip: Any, shown: list[Any]) -> None:
    if registry.get_entry("read_file") is None:
        registry.register("read_file", "file", {"parameters": {"type": "object"}}, lambda a, **k: "")
    body = 'def read_file(path: str) -> str:\n    """Reads."""\n    return path'
    with pytest.raises(UsageError, match="--as NAME") as info:
        ip.run_cell_magic("tool", "", body)
    # following the advice works
    card_of(ip, shown, "--as notebook_read_file", body)
    assert registry.get_entry("notebook_read_file") is not None
    assert "--name" not in str(info.value)


def test_lint_function_and_did_you_mean() -> None:
    def f(path: str) -> str:
        """Read.

        :param pth: the path
        """
        return path

    assert lint_function(f, description="Read.") == (
        "docstring documents 'pth', which is not a parameter (did you mean 'path'?); its text is not sent",)
    assert did_you_mean("zzz", ["path"]) == ""
