"""The third classroom pass (issue 35): eighteen mistakes a student made, each answered in one line that says what
to do, or (the silent ones) a one-line warning where it happens: at registration, at the call, at the restart."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from hermes_nb.display.cards import ToolCard
from hermes_nb.tools.registry import registry


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    out: list[Any] = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: out.extend(objs))
    return out


def card(ip: Any, shown: list[Any], body: str, line: str = "") -> ToolCard:
    ip.run_cell_magic("tool", line, body)
    return [o for o in shown if isinstance(o, ToolCard)][-1]


def one_line(exc: BaseException) -> str:
    """What IPython shows for ``exc``: its ``_render_traceback_`` when it has one (a wall of frames when not)."""
    render = getattr(exc, "_render_traceback_", None)
    assert render is not None, f"{type(exc).__name__} would be shown as a traceback"
    lines = render()
    assert len(lines) == 1, lines
    return str(lines[0])


# -- silently wrong: a warning where it happens ------------------------------------------------------------------

@pytest.mark.parametrize(("body", "warned"), [
    ("def add(item: str, basket: list = []) -> list:\n    '''Add.'''\n    basket.append(item)\n    return basket",
     "basket defaults to [], one object shared by every call"),  # the list keeps what earlier calls added
    ("def tally(k: str, seen: dict = {}) -> int:\n    '''Count.'''\n    seen[k] = 1\n    return len(seen)",
     "seen defaults to {}, one object shared by every call"),
    ("def area(w: float, h: float) -> float:\n    '''Area.'''\n    a = w * h",
     "no return statement: every call sends the model null"),  # forgot `return`
    ("async def fetch(u: str) -> str:\n    '''Fetch.'''\n    text = u.upper()",
     "no return statement: every call sends the model null"),
    ("def 面积(w: float) -> float:\n    '''Area.'''\n    return w",
     "tool name '面积' is not letters, digits, _ or - (at most 64): model endpoints reject the request"),
    ("def area(宽: float) -> float:\n    '''Area.'''\n    return 宽",
     "parameter name '宽' is not letters, digits, _ or -"),
])
def test_registration_warns_what_would_go_silently_wrong(ip: Any, shown: list[Any], body: str, warned: str) -> None:
    warnings = card(ip, shown, body).warnings
    assert any(warned in w for w in warnings), warnings


@pytest.mark.parametrize(("body", "reason"), [
    ("def add(item: str, basket: list | None = None) -> list:\n    '''Add.'''\n    return [item]", "None default"),
    ("def stamp(x: int) -> None:\n    '''Log.'''\n    print(x)", "declared to return None"),
    ("def outer(x: int) -> int:\n    '''Wrap.'''\n    def inner():\n        return 1\n    return inner()", "returns"),
    ("def gen(n: int) -> list:\n    '''Gen.'''\n    yield n", "a generator returns a value"),
])
def test_no_warning_for_the_right_way(ip: Any, shown: list[Any], body: str, reason: str) -> None:
    assert card(ip, shown, body).warnings == (), reason


def test_a_tool_name_the_endpoints_reject_is_warned_about(ip: Any, shown: list[Any]) -> None:
    c = card(ip, shown, "def area(w: float) -> float:\n    '''Area.'''\n    return w", line='--as "area 📐"')
    assert any("tool name 'area 📐'" in w and "--as NAME" in w for w in c.warnings), c.warnings


def test_calling_an_unavailable_tool_says_the_model_never_sees_it(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell_magic("tool", "--check False", "def hidden(x: int) -> int:\n    '''H.'''\n    return x")
    view = ip.run_line_magic("tools", "call hidden x=2")
    assert view.content == "2"  # it still runs: the person is testing it
    out = capsys.readouterr().out
    assert "note: hidden is unavailable" in out and "the model is never offered it" in out


def test_redefining_a_tool_function_in_a_plain_cell_says_the_tool_did_not_change(
        ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("%%tool\ndef area(w: float) -> float:\n    '''Area.'''\n    return w", store_history=True)
    capsys.readouterr()
    ip.run_cell("def area(w: float) -> float:\n    return 2 * w", store_history=True)
    out = capsys.readouterr().out
    assert "note: area is redefined here, but the tool area still runs the %%tool cell's version" in out
    ip.run_cell("x = 1", store_history=True)
    assert "redefined" not in capsys.readouterr().out  # said once
    ip.run_cell("%%tool\ndef area(w: float) -> float:\n    '''Area.'''\n    return 3 * w", store_history=True)
    ip.run_cell("y = 2", store_history=True)
    assert "redefined" not in capsys.readouterr().out  # the %%tool cell itself is the right way


def test_a_tool_card_says_deleting_the_cell_keeps_the_tool(ip: Any, shown: list[Any]) -> None:
    c = card(ip, shown, "def area(w: float) -> float:\n    '''Area.'''\n    return w")
    assert "deleting this cell keeps the tool; %tools rm area removes it" in c.text()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_load_after_a_restart_names_the_run_it_cut_off(hermes_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    folder = hermes_home / "running"
    folder.mkdir()
    pid = _dead_pid()  # the kernel before the restart
    (folder / f"{pid}-abc.json").write_text(json.dumps({"pid": pid, "cell": 7, "prompt": "Add 2 and 3",
                                                        "started": "10:02"}))
    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext hermes_nb")  # said when the loading cell ends
    try:
        out = capsys.readouterr().out
        assert "the kernel restarted during the agent run in cell [7]" in out and "re-run that cell" in out
        assert not list(folder.glob("*.json"))  # said once
    finally:
        shell.run_line_magic("unload_ext", "hermes_nb")


def test_a_run_shown_in_a_notebook_marks_itself_until_it_ends(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_nb.display.live.views import HtmlView

    class Handle:
        display_id = "d1"

        def update(self, *a: Any, **kw: Any) -> None:
            pass

    monkeypatch.setattr("IPython.display.display", lambda *a, **kw: Handle())
    view = HtmlView("hi", "m")
    assert len(list((hermes_home / "running").glob("*.json"))) == 1  # a restart now would be said at the load
    view.abort("boom")
    assert not list((hermes_home / "running").glob("*.json"))


# -- confusing: one line that says what to do --------------------------------------------------------------------

def test_toolsets_help_shows_the_usage(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_line_magic("toolsets", "--help")  # was "unknown toolset '--help'"
    assert "%toolsets NAME [NAME ...]" in capsys.readouterr().out
    with pytest.raises(UsageError, match=r"%toolsets takes toolset names and no options; %toolsets\? shows"):
        ip.run_line_magic("toolsets", "--all")


def test_tools_before_the_load_loads_the_extension_when_hermes_nb_was_imported() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    import hermes_nb

    shell = InteractiveShell.instance()
    if hermes_nb._state.undos:  # an earlier test's shell kept it loaded
        shell.run_line_magic("unload_ext", "hermes_nb")
    for kind, names in hermes_nb._MAGICS.items():  # a fresh kernel: none of ours (stand-ins other tests left too)
        for name in names:
            shell.magics_manager.magics[kind].pop(name, None)
            shell.magics_manager.lazy_magics.pop(name, None)
    assert shell.find_line_magic("tools") is None  # after a restart, before the %load_ext cell
    hermes_nb._load_on_first_magic()  # what `from hermes_nb import Agent` in a cell does on import
    try:
        table = shell.run_line_magic("tools", "")  # was "Line magic function `%tools` not found."
        assert table is not None and hermes_nb._state.undos
    finally:
        shell.run_line_magic("unload_ext", "hermes_nb")


def test_select_with_one_name_reads_it_as_one_name(ip: Any) -> None:
    from hermes_nb import toolsets
    from hermes_nb.tools.errors import UnknownToolsetError

    with pytest.raises(UnknownToolsetError, match="unknown toolset 'geometry'") as info:  # was 'g'
        toolsets.select("geometry")
    one_line(info.value)
    ip.run_cell_magic("tool", "--toolset geometry", "def area(w: float) -> float:\n    '''A.'''\n    return w")
    toolsets.select("geometry")
    assert toolsets.selection.enabled_toolsets() == ["geometry"]
    toolsets.select(None)


@pytest.mark.parametrize(("value", "said"), [
    ({"a": float("nan")}, "a dict with nan at ['a']"),
    ({"rows": [1.0, float("inf")]}, "a dict with inf at ['rows'][1]"),
    ([0.5, float("-inf")], "a list with -inf at [1]"),
    ({"x": {"y": (1, float("nan"))}}, "a dict with nan at ['x']['y'][1]"),
])
def test_a_nan_result_names_where_it_is(value: Any, said: str) -> None:
    from hermes_nb.tools.calls.results import settle_result

    content, is_error = settle_result(value)
    assert is_error and said in json.loads(content)["error"] and "return None or a string there" in content


def test_a_memory_entry_longer_than_the_file_says_shorten_it(ip: Any) -> None:
    with pytest.raises(UsageError, match=r"The entry is 3,000 chars; MEMORY.md holds at most 2,200. Shorten it.") as info:
        ip.run_line_magic("memory", "add " + "x" * 3000)
    assert "is full (0/" not in str(info.value)


def test_mcp_add_without_dashes_shows_the_command_with_them(ip: Any) -> None:
    with pytest.raises(UsageError, match="put the server's command after --: %mcp add time -- mcp-server-time --x"):
        ip.run_line_magic("mcp", "add time mcp-server-time --x")


# -- traceback walls: one line --------------------------------------------------------------------------------

def test_load_ext_with_a_dash_says_use_the_underscore() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    with pytest.raises(UsageError, match="the extension's name has an underscore: %load_ext hermes_nb"):
        InteractiveShell.instance().run_line_magic("load_ext", "hermes-nb")


def test_agent_with_an_unknown_toolset_fails_at_construction_in_one_line(tmp_path: Path, ip: Any) -> None:
    from hermes_nb import Agent
    from hermes_nb.tools.errors import UnknownToolsetError

    with pytest.raises(UnknownToolsetError) as info:  # was 83 lines, and only at run()
        Agent(model=_cassette(tmp_path), enabled_toolsets="geometry")
    assert "Agent(enabled_toolsets=...): unknown toolset 'geometry'" in one_line(info.value)
    with pytest.raises(TypeError, match=r"takes a list of toolset names"):
        Agent(model=_cassette(tmp_path), enabled_toolsets=3)


def _cassette(tmp_path: Path) -> str:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"version": 1, "model": "m", "turns": []}))
    return f"replay:{path}"


def test_agent_with_one_toolset_name_offers_it(tmp_path: Path, ip: Any) -> None:
    from hermes_nb import Agent

    assert Agent(model=_cassette(tmp_path), enabled_toolsets="file").enabled_toolsets == ["file"]


@pytest.mark.parametrize("prompt", [123, None, ["hi"], b"hi"])
def test_run_with_a_prompt_that_is_not_text_says_so(tmp_path: Path, ip: Any, prompt: Any) -> None:
    from hermes_nb import Agent

    agent = Agent(model=_cassette(tmp_path), display=False)
    with pytest.raises(TypeError) as info:
        agent.run(prompt)
    assert "agent.run() takes the prompt as text" in one_line(info.value)


@pytest.mark.parametrize(("content", "said"), [
    (None, "replay cassette not found"),
    ("{not json", "is not valid JSON"),
    ('{"version": 9}', "is not a version-1 cassette"),
])
def test_a_wrong_replay_path_is_one_line(tmp_path: Path, content: str | None, said: str) -> None:
    from hermes_nb import Agent

    path = tmp_path / "cassette.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(Exception) as info:
        Agent(model=f"replay:{path}")
    assert said in one_line(info.value)


@pytest.mark.parametrize(("name", "text", "said"), [
    ("bad.yaml", "- prompt: [unclosed\n  x: :\n", "is not valid YAML (line 2, column 4"),
    ("noprompt.yaml", "- expected_tools: [area]\n", "case 0 has no prompt; give each case a 'prompt'"),
    ("bad.json", "[{", "is not valid JSON"),
    (None, "", "no case file matches"),
])
def test_evaluate_on_bad_cases_is_one_line(tmp_path: Path, name: str | None, text: str, said: str) -> None:
    from hermes_nb import evaluate

    if name is not None:
        (tmp_path / name).write_text(text)
    target = str(tmp_path / (name or "none*.yaml"))
    with pytest.raises(ValueError) as info:
        evaluate(target, agent=object())
    assert said in one_line(info.value)


# -- %tools call: a default timeout, counted down ------------------------------------------------------------------

def _sleeper(release: threading.Event, timeout: float | None = None) -> None:
    registry.register("doze", "t35", {"name": "doze", "description": "Sleeps.", "parameters": {
        "type": "object", "properties": {}}}, lambda args, **kw: release.wait(30) and "woke",
        metadata={"timeout": timeout} if timeout else {})


def test_tools_call_times_out_at_the_tools_own_timeout(ip: Any) -> None:
    release = threading.Event()
    _sleeper(release, timeout=0.2)
    try:
        view = ip.run_line_magic("tools", "call doze")
    finally:
        release.set()
    assert view.is_error and "timed out after 0.2 s" in view.content


def test_tools_call_times_out_at_the_default_without_one(ip: Any) -> None:
    release = threading.Event()
    _sleeper(release)
    ip.run_line_magic("config", "ToolMagics.call_timeout = 0.2")  # the default is 60 s
    try:
        view = ip.run_line_magic("tools", "call doze")
    finally:
        release.set()
        ip.run_line_magic("config", "ToolMagics.call_timeout = 60.0")
    assert view.is_error and "timed out after 0.2 s" in view.content


def test_the_countdown_is_shown_and_updated_while_the_tool_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_nb.display.countdown import Countdown, countdown_text

    assert countdown_text("area", 57.6, 60) == "⏳ area running: times out in 58 s (of 60 s)"
    seen: list[str] = []
    ticked = threading.Event()

    class Handle:
        def update(self, bundle: dict[str, str], **kw: Any) -> None:
            seen.append(bundle["text/plain"])
            if len(seen) >= 2:
                ticked.set()

    monkeypatch.setattr("IPython.display.display", lambda bundle, **kw: seen.append(bundle["text/plain"]) or Handle())
    with Countdown("area", 60, display=True, every=0.01):
        assert ticked.wait(10)
    assert seen[0].startswith("⏳ area running: times out in 60 s") and seen[-1] == ""  # cleared at the end


def test_after_an_unload_a_magic_does_not_load_the_extension_again() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    import hermes_nb

    shell = InteractiveShell.instance()
    if hermes_nb._state.undos:
        shell.run_line_magic("unload_ext", "hermes_nb")
    hermes_nb._load_on_first_magic()  # imported, then loaded by %load_ext: the lazy declarations go
    shell.run_line_magic("load_ext", "hermes_nb")
    shell.run_line_magic("unload_ext", "hermes_nb")
    assert "hermes_nb" not in shell.magics_manager.lazy_magics.values()
    assert not hermes_nb._state.undos
