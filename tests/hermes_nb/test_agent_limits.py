"""Oversized tool-call arguments from the model: refused with a clear answer, and not resent every turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from hermes_nb.agent.loop import Agent
from tests.support.fake_openai import FakeOpenAI, Reply

SCHEMA: dict[str, Any] = {"description": "t", "parameters": {"type": "object", "properties": {}}}


def test_oversized_arguments_are_refused_and_left_out_of_the_history(hermes_home: Path) -> None:
    from hermes_nb.tools.registry import registry

    ran: list[Any] = []
    registry.register("take", "limits", SCHEMA, lambda a, **k: ran.append(a) or "took", read_only=True)
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"budget": {"argument_chars": 1000}}))
    big = json.dumps({"data": "x" * 5000})
    script = [Reply(tool_calls=({"id": "c1", "name": "take", "arguments": big},)), Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        agent = Agent(model="fake-model", base_url=srv.base_url, display=False, enabled_toolsets=["limits"])
        result = agent.run("go")
    assert result.stopped_reason == "done" and ran == []
    assert "over the limit of 1,000" in json.loads(result.tool_calls[0].content)["error"]
    sent = srv.requests[1]["messages"]
    kept = sent[-2]["tool_calls"][0]["function"]["arguments"]
    assert len(kept) < 1000 and f"{len(big):,} chars of arguments" in json.loads(kept)["omitted"]
    assert sent[-1]["tool_call_id"] == "c1"
