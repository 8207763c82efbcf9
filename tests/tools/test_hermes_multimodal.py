"""Hermes's multimodal results (``{"_multimodal": True, "content": [...]}``) reach the model as content parts."""

from __future__ import annotations

from hermes_nb.agent.loop import Agent
from hermes_nb.tools.registry import registry
from tests.support.fake_openai import FakeOpenAI, Reply, call

PIXEL = "data:image/png;base64,iVBORw0KGgo="
PARTS = [{"type": "text", "text": "the screen"}, {"type": "image_url", "image_url": {"url": PIXEL}}]


def _screenshot(args, **kw):
    return {"_multimodal": True, "content": PARTS, "text_summary": "a screenshot of the screen"}


def test_the_model_gets_the_parts_and_the_transcript_gets_the_text():
    registry.register("screenshot", "screen", {"description": "Take a screenshot."}, _screenshot)
    script = [Reply(tool_calls=(call("screenshot", {}, "shot"),)), Reply(content="I see it")]
    with FakeOpenAI(script) as srv:
        agent = Agent(model="fake", base_url=srv.base_url, display=False, enabled_toolsets=["screen"])
        result = agent.run("look")
    [sent] = [m for m in srv.requests[1]["messages"] if m["role"] == "tool"]
    assert sent["tool_call_id"] == "shot" and sent["content"] == PARTS  # parts, not JSON text
    [record] = result.tool_calls
    assert record.content == "a screenshot of the screen" and not record.is_error
    assert result.text == "I see it"


def test_plain_results_are_unchanged_strings():
    registry.register("plain_text", "screen", {"description": "Text."}, lambda a, **kw: {"n": 1})
    script = [Reply(tool_calls=(call("plain_text", {}, "p"),)), Reply(content="ok")]
    with FakeOpenAI(script) as srv:
        Agent(model="fake", base_url=srv.base_url, display=False, enabled_toolsets=["screen"]).run("go")
    [sent] = [m for m in srv.requests[1]["messages"] if m["role"] == "tool"]
    assert sent["content"] == '{"n": 1}'
