"""Agent events are typed records, one class per kind, and a run drives its view with them in order.

A recording view (the ``View`` protocol's smallest implementation) is given to a real agent run against
the scripted OpenAI server, so the sequence checked is what ``Agent.run`` really emits.
"""

from __future__ import annotations

import dataclasses
import threading
import typing

import pytest

from hermes_nb.agent import events as agent_events
from hermes_nb.agent.events import (
    AgentEvent,
    ApprovalAnswered,
    BatchDone,
    Notice,
    TextDelta,
    ToolCallQueued,
    ToolEnded,
    ToolStarted,
    TurnStarted,
    UsageUpdate,
    tool_event,
)
from hermes_nb.agent.loop import Agent
from hermes_nb.display.live import HtmlView, NullView, TextView, Transcript, View, transcript_text
from hermes_nb.tools.batch.records import BatchEvent
from hermes_nb.tools.registry import registry
from tests.support.fake_openai import FakeOpenAI, Reply, call


class RecordingView:
    """Keeps every event and call it gets; also keeps the transcript, as every view does."""

    def __init__(self) -> None:
        self.transcript = Transcript(prompt="p", model="m")
        self.events: list[AgentEvent] = []
        self.calls: list[str] = []
        self.thread_ids: set[int] = set()

    def handle(self, event: AgentEvent) -> None:
        self.thread_ids.add(threading.get_ident())
        self.events.append(event)
        self.transcript.handle(event)

    def tick(self) -> None:
        self.calls.append("tick")

    def finish(self, result: typing.Any) -> None:
        self.calls.append("finish")

    def abort(self, message: str) -> None:
        self.calls.append(f"abort: {message}")


def test_every_event_kind_is_a_frozen_keyword_only_record() -> None:
    kinds = typing.get_args(AgentEvent)
    assert len(kinds) == len(set(kinds)) == 14  # ModelNamed (22), TurnDone (26), TodoUpdated and ChildEvent (23),
    # MemoryLoaded (31)
    for kind in kinds:
        params = kind.__dataclass_params__
        assert params.frozen and all(f.kw_only for f in dataclasses.fields(kind)), kind
        with pytest.raises(TypeError):
            kind("positional")  # keyword-only: no event is built from a position


def test_scheduler_events_become_the_agents_own() -> None:
    start = tool_event(BatchEvent(kind="start", index=0, tool_call_id="a", name="t", time=1.0, parallel=True))
    end = tool_event(BatchEvent(kind="end", index=0, tool_call_id="a", name="t", time=2.0))
    assert start == ToolStarted(tool_call_id="a", time=1.0, parallel=True)
    assert end == ToolEnded(tool_call_id="a", time=2.0, parallel=False, result=None)


def test_views_implement_the_view_protocol(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: None)
    for view in (NullView("p", "m"), TextView("p", "m"), HtmlView("p", "m"), RecordingView()):
        assert isinstance(view, View), type(view).__name__

    class Partial:  # no abort: not a view
        transcript = Transcript()

        def handle(self, event: AgentEvent) -> None: ...
        def tick(self) -> None: ...
        def finish(self, result: typing.Any) -> None: ...

    assert not isinstance(Partial(), View)


def test_a_run_drives_its_view_with_typed_events_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    registry.register("echo", "events_test", {"description": "Echo n.", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
        lambda a, **kw: f"echo {a['n']}", read_only=True)
    view = RecordingView()
    monkeypatch.setattr(Agent, "_make_view", lambda self, prompt: view)
    script = [Reply(content="Let me look.", tool_calls=(call("echo", {"n": 1}, "c1"), call("echo", {"n": 2}, "c2"))),
              Reply(content="Both echoed.")]
    try:
        with FakeOpenAI(script) as srv:
            result = Agent(model="fake-model", base_url=srv.base_url, enabled_toolsets=["events_test"]).run("go")
    finally:
        registry.deregister("echo")
    assert result.text == "Both echoed." and view.calls[-1] == "finish"
    assert view.thread_ids == {threading.get_ident()}, "views are called from the calling thread only"

    kinds = [type(e).__name__ for e in view.events]
    squeezed = [k for i, k in enumerate(kinds) if i == 0 or k != kinds[i - 1]]  # streamed deltas as one
    first_turn = ["TurnStarted", "TextDelta", "TurnDone", "UsageUpdate", "ToolCallQueued"]
    assert squeezed[:5] == first_turn and squeezed[-4:] == ["TurnStarted", "TextDelta", "TurnDone", "UsageUpdate"]
    tools = [e for e in view.events if isinstance(e, (ToolStarted, ToolEnded))]
    assert sorted((type(e).__name__, e.tool_call_id) for e in tools) == [
        ("ToolEnded", "c1"), ("ToolEnded", "c2"), ("ToolStarted", "c1"), ("ToolStarted", "c2")]
    [batch] = [e for e in view.events if isinstance(e, BatchDone)]
    assert [r.id for r in batch.records] == ["c1", "c2"] and [r.content for r in batch.records] == ["echo 1", "echo 2"]
    assert kinds.index("BatchDone") > max(kinds.index("ToolEnded"), kinds.index("ToolCallQueued"))
    turns = [e.iteration for e in view.events if isinstance(e, TurnStarted)]
    assert turns == [1, 2]
    assert "".join(e.delta for e in view.events if isinstance(e, TextDelta)) == "Let me look.Both echoed."
    assert "✓ echo" in transcript_text(view.transcript)  # the same events built the transcript


def test_the_transcript_takes_every_event_kind() -> None:
    t = Transcript(prompt="p", model="m")
    t.handle(TurnStarted(iteration=1))
    t.handle(ToolCallQueued(index=0, id="a", name="terminal", arguments='{"command": "ls"}'))
    t.handle(ApprovalAnswered(command="ls", choice="deny", message="asked → deny", level="denied"))
    t.handle(Notice(message="slow model", level="retry"))
    t.handle(UsageUpdate(usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}))
    assert t.cards["a"].notes == [("asked → deny", "denied")]  # with the call that asked
    assert ["notice", "slow model", "retry"] in t.items and t.usage["total_tokens"] == 2


def test_agent_emits_no_untyped_event() -> None:
    """No `emit((kind, data))` tuple is left in the agent: every emission names its record."""
    import inspect

    from hermes_nb.agent import loop as agent
    source = inspect.getsource(agent)
    assert 'emit(("' not in source and '"tool_" +' not in source
    assert agent_events.__all__ and all(hasattr(agent_events, n) for n in agent_events.__all__)
