"""The magics in a plain InteractiveShell (the kernel-only behaviour is in test_kernel_extension)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from IPython.core.error import UsageError

from hermes_nb.magics.tools import parse_call_args
from hermes_nb.tools.registry import registry


def cell(ip: Any, line: str, body: str) -> Any:
    return ip.run_cell_magic("tool", line, body)


@pytest.mark.parametrize(("text", "expected"), [
    ("", {}),
    ('{"a": 1, "b": [2]}', {"a": 1, "b": [2]}),
    ("a=1 b=true c=hello d='two words' e=[1,2]", {"a": 1, "b": True, "c": "hello", "d": "two words", "e": [1, 2]}),
    ('s="1"', {"s": "1"}),  # quoted JSON stays a string
])
def test_parse_call_args(text: str, expected: dict[str, Any]) -> None:
    assert parse_call_args(text) == expected


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", "novalue"])
def test_parse_call_args_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_call_args(text)


def test_tool_cell_options_reach_the_registry(ip: Any) -> None:
    cell(ip, "--toolset t1 --emoji 🔧 --description 'Adds.' --requires-env A_VAR --requires-env B_VAR "
             "--max-chars 500 --read-only --path-param src --path-param dst --interactive",
         "def add(a: int, b: int = 2, src: str = '', dst: str = '') -> int:\n    return a + b")
    e = registry.get_entry("add")
    assert e is not None
    assert (e.toolset, e.emoji, e.description, e.requires_env, e.max_result_size_chars) == (
        "t1", "🔧", "Adds.", ("A_VAR", "B_VAR"), 500)
    assert e.read_only and e.interactive and e.path_params == ("src", "dst")
    assert (e.source, e.origin) == ("notebook", "cell")
    assert ip.user_ns["add"](1) == 3  # still an ordinary function


def test_tool_cell_sees_notebook_variables(ip: Any) -> None:
    ip.user_ns["FACTOR"] = 10
    cell(ip, "", "def scale(x: float) -> float:\n    return x * FACTOR")
    assert registry.dispatch("scale", {"x": 2}) == "20"


def test_check_is_lazy_in_user_namespace(ip: Any) -> None:
    ip.user_ns["enabled"] = False
    cell(ip, "--check enabled", "def gated() -> str:\n    return 'x'")
    assert not registry.availability("gated").available
    assert "`enabled`" in registry.availability("gated").reason
    ip.user_ns["enabled"] = True
    assert registry.availability("gated").available


def test_bad_check_expression_is_usage_error(ip: Any) -> None:
    with pytest.raises(UsageError, match="not a Python expression"):
        cell(ip, "--check 'a b'", "def g() -> str:\n    return 'x'")


def test_rerun_replaces_and_moves(ip: Any) -> None:
    cell(ip, "--toolset one", "def twin() -> str:\n    return 'a'")
    cell(ip, "--toolset two", "def twin() -> str:\n    return 'b'")
    assert registry.get_toolset_for_tool("twin") == "two"
    assert "twin" not in registry.get_tool_names_for_toolset("one")
    assert registry.dispatch("twin", {}) == "b"


@pytest.mark.parametrize(("line", "body", "message"), [
    ("", "x = 1", "defines no function"),
    ("", "def a(): pass\ndef b(): pass", "pick one with --name"),
    ("--name c", "def a(): pass", "defines no function 'c'"),
    ("", "import socket\ndef s(x: socket.socket): pass", "cannot express type"),
    ("", "def read_file(path: str) -> str:\n    return ''", "another tool name with --as NAME"),
])
def test_bad_cells_are_usage_errors(ip: Any, line: str, body: str, message: str) -> None:
    if "read_file" in body and registry.get_entry("read_file") is None:
        registry.register("read_file", "file", {"parameters": {"type": "object"}}, lambda a, **k: "")
    with pytest.raises(UsageError, match=message):
        cell(ip, line, body)


def test_async_tool_cell(ip: Any) -> None:
    cell(ip, "", "import asyncio\nasync def later(n: int) -> int:\n    await asyncio.sleep(0)\n    return n + 1")
    e = registry.get_entry("later")
    assert e is not None and e.is_async
    assert registry.dispatch("later", {"n": 1}) == "2"


def test_tools_subcommands(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    cell(ip, "--toolset t", "def echo(text: str) -> dict:\n    return {'text': text}")
    table = ip.run_line_magic("tools", "")
    assert any(row[1] == "echo" and row[2] == "t" for row in table.rows)
    card = ip.run_line_magic("tools", "show echo")
    assert '"required"' in card.text()
    result = ip.run_line_magic("tools", "call echo text=hi")
    assert json.loads(result.content) == {"text": "hi"}
    bad = ip.run_line_magic("tools", "call echo {}")
    assert bad.is_error
    ip.run_line_magic("tools", "rm echo")
    assert registry.get_entry("echo") is None
    with pytest.raises(UsageError, match="no tool named"):
        ip.run_line_magic("tools", "show echo")
    with pytest.raises(UsageError, match="unknown subcommand"):
        ip.run_line_magic("tools", "bogus")


def test_tools_call_spills_large_results(ip: Any) -> None:
    cell(ip, "--max-chars 100", "def big() -> str:\n    return 'y' * 5000")
    result = ip.run_line_magic("tools", "call big")
    assert result.spill_path is not None and len(result.content) < 5000


def test_doctor_lists_unavailable_tools_and_load_failures(ip: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_nb.tools.sources.load_report import clear_failures, record_failure

    monkeypatch.setenv("SECRET_FOR_DOCTOR", "")
    cell(ip, "--requires-env SECRET_FOR_DOCTOR", "def s() -> str:\n    return ''")
    record_failure("plugin", "broken_plugin", "ImportError: no module named x")
    try:
        rows = ip.run_line_magic("tools", "doctor").rows
    finally:
        clear_failures("plugin", "broken_plugin")
    assert ("s", "tool", "notebook", "missing environment variable SECRET_FOR_DOCTOR") in rows
    assert any(r[0] == "broken_plugin" and "ImportError" in r[3] for r in rows)


def test_config_traits(ip: Any) -> None:
    ip.run_line_magic("config", 'ToolMagics.default_toolset = "cfgset"')
    cell(ip, "", "def cfg() -> str:\n    return ''")
    assert registry.get_toolset_for_tool("cfg") == "cfgset"


def test_toolsets_in_terminal_prints_text(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    cell(ip, "--toolset geometry", "def sq(x: float) -> float:\n    return x * x")
    ip.run_line_magic("toolsets", "")
    out = capsys.readouterr().out
    assert "[x]  geometry (1 tool)" in out and "the model sees" in out
    ip.run_line_magic("toolsets", "geometry")
    assert "[ ]  file" in capsys.readouterr().out
    from hermes_nb.selection import enabled_toolsets, select

    assert enabled_toolsets() == ["geometry"]
    select(None)
    with pytest.raises(UsageError, match="unknown toolset"):
        ip.run_line_magic("toolsets", "nosuchset")


def test_tool_magic_documents_its_options() -> None:
    from hermes_nb.magics.tools import ToolMagics

    doc = ToolMagics.tool.__doc__ or ""
    for option in ("--name", "--toolset", "--emoji", "--description", "--requires-env", "--check",
                   "--max-chars", "--read-only", "--interactive", "--path-param"):
        assert option in doc, option
