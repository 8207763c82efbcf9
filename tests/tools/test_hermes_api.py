"""Hermes's public registry / toolsets / model_tools API, with Hermes's own test files as the yardstick.

Hermes (NousResearch/hermes-agent) tests these modules in ``tests/tools/test_registry.py`` (36 cases),
``tests/test_toolsets.py`` (40) and ``tests/test_model_tools.py`` (31). This file restates, in our own
words and against hermes_nb, every case that is about a name or behaviour a tool author meets:

- registry: 30 of 36 mirrored; 2 differ on purpose (a dict, ``None`` or a number returned by a handler
  is serialised to JSON, where Hermes answers with a ``tool_result_contract`` error); 4 are Hermes
  internals (its discovery's module list and import patching, its snapshot helper, a secret-store dict).
- toolsets: 26 of 40 mirrored; 3 differ on purpose (a toolset nobody knows is an ``UnknownToolsetError``,
  not ``[]`` / ``None``); 11 test the contents of Hermes's own table (messaging platforms, opt-in tools).
- model_tools: 17 of 31 mirrored (the hook cases in ``test_hermes_plugins.py``; the string-to-number
  cases through dispatch, where ``inf``/``nan`` are refused rather than passed on as strings); 14 test
  Hermes's own tools and internals (URL-intent guards, agent-loop tools, legacy toolset names, the
  read-loop tracker, ``hermes_cli.plugins`` helpers).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from hermes_nb.tools import toolsets
from hermes_nb.tools.calls.results import MultimodalResult
from hermes_nb.tools.errors import UnknownToolsetError
from hermes_nb.tools.registry import ToolRegistry, registry
from hermes_nb.tools.sources.discovery import discover_tool_files

WAIT = 30  # generous: the machine is shared


def ok_handler(args, **kw):
    return json.dumps({"ok": True})


def schema(name: str = "t", description: str = "") -> dict:
    return {"name": name, "description": description or f"the {name} tool",
            "parameters": {"type": "object", "properties": {}}}


@pytest.fixture
def reg() -> ToolRegistry:
    return ToolRegistry()


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch, reg: ToolRegistry) -> ToolRegistry:
    """``reg`` stands in for the process registry, as Hermes's toolsets tests patch ``tools.registry.registry``."""
    monkeypatch.setattr("hermes_nb.tools.registry.registry", reg)
    return reg


# -- registry: register and dispatch ----------------------------------------------------------------


def test_a_registered_tool_answers_through_dispatch(reg):
    reg.register(name="alpha", toolset="core", schema=schema("alpha"), handler=ok_handler)
    assert json.loads(reg.dispatch("alpha", {})) == {"ok": True}


def test_dispatch_hands_the_arguments_to_the_handler(reg):
    reg.register(name="echo", toolset="core", schema=schema("echo"), handler=lambda args, **kw: json.dumps(args))
    assert json.loads(reg.dispatch("echo", {"msg": "hi"})) == {"msg": "hi"}


def test_a_multimodal_envelope_survives_dispatch_with_its_parts(reg):
    parts = [{"type": "text", "text": "captured"}, {"type": "image_url", "image_url": {"url": "data:,x"}}]
    reg.register(name="capture", toolset="computer_use", schema=schema("capture"),
                 handler=lambda args, **kw: {"_multimodal": True, "content": parts, "text_summary": "a screenshot"})
    assert reg.dispatch("capture", {}) == {"_multimodal": True, "content": parts, "text_summary": "a screenshot"}
    inside = reg.execute("capture", {}).content  # inside, the text view for the budget, display and records
    assert isinstance(inside, MultimodalResult) and list(inside.parts) == parts and inside == "a screenshot"


def test_a_multimodal_envelope_without_summary_reads_as_its_text_parts(reg):
    reg.register(name="cap2", toolset="cu", schema=schema("cap2"),
                 handler=lambda args, **kw: {"_multimodal": True, "content": [{"type": "text", "text": "one"},
                                                                               {"type": "text", "text": "two"}]})
    assert reg.dispatch("cap2", {})["text_summary"] == "one\ntwo"
    assert reg.execute("cap2", {}).content == "one\ntwo"


@pytest.mark.parametrize(("value", "sent"), [({"ok": True}, '{"ok": true}'), (None, "null"), (42, "42")])
def test_difference_json_values_a_handler_returns_are_serialised(reg, value, sent):
    # Hermes answers these with a tool_result_contract error; hermes_nb sends them as JSON (README).
    reg.register(name="plain", toolset="core", schema=schema("plain"), handler=lambda args, **kw: value)
    assert reg.dispatch("plain", {}) == sent


def test_difference_a_value_json_cannot_carry_is_an_error_naming_its_type(reg):
    reg.register(name="raw", toolset="core", schema=schema("raw"), handler=lambda args, **kw: b"bytes")
    error = json.loads(reg.dispatch("raw", {}))["error"]
    assert "bytes" in error and "not JSON-serialisable" in error


def test_handle_function_call_takes_hermes_flags_and_answers_a_string():
    from hermes_nb.tools.model_tools import handle_function_call

    registry.register(name="api_none", toolset="core_api", schema=schema("api_none"), handler=lambda a, **kw: None)
    raw = handle_function_call("api_none", {}, task_id="contract-test", skip_pre_tool_call_hook=True)
    assert isinstance(raw, str) and raw == "null"


# -- registry: definitions --------------------------------------------------------------------------


def test_definitions_are_openai_function_entries(reg):
    for name in ("t1", "t2"):
        reg.register(name=name, toolset="s1", schema=schema(name), handler=ok_handler)
    defs = reg.get_definitions({"t1", "t2"})
    assert [d["type"] for d in defs] == ["function", "function"]
    assert {d["function"]["name"] for d in defs} == {"t1", "t2"}


def test_definitions_leave_out_tools_whose_check_says_no(reg):
    reg.register(name="yes", toolset="s", schema=schema("yes"), handler=ok_handler, check_fn=lambda: True)
    reg.register(name="no", toolset="s", schema=schema("no"), handler=ok_handler, check_fn=lambda: False)
    assert [d["function"]["name"] for d in reg.get_definitions({"yes", "no"})] == ["yes"]


def test_a_check_shared_by_two_tools_runs_once_per_definitions_call(reg):
    calls = []

    def shared():
        calls.append(1)
        return True

    for name in ("first", "second"):
        reg.register(name=name, toolset="shared", schema=schema(name), handler=ok_handler, check_fn=shared)
    assert len(reg.get_definitions({"first", "second"})) == 2
    assert len(calls) == 1


def test_a_schema_without_parameters_is_a_tool_without_arguments(reg):
    reg.register(name="bare", toolset="x", schema={}, handler=lambda *a, **k: "{}")
    function = reg.get_definitions({"bare"})[0]["function"]
    assert function["parameters"] == {"type": "object", "properties": {}}
    assert reg.dispatch("bare", {}) == "{}"


def test_an_unknown_tool_is_an_error_result(reg):
    assert "Unknown tool" in json.loads(reg.dispatch("nonexistent", {}))["error"]


# -- registry: toolset availability -----------------------------------------------------------------


def test_a_toolset_without_checks_is_available(reg):
    reg.register(name="t", toolset="free", schema=schema(), handler=ok_handler)
    assert reg.is_toolset_available("free") is True


def test_a_failing_check_makes_its_toolset_unavailable(reg):
    reg.register(name="t", toolset="locked", schema=schema(), handler=ok_handler, check_fn=lambda: False)
    assert reg.is_toolset_available("locked") is False


def test_toolset_requirements_per_toolset(reg):
    reg.register(name="a", toolset="ok", schema=schema(), handler=ok_handler, check_fn=lambda: True)
    reg.register(name="b", toolset="nope", schema=schema(), handler=ok_handler, check_fn=lambda: False)
    assert reg.check_toolset_requirements() == {"nope": False, "ok": True}


def test_tool_names_come_sorted(reg):
    for name in ("z_tool", "a_tool"):
        reg.register(name=name, toolset="s", schema=schema(), handler=ok_handler)
    assert reg.get_all_tool_names() == ["a_tool", "z_tool"]


def test_registered_toolset_names_are_unique_and_sorted(reg):
    for name, toolset in (("first", "zeta"), ("second", "alpha"), ("third", "alpha")):
        reg.register(name=name, toolset=toolset, schema=schema(), handler=ok_handler)
    assert reg.get_registered_toolset_names() == ["alpha", "zeta"]


def test_tool_names_of_one_toolset(reg):
    for name, toolset in (("z_tool", "grouped"), ("a_tool", "grouped"), ("other_tool", "other")):
        reg.register(name=name, toolset=toolset, schema=schema(), handler=ok_handler)
    assert reg.get_tool_names_for_toolset("grouped") == ["a_tool", "z_tool"]


def test_a_raising_handler_is_an_error_result_naming_the_exception(reg):
    def bad(args, **kw):
        raise RuntimeError("boom")

    reg.register(name="bad", toolset="s", schema=schema(), handler=bad)
    assert "RuntimeError" in json.loads(reg.dispatch("bad", {}))["error"]


# -- registry: a check that raises ------------------------------------------------------------------


def _raises(exc: Exception):
    def check():
        raise exc

    return check


def test_a_raising_check_makes_its_toolset_unavailable_without_raising(reg):
    reg.register(name="t", toolset="broken", schema=schema(), handler=ok_handler, check_fn=lambda: 1 / 0)
    assert reg.is_toolset_available("broken") is False


def test_toolset_requirements_survive_a_raising_check(reg):
    reg.register(name="a", toolset="good", schema=schema(), handler=ok_handler, check_fn=lambda: True)
    reg.register(name="b", toolset="bad", schema=schema(), handler=ok_handler, check_fn=_raises(ImportError("x")))
    assert reg.check_toolset_requirements() == {"bad": False, "good": True}


def test_definitions_skip_a_tool_whose_check_raises(reg):
    reg.register(name="ok_tool", toolset="s", schema=schema("ok_tool"), handler=ok_handler, check_fn=lambda: True)
    reg.register(name="bad_tool", toolset="s2", schema=schema("bad_tool"), handler=ok_handler,
                 check_fn=_raises(OSError("network down")))
    assert [d["function"]["name"] for d in reg.get_definitions({"ok_tool", "bad_tool"})] == ["ok_tool"]


def test_check_tool_availability_survives_a_raising_check(reg):
    reg.register(name="a", toolset="works", schema=schema(), handler=ok_handler, check_fn=lambda: True)
    reg.register(name="b", toolset="crashes", schema=schema(), handler=ok_handler, check_fn=lambda: 1 / 0)
    available, unavailable = reg.check_tool_availability()
    assert available == ["works"]
    assert unavailable == [{"name": "crashes", "env_vars": [], "tools": ["b"]}]


# -- registry: discovery of Hermes-style files --------------------------------------------------------


def test_discovery_imports_only_files_that_register(tmp_path: Path):
    folder = tmp_path / "hermes_style"
    folder.mkdir()
    (folder / "alpha.py").write_text("from tools.registry import registry\n"
                                     "registry.register(name='hapi_alpha', toolset='x', schema={},\n"
                                     "                  handler=lambda *_a, **_k: '{}')\n", encoding="utf-8")
    (folder / "beta.py").write_text("VALUE = 1\n", encoding="utf-8")
    imported = discover_tool_files(folder, module_prefix="hermes_nb_test_hapi", source_label="user-tools")
    assert imported == ["hermes_nb_test_hapi.alpha"]
    assert registry.dispatch("hapi_alpha", {}) == "{}"


# -- registry: emoji and entries ----------------------------------------------------------------------


def test_emoji_is_kept_on_the_entry(reg):
    reg.register(name="t", toolset="s", schema=schema(), handler=ok_handler, emoji="🔥")
    assert reg.get_entry("t").emoji == "🔥"


def test_get_emoji_answers_the_registered_one(reg):
    reg.register(name="t", toolset="s", schema=schema(), handler=ok_handler, emoji="🎯")
    assert reg.get_emoji("t") == "🎯"


def test_get_emoji_falls_back_to_a_default(reg):
    reg.register(name="t", toolset="s", schema=schema(), handler=ok_handler)
    assert reg.get_emoji("t") == "⚡" and reg.get_emoji("t", default="🔧") == "🔧"


def test_get_emoji_of_an_unknown_tool_is_the_default(reg):
    assert reg.get_emoji("nonexistent") == "⚡" and reg.get_emoji("nonexistent", default="❓") == "❓"


def test_an_empty_emoji_counts_as_none(reg):
    reg.register(name="t", toolset="s", schema=schema(), handler=ok_handler, emoji="")
    assert reg.get_emoji("t") == "⚡"


def test_get_entry_finds_a_tool_by_name(reg):
    reg.register(name="alpha", toolset="core", schema=schema("alpha"), handler=ok_handler)
    entry = reg.get_entry("alpha")
    assert (entry.name, entry.toolset) == ("alpha", "core")


def test_get_entry_of_an_unknown_tool_is_none(reg):
    assert reg.get_entry("missing") is None


# -- registry: readers while another thread registers ---------------------------------------------------


def _race(reg: ToolRegistry, read, write):
    """Run ``read`` while its check blocks, ``write`` in another thread meanwhile; the reader's answer."""
    check_started, writer_done = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def blocking_check():
        check_started.set()
        seen["writer finished during the check"] = writer_done.wait(WAIT)
        return True

    reg.register(name="alpha", toolset="gated", schema=schema("alpha"), handler=ok_handler, check_fn=blocking_check)
    reg.register(name="beta", toolset="plain", schema=schema("beta"), handler=ok_handler)

    def writer():
        assert check_started.wait(WAIT)
        write()
        writer_done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        answer = read()
    finally:
        thread.join(WAIT)
    assert not thread.is_alive() and seen["writer finished during the check"] is True
    return answer


def test_check_tool_availability_while_another_thread_registers(reg):
    available, unavailable = _race(
        reg, reg.check_tool_availability,
        lambda: reg.register(name="gamma", toolset="new", schema=schema("gamma"), handler=ok_handler))
    assert {"gated", "plain"} <= set(available) and unavailable == []


def test_available_toolsets_while_another_thread_deregisters(reg):
    found = _race(reg, reg.get_available_toolsets, lambda: reg.deregister("beta"))
    assert found["gated"]["available"] is True


def test_a_toolset_is_available_when_any_of_its_tools_is(reg):
    reg.register(name="read_terminal", toolset="terminal", schema=schema(), handler=ok_handler, check_fn=lambda: False)
    reg.register(name="terminal", toolset="terminal", schema=schema(), handler=ok_handler, check_fn=lambda: True)
    reg.register(name="process", toolset="terminal", schema=schema(), handler=ok_handler)
    available, unavailable = reg.check_tool_availability()
    assert "terminal" in available and unavailable == []
    assert reg.is_toolset_available("terminal") and reg.get_available_toolsets()["terminal"]["available"]


def test_a_toolset_is_unavailable_when_every_tool_is_gated(reg):
    reg.register(name="read_terminal", toolset="terminal", schema=schema(), handler=ok_handler, check_fn=lambda: False)
    reg.register(name="terminal", toolset="terminal", schema=schema(), handler=ok_handler, check_fn=lambda: False)
    available, unavailable = reg.check_tool_availability()
    assert "terminal" not in available and [u["name"] for u in unavailable] == ["terminal"]


# -- toolsets -------------------------------------------------------------------------------------------


def test_get_toolset_of_a_table_toolset():
    assert "read_file" in toolsets.get_toolset("file")["tools"]


def test_get_toolset_merges_what_the_registry_added_to_a_table_toolset(live):
    live.register(name="read_file_plus", toolset="file", schema=schema("read_file_plus"), handler=ok_handler)
    assert set(toolsets.get_toolset("file")["tools"]) == {*toolsets.TOOLSETS["file"]["tools"], "read_file_plus"}


def test_get_toolset_of_an_unknown_name_is_none():
    assert toolsets.get_toolset("nonexistent") is None


def test_resolve_a_leaf_toolset():
    assert set(toolsets.resolve_toolset("terminal")) == {"terminal", "process"}  # as in Hermes


def test_resolve_a_composite_toolset():
    tools = toolsets.resolve_toolset("hermes-core")
    assert {"terminal", "read_file", "python", "clarify"} <= set(tools)


def test_resolve_cuts_include_cycles(monkeypatch):
    monkeypatch.setitem(toolsets.TOOLSETS, "_cycle_a", {"description": "", "tools": ["t1"], "includes": ["_cycle_b"]})
    monkeypatch.setitem(toolsets.TOOLSETS, "_cycle_b", {"description": "", "tools": ["t2"], "includes": ["_cycle_a"]})
    assert toolsets.resolve_toolset("_cycle_a") == ["t1", "t2"]


def test_difference_resolving_an_unknown_toolset_is_an_error():
    # Hermes returns []; a typo must not silently give the model no tools (README).
    with pytest.raises(UnknownToolsetError, match="known toolsets"):
        toolsets.resolve_toolset("nonexistent")


def test_resolve_a_registry_toolset_from_the_live_registry(live):
    for name in ("plugin_b", "plugin_a"):
        live.register(name=name, toolset="plugin_example", schema=schema(name), handler=ok_handler)
    assert toolsets.resolve_toolset("plugin_example") == ["plugin_a", "plugin_b"]


@pytest.mark.parametrize("every", ["all", "*"])
def test_all_and_star_are_every_tool(every):
    assert toolsets.resolve_toolset(every) == registry.get_all_tool_names()
    assert len(toolsets.resolve_toolset(every)) >= 7  # the built-in tools at least


def test_resolve_multiple_toolsets_unites_without_duplicates():
    tools = toolsets.resolve_multiple_toolsets(["file", "readonly", "terminal"])
    assert {"read_file", "search_files", "terminal"} <= set(tools) and len(tools) == len(set(tools))


def test_resolve_multiple_toolsets_of_nothing_is_nothing():
    assert toolsets.resolve_multiple_toolsets([]) == []


def test_validate_toolset_knows_the_table():
    assert toolsets.validate_toolset("file") is True and toolsets.validate_toolset("terminal") is True


def test_validate_toolset_knows_all_and_star():
    assert toolsets.validate_toolset("all") is True and toolsets.validate_toolset("*") is True


def test_validate_toolset_rejects_an_unknown_name():
    assert toolsets.validate_toolset("nonexistent") is False


def test_a_toolset_alias_from_the_live_registry(live):
    live.register(name="mcp__dynserver__ping", toolset="mcp-dynserver", schema=schema("ping"), handler=ok_handler)
    live.register_toolset_alias("dynserver", "mcp-dynserver")
    assert toolsets.validate_toolset("dynserver") and toolsets.validate_toolset("mcp-dynserver")
    assert toolsets.resolve_toolset("dynserver") == ["mcp__dynserver__ping"]
    assert live.get_registered_toolset_aliases() == {"dynserver": "mcp-dynserver"}
    live.deregister("mcp__dynserver__ping")  # the last tool leaves: so does the alias, as in Hermes
    assert live.get_toolset_alias_target("dynserver") is None and not toolsets.validate_toolset("dynserver")


def test_get_toolset_info_of_a_leaf():
    info = toolsets.get_toolset_info("terminal")
    assert (info["name"], info["is_composite"], info["tool_count"]) == ("terminal", False, 2)  # terminal, process
    assert set(info) == {"name", "description", "direct_tools", "includes", "resolved_tools", "tool_count",
                         "is_composite"}


def test_get_toolset_info_of_a_composite():
    info = toolsets.get_toolset_info("hermes-core")
    assert info["is_composite"] is True and info["tool_count"] > len(info["direct_tools"])


def test_difference_get_toolset_info_of_an_unknown_name_is_an_error():
    with pytest.raises(UnknownToolsetError):  # Hermes: None
        toolsets.get_toolset_info("nonexistent")


def test_create_custom_toolset_at_runtime(monkeypatch):
    monkeypatch.setitem(toolsets.TOOLSETS, "_placeholder", {"description": "", "tools": [], "includes": []})
    toolsets.create_custom_toolset(name="_test_custom", description="Test toolset", tools=["read_file"],
                                   includes=["terminal"])
    try:
        assert {"read_file", "terminal"} <= set(toolsets.resolve_toolset("_test_custom"))
        assert toolsets.validate_toolset("_test_custom") is True
    finally:
        toolsets.remove_custom_toolset("_test_custom")


def test_registry_toolset_membership_is_live(live):
    live.register(name="live_tool", toolset="test-live-toolset", schema=schema("live_tool"), handler=ok_handler)
    assert toolsets.validate_toolset("test-live-toolset") is True
    assert toolsets.get_toolset("test-live-toolset")["tools"] == ["live_tool"]
    assert toolsets.resolve_toolset("test-live-toolset") == ["live_tool"]


def test_every_table_toolset_has_its_keys():
    for name, spec in toolsets.TOOLSETS.items():
        assert {"description", "tools", "includes"} <= set(spec), name


def test_every_table_include_names_a_table_toolset():
    for name, spec in toolsets.TOOLSETS.items():
        assert all(inc in toolsets.TOOLSETS for inc in spec["includes"]), name


def test_get_all_toolsets_lists_a_plugin_toolset(live):
    live.register(name="plugin_tool", toolset="plugin_bundle", schema=schema("plugin_tool"), handler=ok_handler)
    assert toolsets.get_all_toolsets()["plugin_bundle"]["tools"] == ["plugin_tool"]


def test_include_registry_false_is_the_table_as_written(live):
    live.register(name="read_terminal", toolset="terminal", schema=schema("read_terminal"), handler=ok_handler)
    assert "read_terminal" in toolsets.resolve_toolset("terminal")
    assert sorted(toolsets.resolve_toolset("terminal", include_registry=False)) == ["process", "terminal"]


def test_get_toolset_static_view():
    assert toolsets.get_toolset("clarify", include_registry=False)["tools"] == ["clarify"]


def test_static_view_follows_includes():
    static = set(toolsets.resolve_toolset("hermes-core", include_registry=False))
    assert {"terminal", "read_file", "python", "clarify"} <= static


def test_all_accepts_include_registry():
    registry.register(name="registry_only", toolset="extra", schema=schema("registry_only"), handler=ok_handler)
    static = set(toolsets.resolve_toolset("all", include_registry=False))
    assert static <= set(toolsets.resolve_toolset("all")) and "registry_only" not in static


def test_static_view_of_a_registry_only_toolset_is_empty(live):
    live.register(name="registry_only", toolset="extra", schema=schema("registry_only"), handler=ok_handler)
    assert toolsets.resolve_toolset("extra", include_registry=False) == []
    with pytest.raises(UnknownToolsetError):  # Hermes: [] for a name nobody knows, too
        toolsets.resolve_toolset("__definitely_not_a_real_toolset__", include_registry=False)


# -- model_tools -----------------------------------------------------------------------------------------


def test_handle_function_call_of_an_unknown_tool_names_it():
    from hermes_nb.tools.model_tools import handle_function_call

    assert "totally_fake_tool_xyz" in json.loads(handle_function_call("totally_fake_tool_xyz", {}))["error"]


def test_handle_function_call_with_no_arguments_is_a_json_error():
    from hermes_nb.tools.model_tools import handle_function_call

    parsed = json.loads(handle_function_call("read_file", None))
    assert isinstance(parsed, dict) and parsed["error"]


def test_session_id_reaches_the_handler():
    from hermes_nb.tools.model_tools import handle_function_call

    registry.register(name="who", toolset="core_api", schema=schema("who"), handler=lambda a, **kw: kw)
    answer = json.loads(handle_function_call("who", {}, task_id="task-1", tool_call_id="call-1", session_id="s-1"))
    assert answer == {"task_id": "task-1", "session_id": "s-1", "user_task": None}  # tool_call_id: the hooks only


def test_model_tools_module_names_answer_from_the_live_registry():
    from hermes_nb.tools import model_tools

    names = model_tools.get_all_tool_names()
    assert isinstance(names, list) and "terminal" in names
    assert isinstance(model_tools.get_toolset_for_tool("terminal"), str)
    assert model_tools.get_toolset_for_tool("totally_nonexistent_tool") is None
    assert isinstance(model_tools.TOOL_TO_TOOLSET_MAP, dict) and model_tools.TOOL_TO_TOOLSET_MAP


@pytest.mark.parametrize("text", ["inf", "-inf", "nan", "Infinity"])
def test_a_number_argument_never_becomes_a_value_strict_json_refuses(reg, text):
    # Hermes leaves these strings as they are; hermes_nb's validator says the call does not fit (README)
    reg.register(name="num", toolset="s", schema={"parameters": {"type": "object", "properties": {
        "x": {"type": "number"}}}}, handler=lambda args, **kw: json.dumps(args, allow_nan=False))
    assert "must be a number" in json.loads(reg.dispatch("num", {"x": text}))["error"]


@pytest.mark.parametrize(("text", "value"), [("42", 42), ("3.14", 3.14), ("1e3", 1000)])
def test_a_number_argument_given_as_a_string_is_coerced(reg, text, value):
    reg.register(name="num", toolset="s", schema={"parameters": {"type": "object", "properties": {
        "x": {"type": "number"}}}}, handler=lambda args, **kw: json.dumps(args, allow_nan=False))
    assert json.loads(reg.dispatch("num", {"x": text})) == {"x": value}
