"""Memory providers from a plugin (``ctx.register_memory_provider``), the built-in ``sessions`` provider, and the
agent-loop tools called outside a run."""

from __future__ import annotations

import inspect
import json
import textwrap
from pathlib import Path
from typing import Any

from hermes_nb.agent.loop import Agent
from hermes_nb.tools.agent_loop.providers import memory_providers, unregister_memory_provider
from hermes_nb.tools.registry import registry
from hermes_nb.tools.sources.load_report import failures
from hermes_nb.tools.sources.plugins import discover_plugins, unload_plugins
from tests.support.fake_openai import FakeOpenAI, Reply, call

PLUGIN = """
    import json
    SEEN = []

    class Notes:
        name = "notes"
        def get_tool_schemas(self):
            return [{"name": "notes_lookup", "description": "Look a note up.",
                     "parameters": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}]
        def handle_tool_call(self, tool_name, args, **kw):
            return json.dumps({"tool": tool_name, "note": "the key " + args["key"] + " opens the shed"})
        def prefetch(self, query):
            return "Notes about: " + query
        def sync(self, messages):
            SEEN.append([m["role"] for m in messages])

    class Hermesish:
        # Hermes's MemoryProvider lifecycle: an unavailable one is not set up
        name = "offline"
        def is_available(self):
            return False
        def unavailable_reason(self):
            return "pip install offline-memory"
        def initialize(self, session_id, **kwargs):
            raise AssertionError("never initialised")
        def get_tool_schemas(self):
            return []

    class Broken:
        name = "broken"
        def get_tool_schemas(self):
            return []
        def prefetch(self, query):
            raise RuntimeError("recall service down")

    def register(ctx):
        ctx.register_memory_provider(Notes())
        ctx.register_memory_provider(Broken())
        ctx.register_memory_provider(Hermesish())
"""


def _load(hermes_home: Path) -> Any:
    folder = hermes_home / "plugins" / "notes"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    assert "notes" in discover_plugins()
    provider = next(p.provider for p in memory_providers() if p.name == "notes")
    return inspect.getmodule(type(provider))


def test_a_plugins_provider_offers_tools_recalls_before_the_run_and_syncs_after(hermes_home: Path) -> None:
    module = _load(hermes_home)
    try:
        entry = registry.get_entry("notes_lookup")
        assert entry is not None and entry.toolset == "memory-notes" and entry.source == "plugin"
        script = [Reply(tool_calls=(call("notes_lookup", {"key": "blue"}, "n1"),)), Reply(content="The shed.")]
        with FakeOpenAI(script) as srv:
            result = Agent(model="m", base_url=srv.base_url, enabled_toolsets=["memory-notes"],
                           display=False, stream=False).run("where does the blue key go?")
        system = srv.requests[0]["messages"][0]
        assert system["role"] == "system" and "Notes about: where does the blue key go?" in system["content"]
        answer = next(m["content"] for m in srv.requests[1]["messages"] if m.get("tool_call_id") == "n1")
        assert json.loads(answer)["note"] == "the key blue opens the shed"
        assert module.SEEN == [["system", "user", "assistant", "tool", "assistant"]]
        # the broken provider: said once in the run, listed for %tools doctor, the run went on
        notes = [i[1] for i in result.transcript.items if i[0] == "notice"]
        assert result.stopped_reason == "done" and len(notes) == 1 and "recall service down" in notes[0]
        assert any(f.source == "memory-provider" and f.name == "broken" and "recall service down" in f.message
                   for f in failures())
        assert any(f.name == "offline" and "unavailable: pip install offline-memory" in f.message for f in failures())
        assert "offline" not in [p.name for p in memory_providers()]
    finally:
        for name in ("notes", "broken"):
            unregister_memory_provider(name)


def test_a_provider_whose_toolset_is_not_offered_is_not_asked(hermes_home: Path) -> None:
    module = _load(hermes_home)
    try:
        with FakeOpenAI([Reply(content="hi")]) as srv:
            Agent(model="m", base_url=srv.base_url, enabled_toolsets=["todo"], display=False, stream=False).run("hi")
        assert srv.requests[0]["messages"][0]["role"] == "user" and module.SEEN == []
    finally:
        for name in ("notes", "broken"):
            unregister_memory_provider(name)


def test_unloading_the_plugin_ends_its_providers_those_without_tools_too(hermes_home: Path) -> None:
    _load(hermes_home)
    try:
        assert {"notes", "broken"} <= {p.name for p in memory_providers()}
        unload_plugins()
        left = [p.name for p in memory_providers()]
        assert "notes" not in left and "notes_lookup" not in registry
        assert "broken" not in left  # no tools to lose: it would have been asked in every later run
        assert "notes" in discover_plugins()  # load again: the same providers, once each
        assert sorted(p.name for p in memory_providers() if p.name in ("notes", "broken")) == ["broken", "notes"]
    finally:
        for name in ("notes", "broken"):
            unregister_memory_provider(name)


def test_the_builtin_sessions_provider_recalls_past_runs(ip: Any) -> None:
    ip.run_line_magic("tools", "")  # the registry's first use installs the provider
    assert [p.name for p in memory_providers()] == ["sessions"]
    with FakeOpenAI([Reply(content="The boiler code is 4471.")]) as srv:
        Agent(model="m", base_url=srv.base_url, enabled_toolsets=["todo"], display=False, stream=False).run("boiler?")
    found = json.loads(registry.dispatch("recall", {"query": "boiler"}))
    assert found["count"] == 1 and "»boiler«" in found["recalled"][0]["snippet"]
    assert registry.get_toolset_for_tool("recall") == "memory-sessions"


def test_outside_a_run_memory_and_search_work_and_todo_says_it_needs_a_run(ip: Any) -> None:
    ip.run_line_magic("tools", "")
    added = json.loads(registry.dispatch("memory", {"action": "add", "target": "memory", "content": "from a cell"}))
    assert added["success"] is True
    assert json.loads(registry.dispatch("session_search", {}))["mode"] == "browse"
    for name, args in (("todo", {"todos": []}), ("delegate_task", {"goal": "x"})):
        error = json.loads(registry.dispatch(name, args))["error"]
        assert "inside Agent.run or %%agent" in error, error


def test_without_the_extension_the_tools_say_what_they_need() -> None:
    error = json.loads(registry.dispatch("memory", {"action": "add", "target": "memory", "content": "x"}))["error"]
    assert "works inside an agent run" in error and "%load_ext hermes_nb" in error
