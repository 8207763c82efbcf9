"""Examples: ``%%tool --example``, ``tool(examples=...)`` and ``%tools test`` through the real dispatch."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError

from hermes_nb.evaluation.examples import ExampleReport, parse_example
from hermes_nb.tools.registry import registry
from hermes_nb.tools.schema.derive import tool


@pytest.mark.parametrize(("text", "args", "expected"), [
    ("a=2 b=3 -> 6", {"a": 2, "b": 3}, 6),
    ('{"xs": [1, 2]} -> {"n": 2}', {"xs": [1, 2]}, {"n": 2}),
    ("name=Ada -> Hello, Ada!", {"name": "Ada"}, "Hello, Ada!"),  # not JSON: a text result
    ("-> []", {}, []),
    ("s='a->b' -> a->b", {"s": "a->b"}, "a->b"),  # the spaced arrow splits; arrows inside values stay
])
def test_parse_example(text: str, args: dict[str, Any], expected: Any) -> None:
    example = parse_example(text)
    assert (example.args, example.expected) == (args, expected)


@pytest.mark.parametrize("text", ["a=2 b=3", "novalue -> 1"])
def test_parse_example_rejects_with_one_line(text: str) -> None:
    with pytest.raises(UsageError, match="--example"):
        parse_example(text)


def test_cell_examples_pass_and_fail_with_expected_and_actual(ip: Any) -> None:
    ip.run_cell_magic("tool", "--example 'a=2 b=3 -> 6' --example 'a=1 b=1 -> 3' --example 'a=0 b=7 -> 0'",
                      "def mul(a: int, b: int) -> int:\n    return a * b")
    report = ip.run_line_magic("tools", "test mul")
    assert isinstance(report, ExampleReport)
    assert [r.ok for r in report.results] == [True, False, True]
    bad = report.results[1]
    assert (bad.args, bad.expected, bad.actual) == ({"a": 1, "b": 1}, 3, 1)
    text = str(report)
    assert "2/3 examples pass" in text and "✗" in text
    html = report._repr_mimebundle_()["text/html"]
    assert "<table" in html and "mul" in html


def test_decorator_examples_with_values_and_predicates() -> None:
    def greet(name: str) -> str:
        """Greets."""
        return f"Hello, {name}!"

    tool(greet, toolset="t13", examples=[
        ({"name": "Ada"}, "Hello, Ada!"),
        ({"name": "Bo"}, lambda out: out.endswith("!")),
        ({"name": "Cy"}, lambda out: out.startswith("Bye")),
        ({"name": 5}, "Hello, 5!"),  # invalid arguments: the dispatch error is the actual result
    ])
    report = _run(["greet"])
    assert [r.ok for r in report.results] == [True, True, False, False]
    assert "error" in report.results[3].actual


def test_a_raising_predicate_fails_and_says_why() -> None:
    tool(lambda_tool, toolset="t13", examples=[({"x": 1}, lambda out: out["missing"])])
    result = _run(["lambda_tool"]).results[0]
    assert not result.ok and "KeyError" in result.note


def test_test_without_names_runs_every_tool_with_examples(ip: Any) -> None:
    ip.run_cell_magic("tool", "--example 'x=1 -> 2'", "def inc(x: int) -> int:\n    return x + 1")
    ip.run_cell_magic("tool", "--example 'x=1 -> 0'", "def dec(x: int) -> int:\n    return x - 1")
    report = ip.run_line_magic("tools", "test")
    assert {(r.tool, r.ok) for r in report.results} == {("inc", True), ("dec", True)}


def test_unknown_tool_and_bad_examples_are_usage_errors(ip: Any) -> None:
    with pytest.raises(UsageError, match="no tool named"):
        ip.run_line_magic("tools", "test nope")
    with pytest.raises(ValueError, match="pair"):
        tool(lambda_tool, toolset="t13", examples=[("not a dict", 1)])


def lambda_tool(x: int) -> dict[str, int]:
    """Doubles."""
    return {"double": 2 * x}


def _run(names: list[str]) -> ExampleReport:
    from hermes_nb.evaluation.examples import run_examples

    return run_examples(names, registry)
