"""Defaults a careful person would pick (issue 31, item 2): the selection starts with the person's own toolsets;
the built-ins are offered only when ticked, by any of the ways a person ticks; config.yaml's
``toolsets: {default: [...]}`` is honoured and a bad value is one line; a run whose definitions take more than half
of the model's known window says so once. Measured before: after ``%load_ext hermes_nb`` and one ``%%tool``,
``Agent()`` offered 15 tools, ``terminal``, ``python`` and ``write_file`` among them."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

import hermes_nb.selection as sel
from hermes_nb.agent.loop import Agent
from hermes_nb.agent.offer_size import known_window, tokens_of
from hermes_nb.models import ModelTurn
from hermes_nb.tools.registry import registry
from tests.support.fake_openai import FakeOpenAI, Reply, call

C2F = '''def c2f(celsius: float) -> float:
    """Celsius to Fahrenheit.

    Args:
        celsius: Degrees Celsius.
    """
    return celsius * 9 / 5 + 32
'''

#: The built-in toolsets issue 31 names: offered only when ticked.
BUILTINS = ("file", "terminal", "code", "code_execution", "delegation", "memory", "session_search")
#: A tool of each of them (and of the other built-ins a run had by default: clarify, todo).
BUILTIN_TOOLS = {"read_file", "write_file", "patch", "search_files", "terminal", "python", "execute_code",
                 "delegate_task", "memory", "session_search", "clarify", "todo"}
SCHEMA: dict[str, Any] = {"description": "t", "parameters": {"type": "object", "properties": {}}}


@pytest.fixture(autouse=True)
def at_the_default(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts where a fresh process starts (an earlier test may have chosen), and leaves it so."""
    fresh = sel.Selection()
    monkeypatch.setattr(sel.selection, "mode", fresh.mode)
    monkeypatch.setattr(sel.selection, "enabled", [])
    monkeypatch.setattr(sel.selection, "hermes_tools", False, raising=False)
    yield


def _config(home: Path, text: str) -> None:
    (home / "config.yaml").write_text(text, encoding="utf-8")


def _names(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools", ())}


def _offered(**agent: Any) -> set[str]:
    """The tools one run of ``Agent(**agent)`` sends the model."""
    with FakeOpenAI([Reply(content="ok")]) as srv:
        Agent(model="m", base_url=srv.base_url, display=False, **agent).run("What is 100 C in F?")
    return _names(srv.requests[0])


def _own(name: str, toolset: str, source: str = "notebook") -> None:
    registry.register(name, toolset, SCHEMA, lambda a, **k: "ok", read_only=True, source=source)


# 1. the default after %load_ext and one %%tool -----------------------------------------------------------------

def test_after_load_and_one_tool_cell_the_model_is_offered_only_that_tool(ip: Any) -> None:
    """The issue's measurement: 15 tools, ``terminal``, ``python`` and ``write_file`` among them; now one."""
    assert sel.selection.mode == "default"
    ip.run_cell_magic("tool", "", C2F)
    offered = _offered()
    assert offered == {"c2f"}, offered
    assert sel.offered_toolsets() == ["notebook"]


#: (source, toolset, Hermes turned on, offered by default, why)
SOURCES = [
    ("notebook", "geometry", False, True, "a %%tool cell or @tool function: the person wrote it"),
    ("plugin", "my-plugin", False, True, "plugins load only when config.yaml's plugins.enabled names them"),
    ("mcp", "mcp-time", False, True, "MCP servers start only when the person added them to config.yaml"),
    ("hermes", "hermes-terminal", False, False, "read automatically at load when hermes-agent is installed"),
    ("hermes", "hermes-terminal", True, True, "the person ran %hermes on"),
    ("builtin", "my-builtins", False, False, "a built-in tool in a toolset of another name is still a built-in"),
]


@pytest.mark.parametrize(("source", "toolset", "hermes_on", "offered", "why"), SOURCES,
                         ids=[f"{r[0]}-{'on' if r[2] else 'auto'}" for r in SOURCES])
def test_the_default_is_the_persons_own_toolsets_by_where_they_came_from(
        ip: Any, source: str, toolset: str, hermes_on: bool, offered: bool, why: str) -> None:
    _own("d_mine", "d_notebook")
    _own("d_other", toolset, source)
    sel.selection.hermes_tools = hermes_on
    got = _offered()
    assert "d_mine" in got
    assert ("d_other" in got) is offered, why
    assert not got & BUILTIN_TOOLS, got


def test_a_toolset_that_mixes_in_a_built_in_tool_is_not_the_persons_own(ip: Any) -> None:
    """A notebook tool put in ``file`` must not bring ``write_file`` along unticked."""
    _own("d_peek", "file")
    _own("d_mine", "d_notebook")
    assert _offered() == {"d_mine"}
    assert "file" not in sel.own_toolsets()


def test_the_default_follows_the_persons_tools_as_they_come_and_go(ip: Any) -> None:
    _own("d_first", "d_one")
    assert _offered() == {"d_first"}
    _own("d_second", "d_two")  # a later %%tool cell in a toolset of its own
    assert _offered() == {"d_first", "d_second"}
    registry.deregister("d_first")
    assert _offered() == {"d_second"}


def test_hermes_on_and_off_say_whether_hermes_tools_are_the_persons_own(ip: Any, monkeypatch: pytest.MonkeyPatch
                                                                       ) -> None:
    import hermes_nb.interop.hermes_tools as ht

    monkeypatch.setattr(ht, "hermes_installed", lambda: True)
    monkeypatch.setattr(ht.bridge, "start", lambda **kw: "started")
    monkeypatch.setattr(ht.bridge, "stop", lambda: "stopped")
    _own("hermes_todo", "hermes-todo", "hermes")
    assert "hermes-todo" not in sel.selection.enabled_toolsets()
    ip.run_line_magic("hermes", "on")
    assert "hermes-todo" in sel.selection.enabled_toolsets()
    ip.run_line_magic("hermes", "off")
    assert "hermes-todo" not in sel.selection.enabled_toolsets()


# 2. every way of ticking a built-in ----------------------------------------------------------------------------

def _by_picker(ip: Any, url: str) -> set[str]:
    from hermes_nb.display.picker import ToolsetPicker

    picker = ToolsetPicker()
    try:
        picker.checkboxes["file"].value = True  # what the click does
    finally:
        picker.close()
    return _offered()


def _by_select(ip: Any, url: str) -> set[str]:
    sel.select(["notebook", "file"])
    return _offered()


def _by_toolsets_magic(ip: Any, url: str) -> set[str]:
    ip.run_line_magic("toolsets", "notebook file")
    return _offered()


def _by_agent_magic(ip: Any, url: str) -> set[str]:
    with FakeOpenAI([Reply(content="ok")]) as srv:
        ip.run_cell_magic("agent", f"--model m --base-url {srv.base_url} --toolsets notebook,file", "go")
    return _names(srv.requests[0])


def _by_agent_argument(ip: Any, url: str) -> set[str]:
    return _offered(enabled_toolsets=["notebook", "file"])


def _by_config(ip: Any, home: str) -> set[str]:
    _config(Path(home), "toolsets:\n  default: [file]\n")
    return _offered()


TICKS: list[tuple[str, Callable[[Any, str], set[str]]]] = [
    ("picker checkbox", _by_picker), ("select()", _by_select), ("%toolsets", _by_toolsets_magic),
    ("%%agent --toolsets", _by_agent_magic), ("Agent(enabled_toolsets=...)", _by_agent_argument),
    ("config.yaml toolsets.default", _by_config),
]


@pytest.mark.parametrize("tick", [t[1] for t in TICKS], ids=[t[0] for t in TICKS])
def test_each_way_of_ticking_a_built_in_offers_it_and_nothing_else_does(
        ip: Any, hermes_home: Path, tick: Callable[[Any, str], set[str]]) -> None:
    ip.run_cell_magic("tool", "", C2F)
    before = _offered()
    assert before == {"c2f"}, before
    after = tick(ip, str(hermes_home))
    assert {"c2f", "read_file", "write_file", "patch", "search_files"} <= after
    assert not after & {"terminal", "python", "execute_code", "memory", "delegate_task"}, after


@pytest.mark.parametrize("builtin", BUILTINS)
def test_each_built_in_toolset_is_offered_when_ticked(ip: Any, builtin: str) -> None:
    from hermes_nb.tools.toolsets import resolve_toolset

    assert not _offered() & set(resolve_toolset(builtin))
    sel.select([builtin])
    assert _offered() == {n for n in resolve_toolset(builtin) if registry.availability(n).available}


def test_default_all_and_the_default_again(ip: Any) -> None:
    _own("d_mine", "d_notebook")
    sel.select(["all"])
    assert {"d_mine", "terminal", "write_file"} <= _offered()
    sel.select(["default"])
    assert sel.selection.mode == "default" and _offered() == {"d_mine"}
    with pytest.raises(ValueError, match="stands alone"):
        sel.select(["default", "file"])


def test_agent_magic_toolsets_all_means_every_toolset(ip: Any) -> None:
    """``--toolsets all`` used to become None, which an agent reads as "the picker's selection" (the default)."""
    ip.run_cell_magic("tool", "", C2F)
    with FakeOpenAI([Reply(content="ok")]) as srv:
        ip.run_cell_magic("agent", f"--model m --base-url {srv.base_url}", "go")
    assert _names(srv.requests[0]) == {"c2f"}
    with FakeOpenAI([Reply(content="ok")]) as srv:
        ip.run_cell_magic("agent", f"--model m --base-url {srv.base_url} --toolsets all", "go")
    assert {"c2f", "terminal", "write_file"} <= _names(srv.requests[0])


# 3. config.yaml toolsets: {default: [...]} ---------------------------------------------------------------------

#: (config.yaml text, what the default offers besides the person's own, why)
GOOD_CONFIGS = [
    ("toolsets:\n  default: [file, terminal]\n", {"read_file", "write_file", "patch", "search_files", "terminal",
                                                  "process"},
     "the listed built-ins join the person's own"),
    ("toolsets: {default: code}\n", {"python"}, "one name may be written without a list"),
    ("toolsets: {default: []}\n", set(), "an empty list: the person's own only"),
    ("toolsets:\n", set(), "an empty block says nothing"),
    ("toolsets: {default: [d_notebook, memory]}\n", {"memory"}, "naming an own toolset again changes nothing"),
]


@pytest.mark.parametrize(("text", "extra", "why"), GOOD_CONFIGS, ids=[r[2] for r in GOOD_CONFIGS])
def test_config_default_is_honoured(ip: Any, hermes_home: Path, text: str, extra: set[str], why: str) -> None:
    _own("d_mine", "d_notebook")
    _config(hermes_home, text)
    assert _offered() == {"d_mine"} | extra, why


def test_config_default_all_offers_every_toolset(ip: Any, hermes_home: Path) -> None:
    _own("d_mine", "d_notebook")
    assert _offered() == {"d_mine"}
    _config(hermes_home, "toolsets: {default: [all]}\n")
    assert sel.selection.enabled_toolsets() is None
    assert {"terminal", "write_file", "python"} <= _offered()


def test_an_edited_config_applies_at_the_next_read(ip: Any, hermes_home: Path) -> None:
    _config(hermes_home, "toolsets: {default: [terminal]}\n")
    assert _offered() == {"terminal", "process"}
    _config(hermes_home, "toolsets: {default: [code, terminal]}\n")  # a longer file: another size
    assert _offered() == {"python", "terminal", "process"}


#: (config.yaml text, words the one line must hold, why it is refused)
BAD_CONFIGS = [
    ("toolsets: [file]\n", "must be a mapping", "Hermes's own config shape (a list) is not this key's"),
    ("toolsets: {defaults: [file]}\n", "unknown key 'defaults'", "a typo in the key"),
    ("toolsets: {default: [file], extra: [terminal]}\n", "unknown key 'extra'", "a key nobody reads"),
    ("toolsets: {default: {file: true}}\n", "must be a list of toolset names", "a mapping, not a list"),
    ("toolsets: {default: [1, 2]}\n", "must be a list of toolset names", "numbers, not names"),
    ("toolsets: {default: ['']}\n", "must be a list of toolset names", "an empty name"),
    ("toolsets: {default: [fiel]}\n", "unknown toolset 'fiel'", "a typo in a toolset's name"),
    ("toolsets: {default: [file, nope]}\n", "unknown toolset 'nope'", "one bad name among good ones"),
    ("toolsets: file\n", "must be a mapping", "a bare word"),
]


@pytest.mark.parametrize(("text", "words", "why"), BAD_CONFIGS, ids=[r[2] for r in BAD_CONFIGS])
def test_a_bad_config_default_is_a_one_line_error_and_nothing_runs(
        ip: Any, hermes_home: Path, text: str, words: str, why: str) -> None:
    from hermes_nb.display.picker import SelectionSummary, ToolsetPicker

    _config(hermes_home, text)
    with FakeOpenAI([Reply(content="ok")]) as srv:
        with pytest.raises(sel.DefaultToolsetsError) as caught:
            Agent(model="m", base_url=srv.base_url, display=False).run("go")
        with pytest.raises(UsageError) as magic:
            ip.run_cell_magic("agent", f"--model m --base-url {srv.base_url}", "go")
    assert srv.requests == [], why  # nothing was sent: the run did not go on with a guess
    message = str(caught.value)
    assert words in message and "toolsets" in message and "\n" not in message, message
    assert caught.value._render_traceback_() == [f"DefaultToolsetsError: {message}"]  # one line in a cell
    assert words in str(magic.value) and "\n" not in str(magic.value)
    # the picker still draws, says the same line, and a tick leaves the default for a list
    picker = ToolsetPicker()
    try:
        assert words in SelectionSummary.of(sel.selection, picker.rows).text()
        assert words in picker.default_text()
        picker.toggle("terminal", True)
        assert sel.selection.enabled_toolsets() == ["terminal"]
    finally:
        picker.close()


# 4. what the picker says ---------------------------------------------------------------------------------------

def test_the_picker_says_in_one_line_what_the_default_is_and_how_to_change_it(ip: Any, hermes_home: Path,
                                                                               capsys: Any) -> None:
    from hermes_nb.display.picker import ToolsetPicker

    ip.run_cell_magic("tool", "", C2F)
    picker = ToolsetPicker()
    try:
        line = picker.default_text()
        assert "\n" not in line
        assert "your own toolsets (notebook)" in line and "tick" in line
        assert "toolsets: {default: [file, terminal]}" in line and str(hermes_home / "config.yaml") in line
        assert line in picker.default_label.value.replace("&#x27;", "'")  # drawn above the checkboxes
        assert "(the default: your own toolsets)" in picker.count_label.value
        picker.toggle("file", True)
        assert sel.selection.mode == "list"
        picker.default_button.click()
        assert sel.selection.mode == "default" and picker.checked() == ["notebook"]
    finally:
        picker.close()
    _config(hermes_home, "toolsets: {default: [terminal]}\n")
    assert "+ terminal (config.yaml toolsets.default)" in sel.default_line()
    capsys.readouterr()
    ip.run_line_magic("toolsets", "")  # outside a kernel: the text form, the default's line first
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("default: your own toolsets (notebook) + terminal")


# 5. plain Python: the same default -----------------------------------------------------------------------------

def test_plain_python_offers_the_same_default_config_included(hermes_home: Path, monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """Decided: outside a notebook ``Agent()`` offers what a notebook's default offers (the person's own toolsets
    and config.yaml's toolsets.default), so a script and its notebook send the model the same tools."""
    import hermes_nb._state as state
    from hermes_nb import tool

    monkeypatch.setattr(state, "shell", None)

    @tool(toolset="d_script")
    def double(x: int) -> int:
        """Double a number.

        Args:
            x: The number.
        """
        return 2 * x

    _config(hermes_home, "toolsets: {default: [code]}\n")
    assert _offered() == {"double", "python"}


# 6. the warning: more than half of a known window, once a run, with the count ----------------------------------

def _big(toolset: str, tokens: int) -> None:
    """One tool whose definition is about ``tokens`` tokens."""
    schema = {"description": "x" * (tokens * 4), "parameters": {"type": "object", "properties": {}}}
    registry.register(f"{toolset}_tool", toolset, schema, lambda a, **k: "ok", read_only=True, source="notebook")


class _Embedded:
    """A model at the seam that knows its runtime's window, as the embedded model does (``n_ctx``)."""

    name = "tiny (local)"
    n_ctx = 4096

    def __init__(self) -> None:
        self.offered: list[list[dict[str, Any]]] = []

    async def complete(self, messages: Any, tools: Any, *, on_text: Any = None, on_retry: Any = None) -> ModelTurn:
        self.offered.append(tools)
        return ModelTurn(content="done")


def _warnings(result: Any) -> list[str]:
    return [item[1] for item in result.transcript.items
            if item[0] == "notice" and "tool definitions offered" in item[1]]


#: (model name, tokens of definitions, warned, why)
WINDOWS = [
    ("phi-3-mini", 2_300, True, "phi-3's 4 096 tokens: 2 300 is over half"),
    ("phi-3-mini", 1_900, False, "under half of 4 096"),
    ("gpt-4", 4_500, True, "gpt-4's 8 192"),
    ("gpt-4o-mini", 4_500, False, "a 128 000-token window"),
    ("my-own-finetune", 70_000, False, "unknown window: no warning, not a guess at 128 000"),
    ("(the server's model)", 70_000, False, "a server's unnamed model: unknown"),
]


def test_the_run_says_once_when_definitions_take_over_half_of_a_known_window() -> None:
    """One table, one test: the rows that must stay silent are the controls of the rows that must speak."""
    for model, tokens, warned, why in WINDOWS:
        toolset = f"d_big_{tokens}"
        _big(toolset, tokens)
        script = [Reply(tool_calls=(call(f"{toolset}_tool", {}, "c1"),)), Reply(content="done")]  # two turns
        with FakeOpenAI(script) as srv:
            result = Agent(model=model, base_url=srv.base_url, display=False, enabled_toolsets=[toolset]).run("go")
        lines = _warnings(result)
        assert len(srv.requests) == 2 and result.stopped_reason == "done", why
        if not warned:
            assert lines == [], why
            continue
        sent = tokens_of(srv.requests[0]["tools"])
        assert len(lines) == 1 and "\n" not in lines[0], (why, lines)  # once in a run of two turns, one line
        window = known_window(Agent(model=model).model)
        assert f"~{_spaced(sent)} of this model's {_spaced(window)}-token" in lines[0], (why, lines[0])


def _spaced(number: int | None) -> str:
    return f"{number:,}".replace(",", " ")


def test_the_embedded_models_own_window_is_the_one_compared() -> None:
    """The measured case: 15 definitions against the embedded model's 4 096; the runtime's n_ctx, not the
    name table (which says 8 192 for SmolLM2)."""
    from hermes_nb.models.local import LocalModel

    assert known_window(LocalModel()) == 4096
    defs = [{"type": "function", "function": {"name": "a", "description": "x" * 400, "parameters": {}}}]
    assert tokens_of(defs) == len(json.dumps(defs)) // 4 + 1 and tokens_of([]) == 0  # what the line counts
    sel.select(["all"])  # the old default: every toolset
    model = _Embedded()
    agent = Agent(model="m", base_url="http://127.0.0.1:9/v1", display=False)
    agent.model = model
    result = agent.run("What is 100 C in F?")
    sent = tokens_of(model.offered[0])
    assert sent > 2048, sent
    lines = _warnings(result)
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert lines[0].startswith(f"the {len(model.offered[0])} tool definitions offered take ~{_spaced(sent)} of "
                               "this model's 4 096-token context window"), lines[0]


def test_the_default_fits_the_embedded_model(ip: Any) -> None:
    _own("d_mine", "d_notebook")
    model = _Embedded()
    agent = Agent(model="m", base_url="http://127.0.0.1:9/v1", display=False)
    agent.model = model
    result = agent.run("go")
    assert [d["function"]["name"] for d in model.offered[0]] == ["d_mine"] and _warnings(result) == []
