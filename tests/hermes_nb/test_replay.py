"""Record a live session into a cassette, replay it offline, and catch drift between recording and notebook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_nb.agent.loop import Agent
from hermes_nb.models.replay import ReplayDriftError, load_cassette
from hermes_nb.tools.registry import registry
from tests.support.fake_openai import FakeOpenAI, Reply, call

ROOT = Path(__file__).resolve().parents[2]
ADD = {"description": "Add two numbers.", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}


@pytest.fixture
def add_tool():
    registry.register("add", "math", ADD, lambda a, **kw: str(a["a"] + a["b"]), read_only=True)


@pytest.fixture
def cassette(tmp_path, add_tool):
    path = tmp_path / "session.json"
    script = [Reply(content="Adding.", tool_calls=(call("add", {"a": 2, "b": 3}, "c1"),)),
              Reply(content="2 + 3 = 5")]
    with FakeOpenAI(script) as srv:
        live = Agent(model="gpt-x", base_url=srv.base_url, enabled_toolsets=["math"], record=str(path), display=False)
        live_result = live.run("What is 2 + 3?")
    assert live_result.text == "2 + 3 = 5"
    return path


def test_record_writes_every_turn(cassette):
    data = load_cassette(cassette)
    assert data["model"] == "gpt-x"
    assert [t["request"]["tools"] for t in data["turns"]] == [["add"], ["add"]]
    assert data["turns"][0]["response"]["tool_calls"] == [{"id": "c1", "name": "add", "arguments": '{"a": 2, "b": 3}'}]
    assert data["turns"][1]["response"]["content"] == "2 + 3 = 5"
    assert data["turns"][1]["request"]["n_messages"] == 3


def test_replay_round_trip_needs_no_network_or_key(cassette, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    streamed = []
    agent = Agent(model=f"replay:{cassette}", enabled_toolsets=["math"], display=False)
    agent.model.chunk_delay = 0  # type: ignore[attr-defined]
    original = agent.model.complete

    async def spy(messages, tools, **kw):
        on_text = kw["on_text"]
        kw["on_text"] = lambda d: (streamed.append(d), on_text(d))
        return await original(messages, tools, **kw)

    agent.model.complete = spy  # type: ignore[method-assign]
    result = agent.run("What is 2 + 3?")
    assert result.text == "2 + 3 = 5" and result.stopped_reason == "done"
    assert [c.content for c in result.tool_calls] == ["5"]  # the tool really ran
    assert "".join(streamed) == "Adding.2 + 3 = 5"


def test_drift_tool_removed(cassette):
    registry.deregister("add")
    with pytest.raises(ReplayDriftError, match=r"turn 1, tool 'add': the recording calls a tool that is no longer"):
        Agent(model=f"replay:{cassette}", enabled_toolsets=None, display=False).run("x")


def test_drift_arguments_no_longer_validate(cassette):
    schema = {"description": "Add.", "parameters": {"type": "object", "properties": {
        "x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"], "additionalProperties": False}}
    registry.register("add", "math", schema, lambda a, **kw: "0")
    with pytest.raises(ReplayDriftError, match=r"turn 1, tool 'add': the recorded arguments .* no longer validate"):
        Agent(model=f"replay:{cassette}", enabled_toolsets=["math"], display=False).run("x")


def test_drift_tool_not_offered(cassette):
    registry.register("sub", "other", ADD, lambda a, **kw: "0")
    with pytest.raises(ReplayDriftError, match="not offered"):
        Agent(model=f"replay:{cassette}", enabled_toolsets=["other"], display=False).run("x")


def test_drift_cassette_exhausted(cassette):
    """A follow-up question the recording has no answer for: one line, before the run starts (issue 26, item 8)."""
    agent = Agent(model=f"replay:{cassette}", enabled_toolsets=["math"], display=False)
    agent.run("What is 2 + 3?")
    before = list(agent.messages)
    with pytest.raises(ReplayDriftError, match="no answer for a follow-up question") as caught:
        agent.run("one more")
    assert agent.messages == before  # refused before the run: the conversation is untouched
    assert caught.value._render_traceback_() == [f"ReplayDriftError: {caught.value}"]  # one line in a cell
    agent.reset()  # rewinds the cassette
    assert agent.run("What is 2 + 3?").text == "2 + 3 = 5"


def test_missing_or_bad_cassette_is_clear(tmp_path):
    from hermes_nb.tools.errors import HermesNbError

    with pytest.raises(HermesNbError, match="not found"):
        Agent(model=f"replay:{tmp_path / 'nope.json'}")
    (tmp_path / "bad.json").write_text(json.dumps({"version": 9}))
    with pytest.raises(HermesNbError, match="not a version-1 cassette"):
        Agent(model=f"replay:{tmp_path / 'bad.json'}")


def test_shipped_quickstart_cassette_is_well_formed():
    data = load_cassette(ROOT / "notebooks" / "cassettes" / "quickstart.json")
    names = [c["name"] for t in data["turns"] for c in t["response"]["tool_calls"]]
    assert names == ["weather", "weather", "server_log", "terminal"]
    assert data["turns"][-1]["response"]["tool_calls"] == []


def test_drift_is_shown_in_the_display_before_it_raises(cassette, capsys):
    registry.deregister("add")
    with pytest.raises(ReplayDriftError):
        Agent(model=f"replay:{cassette}", enabled_toolsets=None, display="text").run("x")
    assert "✗ ReplayDriftError: replay" in capsys.readouterr().out


def _record_script(monkeypatch):
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("record_quickstart", ROOT / "scripts" / "record_quickstart.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up while building
    spec.loader.exec_module(module)
    return module


def test_rerecording_the_quickstart_reproduces_the_shipped_cassettes_which_replay(tmp_path, monkeypatch):
    assert registry.get_entry("terminal") is not None  # built-ins are registered once, by tests/conftest.py
    script = _record_script(monkeypatch)
    paths = script.record(tmp_path / "out", workdir=tmp_path / "work")
    assert [p.name for p in paths] == ["quickstart.json", "quickstart_magic.json"]
    for path in paths:
        fresh, shipped = load_cassette(path), load_cassette(ROOT / "notebooks" / "cassettes" / path.name)
        assert fresh["model"] == shipped["model"]
        assert [t["response"] for t in fresh["turns"]] == [t["response"] for t in shipped["turns"]]
        assert [t["request"]["tools"] for t in fresh["turns"]] == [t["request"]["tools"] for t in shipped["turns"]]
    notebook = (ROOT / "notebooks" / "quickstart.ipynb").read_text(encoding="utf-8")
    assert "replay:cassettes/quickstart.json" in notebook and "replay:cassettes/quickstart_magic.json" in notebook
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with script.notebook_tools():  # the notebook's own %%tool cells, as the classroom kernel has them
        for scene, path in zip(script.SCENES, paths, strict=True):
            result = Agent(model=f"replay:{path}", enabled_toolsets=list(scene.toolsets), display=False,
                           approval_callback=lambda *a: "once").run(scene.prompt)
            assert result.stopped_reason == "done" and result.text == scene.replies[-1].content


def test_record_keeps_the_tool_results_each_turn_was_answered_after(cassette):
    turns = load_cassette(cassette)["turns"]
    assert turns[0]["request"]["tool_results"] == []
    assert turns[1]["request"]["tool_results"] == [{"id": "c1", "name": "add", "content": "5"}]


@pytest.mark.parametrize("outcome", ["other output", "error", "denied"])
def test_replay_marks_drift_where_live_results_differ(cassette, outcome):
    """The recording says 2 + 3 = 5; today's tool says something else: the answer is marked, not trusted."""
    if outcome == "other output":
        handler = lambda a, **kw: "6"  # noqa: E731
    elif outcome == "error":
        def handler(a, **kw):
            raise RuntimeError("disk full")
    else:
        handler = lambda a, **kw: "5"  # noqa: E731
    registry.register("add", "math", ADD, handler, read_only=True, override=True,
                      needs_approval=outcome == "denied")
    agent = Agent(model=f"replay:{cassette}", enabled_toolsets=["math"], display=False,
                  approval_callback=lambda *a: "deny")
    agent.model.chunk_delay = 0  # type: ignore[attr-defined]
    result = agent.run("What is 2 + 3?")
    assert result.text.startswith("⚠️ **Replay drift** — recorded with different tool results: `add` returned “5” then")
    assert result.text.endswith("2 + 3 = 5")  # the recorded words stay, under the mark
    assert agent.model.drift and agent.model.drift[0][0] == 2  # type: ignore[attr-defined]


def test_replay_without_drift_is_unmarked_and_stop_mode_raises(cassette, add_tool):
    from hermes_nb.models.replay import ReplayModel

    same = Agent(model=f"replay:{cassette}", enabled_toolsets=["math"], display=False)
    same.model.chunk_delay = 0  # type: ignore[attr-defined]
    assert same.run("What is 2 + 3?").text == "2 + 3 = 5"
    registry.register("add", "math", ADD, lambda a, **kw: "6", read_only=True, override=True)
    strict = Agent(model=ReplayModel(cassette, on_drift="stop", chunk_delay=0), enabled_toolsets=["math"], display=False)
    with pytest.raises(ReplayDriftError, match="turn 2: `add` returned “5” then, “6” now"):
        strict.run("What is 2 + 3?")
    with pytest.raises(ValueError, match="on_drift"):
        ReplayModel(cassette, on_drift="ignore")
