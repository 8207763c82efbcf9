"""A tool file written exactly as Hermes writes one loads unchanged through discovery and obeys its check."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from hermes_nb.tools.registry import registry
from hermes_nb.tools.sources.discovery import discover_tool_files

HERMES_TOOL = '''
import json
import os

from tools.registry import registry


def _check_x_available() -> bool:
    return bool(os.getenv("X_API_KEY"))


X_SEARCH_SCHEMA = {
    "name": "x_search",
    "description": "Search X for posts.",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "What to search for."}},
        "required": ["query"],
    },
}

registry.register(
    name="x_search",
    toolset="x",
    schema=X_SEARCH_SCHEMA,
    handler=lambda args, **kw: json.dumps({"results": [args["query"].upper()]}),
    check_fn=lambda: bool(os.getenv("X_API_KEY")),
    requires_env=["X_API_KEY"],
    emoji="🐦",
)
'''

HERMES_POSITIONAL = '''
from tools.registry import registry

schema = {"name": "echo_pos", "description": "Echo.", "parameters": {"type": "object",
          "properties": {"text": {"type": "string"}}, "required": ["text"]}}


def _handler(args, **kw):
    return args["text"]


registry.register("echo_pos", "compat", schema, _handler)
'''


@pytest.fixture
def loaded(tmp_path: Path):
    (tmp_path / "x_tool.py").write_text(textwrap.dedent(HERMES_TOOL))
    (tmp_path / "echo_tool.py").write_text(textwrap.dedent(HERMES_POSITIONAL))
    prefix = "hermes_nb_test_compat"
    names = discover_tool_files(tmp_path, module_prefix=prefix, source_label="user-tools")
    yield names
    for name in [m for m in sys.modules if m.startswith(prefix)]:
        del sys.modules[name]


def test_hermes_tool_file_loads_and_obeys_its_check(loaded: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert loaded == ["hermes_nb_test_compat.echo_tool", "hermes_nb_test_compat.x_tool"]
    entry = registry.get_entry("x_search")
    assert entry is not None and entry.toolset == "x" and entry.requires_env == ("X_API_KEY",)
    assert entry.emoji == "🐦" and entry.source == "builtin"

    monkeypatch.delenv("X_API_KEY", raising=False)
    status = registry.availability("x_search")
    assert not status.available and status.missing_env == ("X_API_KEY",)
    assert registry.get_definitions(["x_search"]) == []

    monkeypatch.setenv("X_API_KEY", "secret-value")
    assert registry.availability("x_search").available
    [definition] = registry.get_definitions(["x_search"])
    assert definition["function"]["name"] == "x_search"
    assert definition["function"]["parameters"]["required"] == ["query"]
    assert json.loads(registry.dispatch("x_search", {"query": "hi"})) == {"results": ["HI"]}


def test_hermes_positional_register(loaded: list[str]) -> None:
    entry = registry.get_entry("echo_pos")
    assert entry is not None and entry.toolset == "compat"
    assert registry.dispatch("echo_pos", '{"text": "hello"}') == "hello"
    assert registry.get_tool_names_for_toolset("compat") == ["echo_pos"]


TAKES_A_BUILTIN_NAME = '''
from tools.registry import registry

registry.register(name="read_file", toolset="mine", schema={"description": "shadow"},
                  handler=lambda args, **kw: "shadowed")
registry.register(name="after_the_clash", toolset="mine", schema={"description": "still loads"},
                  handler=lambda args, **kw: "fine")
'''


def test_a_hermes_file_taking_a_name_keeps_the_existing_tool_and_goes_on(tmp_path: Path, caplog) -> None:
    """As Hermes: the clash is logged, the existing tool kept, the rest of the file loads; doctor says so."""
    from hermes_nb.tools.sources.load_report import clear_failures, failures

    before = registry.get_entry("read_file")
    (tmp_path / "clash.py").write_text(textwrap.dedent(TAKES_A_BUILTIN_NAME))
    try:
        names = discover_tool_files(tmp_path, module_prefix="hermes_nb_test_clash", source_label="user-tools")
        assert names == ["hermes_nb_test_clash.clash"]
        assert registry.get_entry("read_file") is before
        assert registry.dispatch("after_the_clash", {}) == "fine"
        assert "read_file" in caplog.text and "kept" in caplog.text
        [note] = [f for f in failures() if f.source == "tool" and f.name.endswith("/read_file")]
        assert "toolset 'file'" in note.message and "kept" in note.message
    finally:
        clear_failures("tool")
        for name in [m for m in sys.modules if m.startswith("hermes_nb_test_clash")]:
            del sys.modules[name]


def test_notebook_code_still_gets_an_error_and_override_still_takes_the_name() -> None:
    schema = {"description": "mine", "parameters": {"type": "object", "properties": {}}}
    registry.register("nb_owned", "first", schema, lambda a, **kw: "1", source="notebook")
    with pytest.raises(ValueError, match="override=True"):
        registry.register("nb_owned", "second", schema, lambda a, **kw: "2", source="notebook")
    registry.register("nb_owned", "second", schema, lambda a, **kw: "2", source="notebook", override=True)
    assert registry.dispatch("nb_owned", {}) == "2"
