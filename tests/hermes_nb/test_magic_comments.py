"""``# comments`` at the end of every magic's line, as in a shell (issue 26, item 4)."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_nb.magics.comments import strip_comment
from hermes_nb.tools.registry import registry


@pytest.mark.parametrize(("line", "expected", "why"), [
    ("  # x", "", "a line that is only a comment"),
    ("call greet name=Ann  # x", "call greet name=Ann", "a comment after key=value"),
    ('call f {"a": 1}  # x', 'call f {"a": 1}', "a comment after valid JSON"),
    ("add t -- cmd --flag  # note", "add t -- cmd --flag", "a comment after a server's arguments"),
    ("x='a # b'", "x='a # b'", "inside single quotes"),
    ('x="a # b" # c', 'x="a # b"', "inside double quotes, then a comment"),
    ('{"c": "#fff"}', '{"c": "#fff"}', "a JSON string holding #"),
    ("a#b", "a#b", "inside a word"),
    (r"x=\#y", r"x=\#y", "escaped"),
    (r"a\ #b", r"a\ #b", "after an escaped blank: still the same word"),
    ('x="a \\" # b"', 'x="a \\" # b"', "an escaped quote inside double quotes"),
    ("plain", "plain", "no comment"),
])
def test_strip_comment(line: str, expected: str, why: str) -> None:
    assert strip_comment(line) == expected, why


def test_tools_list_with_a_comment(ip: Any) -> None:
    table = ip.run_line_magic("tools", "  # every tool")  # was: unknown subcommand '#'
    assert "tools" in table.title


def test_tools_call_with_a_comment(ip: Any) -> None:
    ip.run_cell_magic("tool", "--toolset greet  # the greeting tool", "def greet(name: str) -> str:\n    return 'Hi ' + name")
    assert registry.get_entry("greet").toolset == "greet"
    out = ip.run_line_magic("tools", "call greet name=Ann  # try it")  # was: expected key=value, got '#'
    assert out.content == "Hi Ann"
    out = ip.run_line_magic("tools", 'call greet {"name": "Bo"}  # JSON too')  # was: "this is a Python dict"
    assert out.content == "Hi Bo"
    out = ip.run_line_magic("tools", "call greet name='#1'  # a quoted # stays")
    assert out.content == "Hi #1"


def test_mcp_add_comment_is_not_the_servers_arguments(ip: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import hermes_nb.tools.mcp_tool as mcp_tool

    seen: list[Any] = []
    monkeypatch.setattr(mcp_tool, "add_mcp_server", seen.append)  # the seam: no server is started
    monkeypatch.setattr(mcp_tool, "server_config", lambda name: None)
    ip.run_line_magic("mcp", "add t -- mycmd --flag '#kept'  # note")
    assert seen and [seen[0].command, *seen[0].args] == ["mycmd", "--flag", "#kept"]


def test_help_still_shows_usage(ip: Any) -> None:
    for name in ("tools", "toolsets", "mcp", "hermes"):
        doc = ip.find_line_magic(name).__doc__
        assert doc and "Example" in doc, name
    assert "%%tool [--name NAME]" in ip.find_cell_magic("tool").__doc__


@pytest.mark.parametrize(("kind", "name", "line", "why"), [
    ("line", "plugins", 'enable "noisy', "an unclosed quote in the words"),
    ("line", "hermes", '"on', "an unclosed quote in the action"),
    ("line", "mcp", 'show "x', "an unclosed quote before --"),
    ("line", "mcp", 'add t -- python "x', "an unclosed quote in the server's command"),
    ("line", "sessions", 'penguin "x', "an unclosed quote in the query"),
    ("line", "memory", 'add "x', "an unclosed quote (intermixed options)"),
    ("line", "agent", '"reset', "an unclosed quote on %agent's line"),
    ("cell", "tool", '--name "x', "an unclosed quote on %%tool's line"),
    ("line", "plugins", "--bogus", "an option the magic does not take"),
])
def test_a_line_that_cannot_be_parsed_is_one_usage_line(ip: Any, kind: str, name: str, line: str, why: str) -> None:
    """A typo on a magic's line is a one-line UsageError naming the magic, never a ValueError traceback."""
    from IPython.core.error import UsageError

    with pytest.raises(UsageError) as caught:
        if kind == "line":
            ip.run_line_magic(name, line)
        else:
            ip.run_cell_magic(name, line, "def f() -> str:\n    return 'x'")
    assert str(caught.value).startswith(f"%{'%' if name in ('agent', 'tool') else ''}{name}"), why
    assert "\n" not in str(caught.value), why


def test_plugins_and_sessions_take_a_comment_and_memory_keeps_its_words(ip: Any) -> None:
    """%plugins and %sessions end their line at a comment as the other magics do (they refused the extra
    words); %memory's words are the entry's own text, so a # in them stays."""
    assert "found" in ip.run_line_magic("plugins", "list  # what is here").title
    assert ip.run_line_magic("sessions", "--limit 3  # the latest").title == "latest runs"
    view = ip.run_line_magic("memory", "add Tracked in issue #12")
    assert "Tracked in issue #12" in view.entries["memory"]
