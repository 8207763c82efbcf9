"""The text at the dispatch boundary: junk in never raises, anything out is a string."""

from __future__ import annotations

import json

import pytest

from hermes_nb.tools.registry import ToolRegistry, parse_arguments, serialize_result, tool_error, tool_result


class _EqualsRaises:
    """An argument object whose comparison raises (e.g. an array-like the caller passed by mistake)."""

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("ambiguous comparison")


class _BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


def _deep(n: int) -> list:
    root: list = []
    cur = root
    for _ in range(n):
        cur.append([])
        cur = cur[0]
    return root


def test_tool_error_accepts_an_exception_like_hermes():
    assert json.loads(tool_error(ValueError("bad path"))) == {"error": "bad path"}
    assert json.loads(tool_error("x", code=3)) == {"error": "x", "code": 3}


def test_tool_result_from_data_or_keywords():
    assert json.loads(tool_result({"a": 1})) == {"a": 1}
    assert json.loads(tool_result(ok=True, n=2)) == {"ok": True, "n": 2}


def test_parse_arguments_with_an_object_whose_comparison_raises():
    assert parse_arguments(_EqualsRaises()) == "arguments must be a JSON object, got _EqualsRaises"
    assert parse_arguments("") == {} and parse_arguments(None) == {}


def test_serialize_result_nested_too_deeply_is_an_error_not_a_crash():
    out = json.loads(serialize_result(_deep(100_000)))
    assert "nested too deeply" in out["error"]


@pytest.mark.parametrize("args, result", [
    (_EqualsRaises(), "fine"),
    ({}, "deep"),
    ({}, "bad-str"),
])
def test_dispatch_never_raises_on_hostile_objects(args, result):
    r = ToolRegistry()
    deep = _deep(100_000)

    def handler(a, **kw):
        if result == "bad-str":
            raise _BadStr()
        return deep if result == "deep" else result

    r.register("t", "ts", {"parameters": {"type": "object"}}, handler)
    answer = r.dispatch("t", args)
    assert isinstance(answer, str)
    if result == "bad-str":
        assert json.loads(answer) == {"error": "Tool execution failed: _BadStr: <unprintable _BadStr>"}
