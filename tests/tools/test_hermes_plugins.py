"""Plugins shaped like Hermes's bundled ones: ``ctx.register_hook`` around dispatch, other hooks listed.

The plugin below follows Hermes's bundled ``security-guidance`` / ``disk-cleanup`` plugins: a
``plugin.yaml`` naming its hooks and a ``register(ctx)`` that registers a tool and callbacks taking
keyword arguments. Also the hook cases of Hermes's ``tests/test_model_tools.py`` (ids and duration
reach the hooks, a block skips the tool, malformed directives are ignored, the skip flag).
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from hermes_nb.tools.model_tools import handle_function_call
from hermes_nb.tools.registry import registry
from hermes_nb.tools.sources import plugin_hooks, plugins
from hermes_nb.tools.sources.load_report import clear_failures, failures

MANIFEST = """
name: guard
version: "0.1.0"
description: "Blocks what it is told to, and tags the results it sees."
hooks:
  - pre_tool_call
  - post_tool_call
  - transform_tool_result
  - on_session_end
"""

PLUGIN = '''
import json

SEEN = []
BLOCK = {}
CTX = None


def _echo(args, **kw):
    return json.dumps({"echo": args.get("text", "")})


def _on_pre_tool_call(tool_name="", args=None, task_id="", session_id="", tool_call_id="", **kwargs):
    SEEN.append(("pre", tool_name, dict(args or {}), task_id, session_id, tool_call_id, kwargs))
    return BLOCK.get(tool_name)


def _on_post_tool_call(tool_name="", args=None, result=None, duration_ms=0, status=None, **kwargs):
    SEEN.append(("post", tool_name, result, duration_ms, status, kwargs))


def _on_transform_tool_result(tool_name="", result=None, duration_ms=0, **kwargs):
    SEEN.append(("transform", tool_name, duration_ms))
    if tool_name == "guard_echo":
        return result + " [checked]"
    return None


def _on_session_end(**kwargs):
    SEEN.append(("session_end",))


def register(ctx):
    global CTX
    CTX = ctx
    ctx.register_tool(
        name="guard_echo", toolset="guard",
        schema={"name": "guard_echo", "description": "Echo.",
                "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}},
        handler=_echo, emoji="🛡",
    )
    ctx.register_hook("pre_tool_call", _on_pre_tool_call)
    ctx.register_hook("post_tool_call", _on_post_tool_call)
    ctx.register_hook("transform_tool_result", _on_transform_tool_result)
    ctx.register_hook("on_session_end", _on_session_end)
    ctx.register_command("guard", lambda *a: None, description="a slash command")
'''


@pytest.fixture
def guard(hermes_home: Path):
    """The plugin, loaded through discovery from the home folder; unloaded afterwards."""
    folder = hermes_home / "plugins" / "guard"
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text(textwrap.dedent(MANIFEST), encoding="utf-8")
    (folder / "__init__.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    assert "guard" in plugins.discover_plugins()
    module = sys.modules[f"{plugins.MODULE_PREFIX}.user_guard"]
    yield module
    plugins.unload_plugins()
    clear_failures("plugin")


def _events(module, kind: str) -> list[tuple]:
    return [e for e in module.SEEN if e[0] == kind]


def test_plugin_with_hooks_loads_and_its_tool_call_hooks_run_around_dispatch(guard):
    info = next(p for p in plugins.loaded_plugins() if p.name == "guard")
    assert info.tools == ("guard_echo",)
    assert info.hooks == ("pre_tool_call", "post_tool_call", "transform_tool_result", "on_session_end")
    assert registry.dispatch("guard_echo", {"text": "hi"}) == '{"echo": "hi"} [checked]'
    (pre,) = _events(guard, "pre")
    assert pre[1:3] == ("guard_echo", {"text": "hi"})
    (post,) = _events(guard, "post")
    assert post[1:3] == ("guard_echo", '{"echo": "hi"}') and post[4] == "ok"
    assert isinstance(post[3], int) and post[3] >= 0
    assert post[5]["telemetry_schema_version"] == "hermes.observer.v1"


def test_hooks_get_task_session_and_tool_call_ids_and_one_duration(guard):
    handle_function_call("guard_echo", {"text": "x"}, task_id="task-1", tool_call_id="call-1", session_id="s-1")
    (pre,) = _events(guard, "pre")
    assert pre[3:6] == ("task-1", "s-1", "call-1")
    assert "duration_ms" not in pre[6]  # nothing has run yet
    (post,) = _events(guard, "post")
    (transform,) = _events(guard, "transform")
    assert post[3] == transform[2]  # both see the same measured duration


def test_a_block_directive_answers_instead_of_the_tool(guard):
    ran = []
    registry.register("guarded", "guard2", {"description": "d"}, lambda a, **kw: ran.append(1) or "ran")
    guard.BLOCK["guarded"] = {"action": "block", "message": "Blocked by policy"}
    assert json.loads(handle_function_call("guarded", {}, task_id="t1")) == {"error": "Blocked by policy"}
    assert ran == []
    (post,) = _events(guard, "post")
    assert post[4] == "blocked"  # observers see the block; nothing transforms it
    assert _events(guard, "transform") == []


@pytest.mark.parametrize("answer", ["block", {"action": "block"}, {"action": "deny", "message": "nope"}])
def test_malformed_directives_do_not_block(guard, answer):
    guard.BLOCK["guard_echo"] = answer
    assert handle_function_call("guard_echo", {"text": "ok"}) == '{"echo": "ok"} [checked]'


def test_skip_pre_tool_call_hook_skips_only_the_before_hooks(guard):
    handle_function_call("guard_echo", {}, task_id="t1", skip_pre_tool_call_hook=True)
    assert _events(guard, "pre") == []
    assert len(_events(guard, "post")) == 1 and len(_events(guard, "transform")) == 1


@pytest.mark.parametrize(("choice", "ran"), [("once", True), ("deny", False)])
def test_an_approve_directive_asks_the_person_first(guard, choice, ran):
    from hermes_nb.tools.approval import set_default_approval_callback

    asked = []
    undo = set_default_approval_callback(lambda command, key, description: asked.append(description) or choice)
    guard.BLOCK["guard_echo"] = {"action": "approve", "message": "writes outside the sandbox"}
    try:
        result = registry.dispatch("guard_echo", {"text": "x"})
    finally:
        undo()
    assert asked == ["writes outside the sandbox"]
    assert (result == '{"echo": "x"} [checked]') is ran
    if not ran:
        assert "error" in json.loads(result)


def test_an_approve_directive_with_no_one_to_ask_blocks(guard):
    guard.BLOCK["guard_echo"] = {"action": "approve", "message": "risky"}
    assert "error" in json.loads(registry.dispatch("guard_echo", {"text": "x"}))


def test_hooks_also_run_on_the_async_path(guard):
    import asyncio

    assert asyncio.run(registry.dispatch_async("guard_echo", {"text": "a"})) == '{"echo": "a"} [checked]'
    assert len(_events(guard, "pre")) == 1


def test_a_raising_hook_is_logged_and_the_call_goes_on(guard, caplog):
    undo = plugin_hooks.add_hook("broken", "pre_tool_call", lambda **kw: 1 / 0)
    try:
        assert registry.dispatch("guard_echo", {"text": "b"}) == '{"echo": "b"} [checked]'
    finally:
        undo()
    assert "ZeroDivisionError" in caplog.text


def test_other_hooks_and_registrations_are_listed_by_doctor_not_failed(guard):
    notes = {f.name: f.message for f in failures() if f.source == "plugin"}
    assert "guard" not in notes and "guard/unsupported" in notes
    assert "on_session_end" in notes["guard/unsupported"] and "ctx.register_command" in notes["guard/unsupported"]
    assert _events(guard, "session_end") == []


def test_unloading_the_plugin_removes_its_hooks(guard):
    assert registry._call_hooks
    plugins.unload_plugins()
    assert registry._call_hooks == () and plugin_hooks.registered_hooks() == ()
    assert not [f for f in failures() if f.name == "guard/unsupported"]
    registry.register("after_unload", "x", {"description": "d"}, lambda a, **kw: "plain")
    assert registry.dispatch("after_unload", {}) == "plain" and guard.SEEN == []


def test_hooks_run_for_the_agent_loops_calls(guard):
    from hermes_nb.agent.loop import Agent
    from tests.support.fake_openai import FakeOpenAI, Reply, call

    script = [Reply(tool_calls=(call("guard_echo", {"text": "from the model"}, "c1"),)), Reply(content="done")]
    with FakeOpenAI(script) as srv:
        result = Agent(model="fake", base_url=srv.base_url, display=False, enabled_toolsets=["guard"]).run("go")
    sent = [m["content"] for m in srv.requests[1]["messages"] if m["role"] == "tool"]
    assert sent == ['{"echo": "from the model"} [checked]'] and result.text == "done"
    assert len(_events(guard, "pre")) == 1 and len(_events(guard, "post")) == 1
    assert _events(guard, "pre")[0][5] == "c1"  # the hooks know which of the model's calls this is


def test_ctx_dispatch_tool_calls_a_tool_as_the_model_would(guard):
    assert guard.CTX.dispatch_tool("guard_echo", {"text": "via ctx"}) == '{"echo": "via ctx"} [checked]'


def test_hooks_see_a_multimodal_result_as_hermes_envelope_and_it_stays_multimodal(guard):
    from hermes_nb.tools.calls.results import MultimodalResult

    parts = [{"type": "text", "text": "pixels"}]
    registry.register("shot", "guard2", {"description": "d"},
                      lambda a, **kw: {"_multimodal": True, "content": parts, "text_summary": "a shot"})
    result = registry.execute("shot", {}).content
    assert isinstance(result, MultimodalResult) and list(result.parts) == parts
    (post,) = _events(guard, "post")
    assert post[2] == {"_multimodal": True, "content": parts, "text_summary": "a shot"}
    assert registry.dispatch("shot", {})["content"] == parts  # Hermes's dict at the edge
