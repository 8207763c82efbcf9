"""Every tool call id in the history is answered exactly once, whatever ids the model sends."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from hermes_nb.agent.loop import Agent
from tests.support.fake_openai import FakeOpenAI, Reply

SCHEMA: dict[str, Any] = {"description": "t", "parameters": {"type": "object", "properties": {}}}


def _call(call_id: str, name: str = "echo") -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": "{}"}


def _check_answered_once(messages: list[dict[str, Any]]) -> list[list[str]]:
    """Each assistant message's ids are new and unique; the tool messages after it answer exactly them."""
    seen: set[str] = set()
    turns = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant" or not m.get("tool_calls"):
            continue
        ids = [tc["id"] for tc in m["tool_calls"]]
        assert all(ids) and len(set(ids)) == len(ids) and not seen & set(ids), ids
        seen |= set(ids)
        answers = [a["tool_call_id"] for a in messages[i + 1:i + 1 + len(ids)] if a["role"] == "tool"]
        assert answers == ids
        turns.append(ids)
    answered = Counter(m["tool_call_id"] for m in messages if m["role"] == "tool")
    assert set(answered.values()) == {1} and set(answered) == seen
    return turns


@pytest.mark.parametrize("stream", [True, False])
def test_duplicate_and_empty_ids_get_unique_ones(stream: bool) -> None:
    from hermes_nb.tools.registry import registry

    registry.register("echo", "idset", SCHEMA, lambda a, **k: "echo", read_only=True)
    script = [Reply(tool_calls=(_call("dup"), _call("dup"), _call(""), _call("call_2"))),
              Reply(tool_calls=(_call("dup"),)),  # an id the model already used in an earlier turn
              Reply(content="done")]
    with FakeOpenAI(script) as srv:
        agent = Agent(model="fake-model", base_url=srv.base_url, display=False, enabled_toolsets=["idset"],
                      stream=stream)
        result = agent.run("go")
    assert result.stopped_reason == "done"
    turns = _check_answered_once(result.messages)
    assert turns == [["dup", "dup_2", "call_2", "call_2_2"], ["dup_3"]]
    assert [r.id for r in result.tool_calls] == ["dup", "dup_2", "call_2", "call_2_2", "dup_3"]
    _check_answered_once(srv.requests[-1]["messages"])  # what the model was sent agrees
