"""The registry: registration rules, definitions, availability and a dispatch that never raises."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from hermes_nb.tools.errors import ToolSchemaError
from hermes_nb.tools.registry import ToolEntry, ToolRegistry

SCHEMA = {
    "name": "add",
    "description": "Add two integers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}


def add_handler(args, **kw):
    return {"sum": args["a"] + args["b"]}


@pytest.fixture
def reg() -> ToolRegistry:
    r = ToolRegistry()
    r.register("add", "math", SCHEMA, add_handler, emoji="➕")
    return r


# -- registration ----------------------------------------------------------------------------------


def test_hermes_positional_order(fresh_registry):
    check = lambda: True  # noqa: E731
    entry = fresh_registry.register("t", "ts", SCHEMA, add_handler, check, ["K"], False, "desc", "🔧", 500)
    assert isinstance(entry, ToolEntry)
    assert (entry.check_fn, entry.requires_env, entry.is_async) == (check, ("K",), False)
    assert (entry.description, entry.emoji, entry.max_result_size_chars) == ("desc", "🔧", 500)
    assert entry.schema["description"] == "desc"


def test_new_arguments_are_keyword_only(fresh_registry):
    with pytest.raises(TypeError):
        fresh_registry.register("t", "ts", SCHEMA, add_handler, None, None, False, "", "", None, True)


def test_description_defaults_to_schema(reg):
    assert reg.get_entry("add").description == "Add two integers."


def test_origin_is_the_calling_module(reg):
    assert reg.get_entry("add").origin == __name__


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ("nope", "schema must be a dict"),
        ({"parameters": []}, "'parameters' must be an object"),
        ({"parameters": {"type": "array"}}, "must have type 'object'"),
        ({"parameters": {"type": "object", "properties": []}}, "'parameters.properties' must be an object"),
        ({"parameters": {"type": "object", "properties": {"a": "int"}}}, "property 'a' must be a JSON schema"),
        ({"parameters": {"type": "object", "properties": {"a": {"type": "int"}}}}, "unknown type 'int'"),
        ({"parameters": {"type": "object", "required": "a"}}, "'parameters.required' must be a list"),
    ],
)
def test_bad_schema_is_a_value_error_saying_what(fresh_registry, schema, message):
    with pytest.raises(ToolSchemaError, match=message) as info:
        fresh_registry.register("bad", "ts", schema, add_handler)
    assert isinstance(info.value, ValueError)
    assert "bad" not in fresh_registry


def test_reregister_from_same_place_replaces(reg):
    reg.register("add", "math", SCHEMA, lambda a, **k: "v2")
    assert reg.dispatch("add", {"a": 1, "b": 2}) == "v2"
    assert reg.get_tool_names_for_toolset("math") == ["add"]


def test_taking_a_name_from_another_toolset_needs_override(reg, caplog):
    with pytest.raises(ValueError, match="override=True"):
        reg.register("add", "other", SCHEMA, add_handler)
    with pytest.raises(ValueError, match="override=True"):
        reg.register("add", "math", SCHEMA, add_handler, source="mcp")
    reg.register("add", "other", SCHEMA, add_handler, override=True)
    assert reg.get_toolset_for_tool("add") == "other"
    assert "math" not in reg.get_toolsets()  # emptied toolset is gone
    assert "moved from toolset 'math'" in caplog.text


def test_deregister_cleans_empty_toolset(reg):
    reg.register("sub", "math", SCHEMA, add_handler)
    reg.deregister("add")
    assert reg.get_toolsets() == {"math": ["sub"]}
    reg.deregister("sub")
    assert reg.get_toolsets() == {}
    assert reg.deregister("sub") is None


def test_listeners_hear_changes_and_undo(reg):
    seen = []
    undo = reg.add_listener(lambda event, name: seen.append((event, name)))
    reg.register("x", "ts", SCHEMA, add_handler)
    reg.set_disabled("x", "because")
    reg.deregister("x")
    undo()
    reg.register("y", "ts", SCHEMA, add_handler)
    assert seen == [("register", "x"), ("update", "x"), ("deregister", "x")]


def test_a_raising_listener_does_not_break_registration(reg):
    reg.add_listener(lambda e, n: 1 / 0)
    reg.register("x", "ts", SCHEMA, add_handler)
    assert "x" in reg


# -- definitions and availability ------------------------------------------------------------------


def test_definitions_openai_format_sorted_skipping_unknown(reg):
    reg.register("aaa", "ts", SCHEMA, add_handler)
    defs = reg.get_definitions(["add", "missing", "aaa"])
    assert [d["function"]["name"] for d in defs] == ["aaa", "add"]
    assert defs[1] == {"type": "function", "function": {**SCHEMA, "name": "add"}}


def test_check_fn_false_or_raising_hides_tool(reg):
    reg.register("off", "ts", SCHEMA, add_handler, check_fn=lambda: False)

    def broken():
        raise RuntimeError("no backend")

    reg.register("boom", "ts", SCHEMA, add_handler, check_fn=broken)
    assert [d["function"]["name"] for d in reg.get_definitions(["add", "off", "boom"])] == ["add"]
    un = reg.get_unavailable()
    assert "returned false" in un["off"].reason
    assert "raised RuntimeError: no backend" in un["boom"].reason


def test_each_check_runs_once_per_call(fresh_registry):
    calls = []

    def check():
        calls.append(1)
        return True

    for i in range(50):
        fresh_registry.register(f"t{i}", "ts", SCHEMA, add_handler, check_fn=check)
    fresh_registry.get_definitions(fresh_registry.get_all_tool_names())
    assert len(calls) == 1


def test_requires_env_names_missing_variables_never_values(fresh_registry, monkeypatch):
    monkeypatch.delenv("HNB_TEST_KEY", raising=False)
    monkeypatch.setenv("HNB_OTHER", "s3cret-value")
    fresh_registry.register("k", "ts", SCHEMA, add_handler, requires_env=["HNB_TEST_KEY", "HNB_OTHER"])
    status = fresh_registry.availability("k")
    assert not status.available and status.missing_env == ("HNB_TEST_KEY",)
    assert "HNB_TEST_KEY" in status.reason and "s3cret" not in status.reason
    monkeypatch.setenv("HNB_TEST_KEY", "x")
    assert fresh_registry.availability("k").available


def test_disabled_tool_is_unavailable_and_refused(reg):
    reg.set_disabled("add", "definition changed")
    assert reg.get_definitions(["add"]) == []
    assert "definition changed" in json.loads(reg.dispatch("add", {"a": 1, "b": 2}))["error"]
    reg.set_disabled("add", None)
    assert reg.dispatch("add", {"a": 1, "b": 2}) == '{"sum": 3}'


# -- dispatch --------------------------------------------------------------------------------------


def err(result: str) -> str:
    return json.loads(result)["error"]


def test_dispatch_dict_and_json_text(reg):
    assert reg.dispatch("add", {"a": 1, "b": 2}) == '{"sum": 3}'
    assert reg.dispatch("add", '{"a": 1, "b": 2}') == '{"sum": 3}'


def test_unknown_tool(reg):
    assert json.loads(reg.dispatch("nope", {})) == {"error": "Unknown tool: nope"}


def test_raising_handler(reg):
    reg.register("bad", "ts", SCHEMA, lambda a, **k: {}["missing"])
    assert err(reg.dispatch("bad", {"a": 1, "b": 2})) == "Tool execution failed: KeyError: 'missing'"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object, got array"),
        ("3", "must be a JSON object, got number"),
        ({"a": 1}, "'b'"),
    ],
)
def test_bad_arguments_tell_the_model_what_to_fix(reg, args, fragment):
    message = err(reg.dispatch("add", args))
    assert message.startswith("Invalid arguments for add:")
    assert fragment in message


def test_kwargs_reach_handler(reg):
    reg.register("kw", "ts", SCHEMA, lambda a, **kw: kw)
    assert json.loads(reg.dispatch("kw", {"a": 1, "b": 2}, task_id="t-1")) == {"task_id": "t-1"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [("text", "text"), ([1, "x"], '[1, "x"]'), (None, "null"), ({"é": 1}, '{"é": 1}')],
)
def test_results_are_strings(reg, value, expected):
    reg.register("r", "ts", SCHEMA, lambda a, **k: value)
    assert reg.dispatch("r", {"a": 1, "b": 2}) == expected


@pytest.mark.parametrize("value", [object(), b"raw", float("nan")])  # a set converts now (result_values)
def test_unserialisable_result_is_an_error_naming_the_type(reg, value):
    reg.register("r", "ts", SCHEMA, lambda a, **k: value)
    assert type(value).__name__ in err(reg.dispatch("r", {"a": 1, "b": 2}))


async def slow_double(args, **kw):
    await asyncio.sleep(0)
    return {"double": args["a"] * 2}


def test_async_handler_dispatched_sync_outside_any_loop(reg):
    reg.register("dbl", "ts", SCHEMA, slow_double)
    assert reg.get_entry("dbl").is_async
    assert reg.dispatch("dbl", {"a": 4, "b": 0}) == '{"double": 8}'


def test_async_handler_dispatched_sync_inside_running_loop_same_thread(reg):
    reg.register("dbl", "ts", SCHEMA, slow_double)

    async def main():
        asyncio.get_running_loop()  # we are on a running loop, as in a Jupyter cell
        return reg.dispatch("dbl", {"a": 5, "b": 0})

    assert asyncio.run(main()) == '{"double": 10}'


def test_dispatch_async_contract(reg):
    reg.register("dbl", "ts", SCHEMA, slow_double)
    caller = threading.get_ident()
    seen = {}

    def sync_tool(args, **kw):
        seen["thread"] = threading.get_ident()
        return "ok"

    reg.register("s", "ts", SCHEMA, sync_tool)

    async def main():
        return (
            await reg.dispatch_async("dbl", {"a": 2, "b": 0}),
            await reg.dispatch_async("s", {"a": 2, "b": 0}),
            await reg.dispatch_async("nope", {}),
            await reg.dispatch_async("add", "[]"),
        )

    out = asyncio.run(main())
    assert out[:2] == ('{"double": 4}', "ok")
    assert seen["thread"] != caller  # sync handlers run off the loop
    assert err(out[2]) == "Unknown tool: nope"
    assert "must be a JSON object" in err(out[3])


def test_async_handler_raising(reg):
    async def boom(args, **kw):
        raise ValueError("bad input")

    reg.register("boom", "ts", SCHEMA, boom)
    assert err(reg.dispatch("boom", {"a": 1, "b": 1})) == "Tool execution failed: ValueError: bad input"


# -- thread safety ---------------------------------------------------------------------------------


def test_concurrent_register_and_dispatch(fresh_registry):
    fresh_registry.register("add", "math", SCHEMA, add_handler)
    errors: list[str] = []
    stop = threading.Event()

    def churn(k: int) -> None:
        for i in range(300):
            fresh_registry.register(f"t{k}_{i % 7}", f"ts{k}", SCHEMA, add_handler)
            fresh_registry.deregister(f"t{k}_{(i + 3) % 7}")

    def call() -> None:
        while not stop.is_set():
            out = fresh_registry.dispatch("add", {"a": 1, "b": 2})
            if out != '{"sum": 3}':
                errors.append(out)
            fresh_registry.get_definitions(fresh_registry.get_all_tool_names())

    callers = [threading.Thread(target=call) for _ in range(3)]
    writers = [threading.Thread(target=churn, args=(k,)) for k in range(4)]
    for t in callers + writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in callers:
        t.join()
    assert errors == []
    # every toolset's member list matches the tools that claim it
    for ts, names in fresh_registry.get_toolsets().items():
        assert all(fresh_registry.get_toolset_for_tool(n) == ts for n in names)
    assert sum(len(v) for v in fresh_registry.get_toolsets().values()) == len(fresh_registry)


# -- approval of tools marked needs_approval -------------------------------------------------------


def test_needs_approval_asks_and_respects_the_answer(reg):
    from hermes_nb.tools import approval

    ran = []
    reg.register("wipe", "danger", SCHEMA, lambda a, **k: ran.append(a) or "wiped", needs_approval=True,
                 metadata={"approval_reason": "deletes everything"})
    asked = []
    undo = approval.set_default_approval_callback(lambda subject, key, why: asked.append((subject, key, why)) or "deny")
    try:
        out = json.loads(reg.dispatch("wipe", {"a": 1, "b": 2}))
        assert out["blocked"] is True and "denied" in out["error"] and ran == []
        assert asked == [('wipe {"a": 1, "b": 2}', "tool:wipe", "deletes everything")]
    finally:
        undo()
    undo = approval.set_default_approval_callback(lambda *a: "once")
    try:
        assert asyncio.run(reg.dispatch_async("wipe", {"a": 1, "b": 2})) == "wiped"
        assert reg.dispatch("wipe", {"a": 3, "b": 4}) == "wiped"
    finally:
        undo()
        approval.reset_session_approvals()


def test_needs_approval_without_anyone_to_ask_is_blocked(reg):
    reg.register("wipe", "danger", SCHEMA, lambda a, **k: "wiped", needs_approval=True)
    out = json.loads(reg.dispatch("wipe", {"a": 1, "b": 2}))
    assert out["blocked"] is True and "Do not retry" in out["error"]


# -- audit of issue 2: gaps found and closed ---------------------------------------------------------

def test_a_bad_keyword_value_names_the_tool(fresh_registry):
    schema = {"parameters": {"type": "object", "properties": {"a": {"type": "string", "minLength": "x"}}}}
    with pytest.raises(ValueError, match=r"^tool 'bad': schema keyword 'minLength' must be a number"):
        fresh_registry.register("bad", "t", schema, print)


def test_handler_flagged_async_that_returns_a_plain_value(fresh_registry):
    fresh_registry.register("plain", "t", {"parameters": {"type": "object"}}, lambda a, **kw: "ok", is_async=True)
    assert fresh_registry.dispatch("plain", {}) == "ok"
    assert asyncio.run(fresh_registry.dispatch_async("plain", {})) == "ok"


def test_equal_bound_method_checks_run_once_and_unhashable_checks_work(fresh_registry):
    calls = []

    class Probe:
        def ready(self) -> bool:
            calls.append(1)
            return True

    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self) -> bool:
            return False

    probe = Probe()
    for i in range(3):  # each attribute access makes a new (equal) bound method
        fresh_registry.register(f"p{i}", "t", SCHEMA, add_handler, check_fn=probe.ready)
    fresh_registry.register("u", "t", SCHEMA, add_handler, check_fn=Unhashable())
    names = [d["function"]["name"] for d in fresh_registry.get_definitions(["u", "p2", "p0", "p1", "p0"])]
    assert names == ["p0", "p1", "p2"] and len(calls) == 1


def test_hermes_register_keywords_dynamic_schema_overrides(fresh_registry):
    limits = {"n": 3}
    entry = fresh_registry.register(
        name="delegate", toolset="t", schema=SCHEMA, handler=add_handler, check_fn=None, requires_env=[],
        is_async=False, description="", emoji="", max_result_size_chars=None,
        dynamic_schema_overrides=lambda: {"description": f"up to {limits['n']} tasks", "name": "ignored"},
    )
    assert entry.dynamic_schema_overrides is not None
    [d] = fresh_registry.get_definitions(["delegate"])
    assert d["function"]["description"] == "up to 3 tasks" and d["function"]["name"] == "delegate"
    limits["n"] = 5
    assert fresh_registry.get_definitions(["delegate"])[0]["function"]["description"] == "up to 5 tasks"
    assert entry.schema["description"] == "Add two integers."  # the stored schema is untouched

    def broken():
        raise RuntimeError("config unreadable")

    fresh_registry.register("delegate", "t", SCHEMA, add_handler, dynamic_schema_overrides=broken)
    assert fresh_registry.get_definitions(["delegate"])[0]["function"]["description"] == "Add two integers."


def test_hermes_query_methods(fresh_registry, monkeypatch):
    monkeypatch.delenv("HERMES_NB_TEST_KEY", raising=False)
    fresh_registry.register("add", "math", SCHEMA, add_handler, emoji="➕", max_result_size_chars=10)
    fresh_registry.register("web", "web", SCHEMA, add_handler, requires_env=["HERMES_NB_TEST_KEY"])
    r = fresh_registry
    assert r.get_schema("add") is r.get_entry("add").schema and r.get_schema("nope") is None
    assert r.get_emoji("add") == "➕" and r.get_emoji("web") == "⚡" and r.get_emoji("web", "") == ""
    assert r.get_max_result_size("add") == 10 and r.get_max_result_size("web") == 100_000
    assert r.get_max_result_size("web", 7) == 7
    assert r.get_tool_to_toolset_map() == {"add": "math", "web": "web"}
    assert r.get_registered_toolset_names() == ["math", "web"]
    assert [e.name for e in r.get_all_entries()] == ["add", "web"]
    assert r.is_toolset_available("math") and not r.is_toolset_available("web")
    assert r.check_toolset_requirements() == {"math": True, "web": False}
    assert r.get_available_toolsets()["web"] == {
        "available": False, "tools": ["web"], "description": "", "requirements": ["HERMES_NB_TEST_KEY"]}
    req = r.get_toolset_requirements()["web"]
    assert req["env_vars"] == ["HERMES_NB_TEST_KEY"] and req["tools"] == ["web"] and req["check_fn"] is None
    assert r.check_tool_availability(quiet=True) == (
        ["math"], [{"name": "web", "env_vars": ["HERMES_NB_TEST_KEY"], "tools": ["web"]}])


def test_hermes_module_names_import_from_tools_registry(tmp_path):
    from hermes_nb.tools.registry import (  # noqa: F401  (what Hermes tool files and model_tools import)
        discover_builtin_tools,
        invalidate_check_fn_cache,
        no_cache_check_fn,
        registry,
        tool_error,
        tool_result,
    )

    @no_cache_check_fn
    def check() -> bool:
        return True

    assert check() is True and invalidate_check_fn_cache() is None
    assert discover_builtin_tools(tmp_path) == []


def test_a_tool_calling_sys_exit_is_an_error_result_not_an_exit(reg):
    import sys

    reg.register("quitter", "ts", SCHEMA, lambda a, **k: sys.exit(3))

    async def aquit(args, **kw):
        sys.exit("bye")

    reg.register("aquitter", "ts", SCHEMA, aquit)
    assert err(reg.dispatch("quitter", {"a": 1, "b": 2})) == "Tool execution failed: SystemExit: 3"
    assert err(reg.dispatch("aquitter", {"a": 1, "b": 2})) == "Tool execution failed: SystemExit: bye"
    assert err(asyncio.run(reg.dispatch_async("quitter", {"a": 1, "b": 2}))) == "Tool execution failed: SystemExit: 3"
    # the shared background loop survived both
    assert reg.dispatch("aquitter", {"a": 1, "b": 2}).startswith('{"error"')
    from hermes_nb.tools import async_bridge

    assert async_bridge.get_loop().is_running()


def test_snapshot_and_restore_undo_adds_replacements_and_removals(fresh_registry) -> None:
    schema = {"description": "d", "parameters": {"type": "object", "properties": {}}}
    fresh_registry.register("keep", "a", schema, lambda args, **kw: "k")
    fresh_registry.register("gone", "a", schema, lambda args, **kw: "g")
    snap = fresh_registry.snapshot()
    heard: list[tuple[str, str]] = []
    fresh_registry.add_listener(lambda event, name: heard.append((event, name)))
    fresh_registry.deregister("gone")
    fresh_registry.register("keep", "a", schema, lambda args, **kw: "changed")
    fresh_registry.register("new", "b", schema, lambda args, **kw: "n")
    heard.clear()
    fresh_registry.restore(snap)
    assert fresh_registry.snapshot() == snap
    assert fresh_registry.get_toolsets() == {"a": ["gone", "keep"]}
    assert fresh_registry.dispatch("keep", {}) == "k"
    assert sorted(heard) == [("deregister", "new"), ("register", "gone"), ("update", "keep")]


def test_definitions_and_unavailable_come_from_one_availability_computation(
        fresh_registry: ToolRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 15: availability was computed in two places with two caches; now one. Every tool is either
    offered by get_definitions or listed by get_unavailable with its reason, never both or neither, and a
    check shared by several tools runs once per pass in each."""
    runs: list[str] = []

    def shared() -> bool:
        runs.append("shared")
        return False

    def raising() -> bool:
        runs.append("raising")
        raise RuntimeError("no backend")

    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self) -> bool:
            runs.append("unhashable")
            return True

    monkeypatch.delenv("HNB_MISSING_VAR", raising=False)
    specs: dict[str, dict[str, object]] = {
        "plain": {}, "shared_a": {"check_fn": shared}, "shared_b": {"check_fn": shared},
        "raises": {"check_fn": raising}, "odd": {"check_fn": Unhashable()},
        "needs_env": {"requires_env": ["HNB_MISSING_VAR"]}, "off": {"disabled_reason": "broken"},
    }
    for name, extra in specs.items():
        fresh_registry.register(name, "t", SCHEMA, add_handler, **extra)  # type: ignore[arg-type]
    offered = {d["function"]["name"] for d in fresh_registry.get_definitions(list(specs))}
    assert sorted(runs) == ["raising", "shared", "unhashable"]
    runs.clear()
    unavailable = fresh_registry.get_unavailable()
    assert sorted(runs) == ["raising", "shared", "unhashable"]
    assert offered == {"plain", "odd"} and offered.isdisjoint(unavailable) and offered | set(unavailable) == set(specs)
    assert "RuntimeError: no backend" in unavailable["raises"].reason
    assert unavailable["needs_env"].missing_env == ("HNB_MISSING_VAR",)
    assert all(fresh_registry.availability(n).available == (n in offered) for n in specs)
