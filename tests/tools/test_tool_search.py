"""Tool search (``hermes_nb.tools.search``): what is deferred, the assembly, BM25 ranking, and the bridge
tools through a real batch (the gate, rules and hooks see the real tool; the catalog is the run's only)."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import pytest

from hermes_nb.tools.batch.scheduling import arun_tool_batch, run_tool_batch
from hermes_nb.tools.config import save_config
from hermes_nb.tools.model_tools import assemble_tool_definitions, get_tool_definitions
from hermes_nb.tools.registry import registry
from hermes_nb.tools.safety.approvals.gate import use_approver
from hermes_nb.tools.search import index
from hermes_nb.tools.search.assembly import render_listing
from hermes_nb.tools.search.catalog import BRIDGE_NAMES, make_catalog
from hermes_nb.tools.search.scope import unwrap_calls, use_catalog
from hermes_nb.tools.search.settings import context_window, load_settings, parse_settings

OBJ = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
       "required": ["city"]}


def _tool(name: str, toolset: str, description: str, *, calls: list[Any] | None = None, **kw: Any) -> None:
    def handler(args: dict[str, Any], **_: Any) -> dict[str, Any]:
        if calls is not None:
            calls.append((name, args))
        return {"tool": name, "args": args}

    registry.register(name, toolset, {"description": description, "parameters": OBJ}, handler, **kw)


@pytest.fixture
def deferred() -> list[Any]:
    """Toolset ``weather`` (deferred by its mark), ``forecasts`` (deferred by config), ``plain`` (direct),
    and ``secret`` (deferred, but not among the enabled toolsets of the runs below)."""
    calls: list[Any] = []
    _tool("weather_now", "weather", "Current weather conditions in a city.", calls=calls,
          metadata={"defer": True}, read_only=True)
    _tool("weather_alerts", "weather", "Severe weather alerts for a region.", calls=calls,
          metadata={"defer": True}, read_only=True)
    _tool("forecast_days", "forecasts", "Daily forecast for the coming days.", calls=calls)
    _tool("plain_echo", "plain", "Echo the city back.", calls=calls)
    _tool("secret_vault", "secret", "Open the vault in a city.", calls=calls, metadata={"defer": True})
    save_config({"tool_search": {"enabled": "on", "defer": ["forecasts"]}})
    return calls


def _names(defs: list[dict[str, Any]]) -> list[str]:
    return sorted(d["function"]["name"] for d in defs)


def _call(name: str, arguments: Any, call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}}


def _bridge_call(name: str, arguments: Any, call_id: str = "c1") -> dict[str, Any]:
    return _call("tool_call", {"calls": [{"name": name, "arguments": arguments}]}, call_id)


RUN = ["weather", "forecasts", "plain"]


# -- settings -------------------------------------------------------------------------------------


def test_settings_defaults_values_and_typos(caplog: pytest.LogCaptureFixture) -> None:
    assert load_settings().enabled == "auto" and load_settings().threshold_pct == 5.0  # no config.yaml
    s = parse_settings({"tool_search": {"enabled": "on", "threshold_pct": 2, "defer": "notebook", "pin": "x"},
                        "mcp_servers": {"time": {"command": "x", "defer": False}, "docs": {"url": "http://x"}},
                        "mcpServers": {"gh": {"command": "y", "defer": True}}})
    assert (s.enabled, s.threshold_pct, s.defer, s.pin, s.pinned_servers) == (
        "on", 2.0, frozenset({"notebook"}), frozenset({"x"}), frozenset({"time"}))
    with caplog.at_level(logging.WARNING):
        bad = parse_settings({"tool_search": {"enabled": "sometimes", "threshold_pct": "five"},
                              "mcp_servers": {"x": {"defer": "yes"}}})
    assert (bad.enabled, bad.threshold_pct, bad.pinned_servers) == ("auto", 5.0, frozenset())
    text = caplog.text
    assert "tool_search.enabled must be auto, on or off, got 'sometimes'" in text
    assert "threshold_pct" in text and "defer must be true or false" in text
    assert parse_settings({"tool_search": False}).enabled == "off"


WHERE = [
    ({"tools": {"tool_search": {"enabled": "off", "pin": ["a"]}}}, ("off", {"a"}), "Hermes's place"),
    ({"tool_search": {"enabled": "off", "pin": ["a"]}}, ("off", {"a"}), "the old top-level place, an alias"),
    ({"tools": {"tool_search": False}}, ("off", set()), "a bare false in Hermes's place"),
    ({"tools": {"tool_search": {"enabled": "No"}}}, ("off", set()), "Hermes's spelling 'no'"),
    ({"tools": {"tool_search": {"enabled": " TRUE "}}}, ("on", set()), "Hermes's spelling 'true', any case"),
    ({"tools": {"tool_search": {"enabled": "on"}}, "tool_search": {"enabled": "off", "pin": ["b"]}},
     ("on", set()), "both given: tools.tool_search wins whole (no key of the old block is merged in)"),
    ({"tools": {"budget": {}}, "tool_search": {"enabled": "off"}}, ("off", set()),
     "a tools: block without tool_search leaves the old place in charge"),
    ({"tools": ["not", "a", "mapping"], "tool_search": {"enabled": "off"}}, ("off", set()),
     "a tools: that is not a mapping is not ours to judge"),
]


@pytest.mark.parametrize(("config", "expected", "reason"), WHERE, ids=[r[2] for r in WHERE])
def test_settings_are_read_from_tools_tool_search_with_the_old_place_as_an_alias(
        config: dict[str, Any], expected: tuple[str, set[str]], reason: str) -> None:
    s = parse_settings(config)
    assert (s.enabled, s.pin) == expected, reason


def test_both_places_given_say_which_wins_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        parse_settings({"tools": {"tool_search": {"enabled": "on"}}, "tool_search": {"enabled": "off"}})
    [record] = caplog.records
    assert "\n" not in record.getMessage()
    assert record.getMessage() == ("config.yaml gives both tools.tool_search and tool_search (its old place): "
                                   "using tools.tool_search, ignoring tool_search")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        parse_settings({"tools": {"tool_search": {"threshold_pct": "x", "pin": 3}}})
    assert [r.getMessage().split(" must ")[0] for r in caplog.records] == [
        "config.yaml tools.tool_search.threshold_pct", "config.yaml tools.tool_search.pin"]  # named where it is


def test_the_settings_in_tools_tool_search_reach_a_turn() -> None:
    """config.yaml's ``tools.tool_search`` (not only the top-level block) decides what a turn offers."""
    _tool("plug_a", "plug", "A plugin tool.", source="plugin")
    save_config({"tools": {"tool_search": {"enabled": "off"}}})
    assert assemble_tool_definitions(["plug"]).catalog is None
    save_config({"tools": {"tool_search": {"enabled": "on"}}})
    on = assemble_tool_definitions(["plug"])
    assert on.catalog is not None and "plug_a" in on.catalog
    save_config({"tools": {"tool_search": {"enabled": "on", "pin": ["plug"]}}, "tool_search": {"enabled": "off"}})
    assert _names(assemble_tool_definitions(["plug"]).definitions) == ["plug_a"]


def test_an_mcp_servers_defer_flag_is_parsed_strictly() -> None:
    from hermes_nb.tools.errors import ConfigError
    from hermes_nb.tools.mcp_client.config import parse_server

    assert parse_server("t", {"command": "c", "defer": True}).defer is True
    assert parse_server("t", {"command": "c"}).defer is False
    with pytest.raises(ConfigError, match="'defer' must be true or false"):
        parse_server("t", {"command": "c", "defer": "yes"})


def test_context_windows_from_the_table_and_128k_when_unknown() -> None:
    assert context_window("gpt-4o-mini") == 128_000
    assert context_window("gpt-4") == 8_192 and context_window("gpt-4.1-nano") == 1_047_576  # longest prefix
    assert context_window("openrouter/anthropic/claude-3.5-sonnet") == 200_000  # after the provider part
    assert context_window("SmolLM2-135M-Instruct") == 8_192
    assert context_window("my-own-model") == context_window(None) == 128_000


# -- what is deferred, and the assembly ----------------------------------------------------------


def test_tool_search_on_replaces_the_deferred_schemas_with_the_bridge(deferred: list[Any]) -> None:
    a = assemble_tool_definitions(RUN, model="gpt-4o")
    assert _names(a.definitions) == ["plain_echo", "tool_call", "tool_describe", "tool_search"]
    assert a.catalog is not None
    assert sorted(e.name for e in a.catalog.entries) == ["forecast_days", "weather_alerts", "weather_now"]
    assert "secret_vault" not in a.catalog  # the catalog is exactly the run's enabled toolsets
    for name in ("weather_now", "weather_alerts", "forecast_days"):
        assert f"- {name}: " in a.listing
    assert "secret_vault" not in a.listing
    disabled = assemble_tool_definitions(RUN, ["forecasts"], model="gpt-4o")
    assert disabled.catalog is not None and "forecast_days" not in disabled.catalog


def _entry(name: str = "t", toolset: str = "ts", source: str = "plugin", **kw: Any) -> Any:
    from hermes_nb.tools.calls.entry import ToolEntry

    return ToolEntry(name=name, toolset=toolset, schema={"description": "d", "parameters": OBJ},
                     handler=lambda a, **k: "ok", source=source, **kw)


S = parse_settings  # a row's settings, from the config it quotes
MCP = {"server": "github"}
DEFERRABLE = [
    # by source: what a tool is, not a list of names
    (_entry(source="plugin"), {}, True, "a plugin's tool, unmarked"),
    (_entry(source="mcp", toolset="mcp-github", metadata=MCP), {}, True, "an MCP server's tool, unmarked"),
    (_entry(source="mcp", toolset="mcp-github", metadata={**MCP, "defer": False}), {}, True,
     "an MCP tool registered with defer false (the server config's default) is still an MCP tool"),
    (_entry(source="builtin"), {}, False, "a built-in, unmarked"),
    (_entry(source="notebook"), {}, False, "a notebook's own tool, unmarked"),
    (_entry(source="hermes"), {}, False, "a Hermes built-in, unmarked"),
    # marked
    (_entry(source="notebook", metadata={"defer": True}), {}, True, "%%tool --defer"),
    (_entry(source="builtin"), {"tools": {"tool_search": {"defer": ["ts"]}}}, True, "its toolset in defer"),
    (_entry(source="hermes", name="big"), {"tools": {"tool_search": {"defer": ["big"]}}}, True, "its name in defer"),
    # pinned: a pin wins over every mark
    (_entry(source="plugin"), {"tools": {"tool_search": {"pin": ["t"]}}}, False, "a plugin tool pinned by name"),
    (_entry(source="plugin"), {"tools": {"tool_search": {"pin": ["ts"]}}}, False, "pinned by its toolset"),
    (_entry(source="plugin"), {"tool_search": {"pin": ["ts"]}}, False, "pinned in the old place"),
    (_entry(source="mcp", toolset="mcp-github", metadata=MCP), {"tools": {"tool_search": {"pin": ["mcp-github"]}}},
     False, "an MCP server's toolset pinned"),
    (_entry(source="mcp", toolset="mcp-github", metadata=MCP), {"mcp_servers": {"github": {"defer": False}}},
     False, "its server says defer: false"),
    (_entry(source="mcp", toolset="mcp-github", metadata={"server": "other"}),
     {"mcp_servers": {"github": {"defer": False}}}, True, "another server's defer: false pins nothing here"),
    (_entry(source="notebook", metadata={"defer": True}), {"tools": {"tool_search": {"pin": ["t"]}}}, False,
     "marked at registration and pinned: the pin wins"),
    (_entry(source="builtin"), {"tools": {"tool_search": {"defer": ["t"], "pin": ["ts"]}}}, False,
     "in defer by name and pinned by toolset: the pin wins"),
    (_entry(source="plugin", name="T"), {"tools": {"tool_search": {"pin": ["t"]}}}, True,
     "a pin names exactly (another case is another tool)"),
    # never, whatever the source or mark
    (_entry(source="plugin", interactive=True), {}, False, "an interactive plugin tool asks the person"),
    (_entry(source="plugin", toolset="clarify"), {}, False, "a plugin tool in toolset clarify"),
    (_entry(source="mcp", name="clarify", toolset="mcp-x", metadata={"server": "x"}), {}, False,
     "an MCP tool named clarify"),
    (_entry(source="plugin", name="tool_search"), {}, False, "a plugin tool under a bridge name"),
    (_entry(source="mcp", name="tool_call", toolset="mcp-x", metadata={"server": "x"}), {}, False,
     "an MCP tool under a bridge name"),
]


@pytest.mark.parametrize(("entry", "config", "expected", "reason"), DEFERRABLE, ids=[r[3] for r in DEFERRABLE])
def test_what_is_deferrable(entry: Any, config: dict[str, Any], expected: bool, reason: str) -> None:
    from hermes_nb.tools.search.catalog import is_deferrable

    assert is_deferrable(entry, S(config)) is expected, reason


@pytest.mark.parametrize("config", [{"tool_search": {"enabled": "on"}}, {"tools": {"tool_search": {"enabled": "on"}}}],
                         ids=["old place", "tools.tool_search"])
def test_tool_search_on_defers_two_thousand_unmarked_plugin_tools(config: dict[str, Any]) -> None:
    """The measured gap: ``tool_search: {enabled: on}`` with 2 001 plugin tools sent 2 001 schemas."""
    for i in range(2_001):
        _tool(f"plug_{i:04}", f"plugset_{i % 7}", f"Plugin tool number {i}.", source="plugin")
    _tool("plain_echo", "plain", "Echo the city back.")
    save_config(config)
    a = assemble_tool_definitions([*(f"plugset_{k}" for k in range(7)), "plain"], model="gpt-4o")
    assert _names(a.definitions) == ["plain_echo", "tool_call", "tool_describe", "tool_search"]
    assert a.catalog is not None and len(a.catalog) == 2_001


def test_auto_turns_on_when_unmarked_plugin_and_mcp_tools_pass_the_threshold() -> None:
    """``auto`` with nothing marked: a few small plugin/MCP tools stay direct, many pass the threshold and are
    deferred; a pinned toolset stays direct either way (and its schemas do not count towards the threshold)."""
    _tool("plug_small", "plug", "A small plugin tool.", source="plugin")
    _tool("mcp__gh__issue", "mcp-gh", "Open an issue.", source="mcp", metadata={"server": "gh"})
    _tool("kept_big", "kept", "Kept in sight. " * 2_000, source="plugin")
    save_config({"tools": {"tool_search": {"enabled": "auto", "pin": ["kept"]}}})
    run = ["plug", "mcp-gh", "kept"]
    few = assemble_tool_definitions(run, model="gpt-4o")
    assert few.catalog is None and _names(few.definitions) == ["kept_big", "mcp__gh__issue", "plug_small"]
    assert 0 < few.deferrable_tokens <= few.threshold_tokens == 6_400  # kept_big's ~8 000 tokens not counted
    for i in range(150):
        _tool(f"plug_many_{i}", "plug", f"Plugin tool {i} with a description long enough to weigh. " * 3,
              source="plugin")
    many = assemble_tool_definitions(run, model="gpt-4o")
    assert many.catalog is not None and many.deferrable_tokens > many.threshold_tokens
    assert {"plug_small", "mcp__gh__issue", "plug_many_7"} <= set(many.catalog.by_name)
    assert _names(many.definitions) == ["kept_big", "tool_call", "tool_describe", "tool_search"]


def test_off_and_nothing_marked_leave_every_tool_direct(deferred: list[Any]) -> None:
    save_config({"tool_search": {"enabled": "off", "defer": ["forecasts"]}})
    a = assemble_tool_definitions(RUN, model="gpt-4o")
    assert _names(a.definitions) == ["forecast_days", "plain_echo", "weather_alerts", "weather_now"]
    assert a.catalog is None and a.listing == ""
    save_config({"tool_search": {"enabled": "on"}})
    assert assemble_tool_definitions(["plain"]).catalog is None  # nothing deferrable: no bridge


def test_auto_defers_only_past_the_threshold_of_the_model_window(deferred: list[Any]) -> None:
    save_config({"tool_search": {"enabled": "auto", "threshold_pct": 5}})
    small = assemble_tool_definitions(RUN, model="gpt-4o")  # 5% of 128k: two small schemas stay direct
    assert small.catalog is None and "weather_now" in _names(small.definitions)
    assert 0 < small.deferrable_tokens <= small.threshold_tokens == 6_400
    long = "Tell the weather. " * 40
    for i in range(12):
        _tool(f"weather_extra_{i}", "weather", long, metadata={"defer": True})
    big = assemble_tool_definitions(RUN, model="gpt-4")  # 5% of 8 192 = 409 tokens, now passed
    assert big.catalog is not None and big.deferrable_tokens > big.threshold_tokens == 409
    assert "weather_extra_3" in big.catalog and "weather_extra_3" not in _names(big.definitions)
    assert assemble_tool_definitions(RUN, model="gpt-4o").catalog is None  # the same tools fit 128k's 5%


def test_clarify_interactive_and_bridge_names_are_never_deferred(deferred: list[Any]) -> None:
    _tool("ask_person", "plain", "Ask the person.", interactive=True, metadata={"defer": True})
    save_config({"tool_search": {"enabled": "on", "defer": ["clarify", "plain", "tool_search", "weather"]}})
    a = assemble_tool_definitions([*RUN, "clarify"], model="gpt-4o")
    assert a.catalog is not None
    assert {"clarify", "ask_person"} <= set(_names(a.definitions))
    assert "plain_echo" in a.catalog and not ({"clarify", "ask_person"} | BRIDGE_NAMES) & set(a.catalog.by_name)


def test_plain_definitions_never_offer_the_bridge(deferred: list[Any]) -> None:
    assert not BRIDGE_NAMES & set(_names(get_tool_definitions(None)))
    assert not BRIDGE_NAMES & set(_names(get_tool_definitions(["tool_search"])))
    assert assemble_tool_definitions(["tool_search"]).definitions == []


def test_a_tool_registered_later_is_in_the_next_turns_catalog(deferred: list[Any]) -> None:
    first = assemble_tool_definitions(RUN)
    assert assemble_tool_definitions(RUN).catalog is first.catalog  # nothing changed: the same plan
    _tool("weather_radar", "weather", "Rain radar map.", metadata={"defer": True})
    after = assemble_tool_definitions(RUN)
    assert after.catalog is not None and "weather_radar" in after.catalog
    registry.deregister("weather_radar")
    gone = assemble_tool_definitions(RUN).catalog
    assert gone is not None and "weather_radar" not in gone


def test_the_listing_keeps_within_its_token_cap() -> None:
    for i in range(300):
        _tool(f"many_tool_{i:03}", "many", f"Tool number {i} of many, with a description of some length.",
              metadata={"defer": True})
    catalog = make_catalog(registry.get_entry(f"many_tool_{i:03}") for i in range(300))
    full = render_listing(catalog, 100_000)
    assert full.count("\n- many_tool_") == 300 and "Tool number 7 of many" in full
    capped = render_listing(catalog, 500)
    assert len(capped) <= 500 * 4 and "more: tool_search finds them" in capped
    shown = capped.count("\n- many_tool_")
    assert 0 < shown < 300 and f"… and {300 - shown:,} more" in capped


# -- ranking --------------------------------------------------------------------------------------


def test_bm25_ranks_by_name_description_and_parameters(deferred: list[Any]) -> None:
    _tool("mcp__time__convert_time", "mcp-time", "Convert time between timezones.", metadata={"defer": True})
    _tool("mcp__everything__getTinyImage", "mcp-everything", "Returns the MCP logo.", metadata={"defer": True})
    catalog = make_catalog(e for e in registry.entries() if e.metadata.get("defer"))
    assert index.search(catalog, "convert timezones", 3)[0].name == "mcp__time__convert_time"  # stemmed
    assert index.search(catalog, "tiny image", 3)[0].name == "mcp__everything__getTinyImage"  # camelCase split
    assert index.search(catalog, "severe alerts", 3)[0].name == "weather_alerts"
    assert index.search(catalog, "weather_now", 3)[0].name == "weather_now"  # an exact name first
    index.search(catalog, "the of to", 3)  # only stop words: searched as they are, no crash
    for hostile in ('"', 'weather" OR "*', "NEAR(a b)", "-weather", "weather*", "x:y", "{}()^", "", "w " * 100_000):
        index.search(catalog, hostile, 5)  # no query text reaches FTS5's syntax
    found, missing = index.select(catalog, " weather_now , nope,weather_alerts")
    assert [e.name for e in found] == ["weather_now", "weather_alerts"] and missing == ["nope"]


# -- the bridge through a real batch --------------------------------------------------------------


def test_tool_search_and_describe_answer_from_the_runs_catalog_only(deferred: list[Any]) -> None:
    a = assemble_tool_definitions(RUN)
    calls = [_call("tool_search", {"queries": ["weather alerts", "vault", "select:forecast_days,secret_vault"]},
                   "s"),
             _call("tool_describe", {"names": ["weather_now", "secret_vault", "now"]}, "d")]
    with use_catalog(a.catalog):
        search, describe = run_tool_batch(calls)
    assert not search.is_error and not describe.is_error
    found = json.loads(search.content)
    assert found["total_available"] == 3
    alerts, vault, select = found["results"]
    assert alerts["matches"][0] == "weather_alerts"
    assert vault["matches"] == [] and "hint" in vault  # the vault is in the registry, not in this run
    assert select["matches"] == ["forecast_days"] and select["not_found"] == ["secret_vault"]
    assert "secret_vault" not in found["tools"] and found["tools"]["weather_alerts"]["required"] == ["city"]
    described = json.loads(describe.content)
    assert described["tools"]["weather_now"]["parameters"] == OBJ
    assert described["not_found"] == ["secret_vault", "now"] and "weather_now" in described["hint"]


def test_tool_call_unwraps_to_the_real_tool_before_the_gate_rules_and_hooks(deferred: list[Any]) -> None:
    seen_by_hook: list[str] = []

    class Hook:
        def before(self, entry: Any, args: dict[str, Any], context: Any) -> None:
            seen_by_hook.append(entry.name)

        def after(self, entry: Any, args: dict[str, Any], context: Any, result: str, **_: Any) -> str:
            return result

    undo = registry.add_call_hook(Hook())
    asked: list[str] = []
    save_config({"tool_search": {"enabled": "on", "defer": ["forecasts"]},
                 "approvals": {"tools": {"weather_alerts": "deny", "forecast_days": "ask"}}})
    try:
        a = assemble_tool_definitions(RUN)
        batch = [_bridge_call("weather_now", {"city": "Oslo"}, "a"),
                 _bridge_call("weather_alerts", {"city": "Oslo"}, "b"),
                 _bridge_call("forecast_days", {"city": "Oslo", "days": 2}, "c")]
        with use_catalog(a.catalog), use_approver(lambda command, key, description: asked.append(command) or "deny"):
            now, alerts, forecast = run_tool_batch(batch)
    finally:
        undo()
    assert (now.name, now.tool_call_id, now.is_error) == ("weather_now", "a", False)
    assert json.loads(now.content) == {"tool": "weather_now", "args": {"city": "Oslo"}}
    assert alerts.name == "weather_alerts" and alerts.is_error and "blocked" in alerts.content  # the deny rule
    assert forecast.name == "forecast_days" and forecast.is_error and asked and "forecast_days" in asked[0]
    assert seen_by_hook == ["weather_now"] and deferred == [("weather_now", {"city": "Oslo"})]


def test_unwrapped_read_only_calls_share_time_as_direct_ones_do(deferred: list[Any]) -> None:
    both = threading.Barrier(2, timeout=10)  # (a shared counter's += could lose one of the two arrivals)

    def meet(args: dict[str, Any], **_: Any) -> str:
        try:
            both.wait()
        except threading.BrokenBarrierError:
            return "alone"
        return "met"

    for name in ("meet_a", "meet_b"):
        registry.register(name, "weather", {"description": "Meet.", "parameters": OBJ}, meet, read_only=True,
                          metadata={"defer": True})
    a = assemble_tool_definitions(RUN)
    with use_catalog(a.catalog):
        results = run_tool_batch([_bridge_call("meet_a", {"city": "x"}, "1"),
                                  _bridge_call("meet_b", {"city": "y"}, "2")])
    assert [(r.name, r.content, r.parallel) for r in results] == [("meet_a", "met", True), ("meet_b", "met", True)]


@pytest.mark.parametrize(("arguments", "said"), [
    ({"calls": [{"name": "secret_vault", "arguments": {"city": "x"}}]}, "not deferred tools of this run"),
    ({"calls": [{"name": "plain_echo", "arguments": {"city": "x"}}]}, "called directly"),
    ({"calls": [{"name": "weather_now", "arguments": {}}, {"name": "weather_alerts", "arguments": {}}]},
     "one tool per call"),
    ({"calls": [{"name": "tool_search", "arguments": {}}]}, "cannot run 'tool_search'"),
    ('{"calls": [', "not valid JSON"),
    ({"calls": [{"name": "now", "arguments": {"city": "x"}}]}, "did you mean"),
])
def test_a_tool_call_that_cannot_be_unwrapped_runs_nothing_and_says_why(deferred: list[Any], arguments: Any,
                                                                        said: str) -> None:
    a = assemble_tool_definitions(RUN)
    with use_catalog(a.catalog):
        [result] = run_tool_batch([_call("tool_call", arguments, "x")])
    assert result.name == "tool_call" and result.is_error and said in result.content, result.content
    assert deferred == []


def test_without_a_runs_catalog_the_bridge_reaches_nothing(deferred: list[Any]) -> None:
    results = run_tool_batch([_bridge_call("weather_now", {"city": "x"}), _call("tool_search", {"queries": "x"}, "s")])
    assert all(r.is_error and "no deferred tools here" in r.content for r in results)
    assert deferred == []
    batch = [_bridge_call("weather_now", {"city": "x"})]
    assert unwrap_calls(batch) is batch


def test_arun_tool_batch_unwraps_in_the_awaiting_tasks_context(deferred: list[Any]) -> None:
    import asyncio

    async def go() -> Any:
        a = assemble_tool_definitions(RUN)
        with use_catalog(a.catalog):
            return await arun_tool_batch([_bridge_call("weather_now", {"city": "Rome"}),
                                          _call("tool_search", {"queries": ["alerts"]}, "s")])

    now, search = asyncio.run(go())
    assert now.name == "weather_now" and not now.is_error
    assert json.loads(search.content)["results"][0]["matches"] == ["weather_alerts"]


@pytest.mark.mcp
@pytest.mark.slow
def test_a_real_servers_tools_deferred_by_its_config_and_called_through_the_bridge(hermes_home: Any) -> None:
    """mcp-server-time with ``defer: true``: its tools leave the definitions, and a ``tool_call`` reaches the
    real server under the real tool's name."""
    import sys
    from pathlib import Path

    from hermes_nb.tools.mcp_tool import discover_mcp_tools, shutdown_mcp_servers

    servers = {"time": {"command": str(Path(sys.executable).parent / "mcp-server-time"),
                        "args": ["--local-timezone", "UTC"], "defer": True}}
    save_config({"tool_search": {"enabled": "on"}})  # the server added live (as %mcp add --defer does)
    try:
        assert discover_mcp_tools({"mcp_servers": servers})["time"]
        assert registry.get_entry("mcp__time__convert_time").metadata["defer"] is True
        a = assemble_tool_definitions(["mcp-time", "file"])
        assert a.catalog is not None and sorted(e.name for e in a.catalog.entries) == [
            "mcp__time__convert_time", "mcp__time__get_current_time"]
        assert not {"mcp__time__convert_time", "mcp__time__get_current_time"} & set(_names(a.definitions))
        with use_catalog(a.catalog):
            found, now = run_tool_batch([_call("tool_search", {"queries": ["current time timezone"]}, "s"),
                                         _bridge_call("mcp__time__get_current_time", {"timezone": "Asia/Tokyo"})])
        assert json.loads(found.content)["results"][0]["matches"][0] == "mcp__time__get_current_time"
        assert now.name == "mcp__time__get_current_time" and not now.is_error
        assert json.loads(now.content)["timezone"] == "Asia/Tokyo"
    finally:
        shutdown_mcp_servers()


def test_oversized_tool_call_arguments_are_refused_unparsed(deferred: list[Any]) -> None:
    save_config({"tool_search": {"enabled": "on", "defer": ["forecasts"]}, "budget": {"argument_chars": 70_000}})
    a = assemble_tool_definitions(RUN)
    huge = json.dumps({"calls": [{"name": "weather_now", "arguments": {"city": "x" * 80_000}}]})
    with use_catalog(a.catalog):
        assert unwrap_calls([_call("tool_call", huge, "h")])[0]["function"]["name"] == "tool_call"
        [result] = run_tool_batch([_call("tool_call", huge, "h")])
    assert result.name == "tool_call" and result.is_error and deferred == []


def test_the_listing_joins_the_system_prompt_or_leads_the_messages() -> None:
    from hermes_nb.tools.search.assembly import with_listing

    user = {"role": "user", "content": "hi"}
    history = [{"role": "system", "content": "Be brief."}, user]
    assert with_listing(history, "LIST") == [{"role": "system", "content": "Be brief.\n\nLIST"}, user]
    assert history[0]["content"] == "Be brief."  # the history itself is untouched
    assert with_listing([user], "LIST") == [{"role": "system", "content": "LIST"}, user]
    assert with_listing([user], "") == [user]
