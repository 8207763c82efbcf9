"""Toolsets: the static table, registry-only toolsets, includes with cycles, and the model's view."""

from __future__ import annotations

import json

import pytest

from hermes_nb.tools import toolsets
from hermes_nb.tools.errors import UnknownToolsetError
from hermes_nb.tools.model_tools import check_tool_availability, get_tool_definitions, handle_function_call
from hermes_nb.tools.registry import registry

SCHEMA = {"description": "t", "parameters": {"type": "object", "properties": {}}}


@pytest.fixture
def custom():
    """Register a few notebook tools and remember to drop custom toolsets."""
    registry.register("nb_one", "nbset", SCHEMA, lambda a, **k: "one", source="notebook")
    registry.register("nb_two", "nbset", SCHEMA, lambda a, **k: "two", source="notebook")
    registry.register("geo_area", "geometry", SCHEMA, lambda a, **k: "area", source="notebook")
    made: list[str] = []
    yield made
    for name in made:
        toolsets.remove_custom_toolset(name)


def names(defs):
    return [d["function"]["name"] for d in defs]


def test_registry_only_toolsets_resolve(custom):
    assert toolsets.resolve_toolset("nbset") == ["nb_one", "nb_two"]
    assert toolsets.validate_toolset("nbset")
    assert not toolsets.validate_toolset("nbsett")


def test_all_and_star(custom):
    every = registry.get_all_tool_names()
    assert toolsets.resolve_toolset("all") == every == toolsets.resolve_toolset("*")


def test_includes_recursive_with_cycle(custom):
    custom += ["a_set", "b_set"]
    toolsets.create_custom_toolset("a_set", tools=["nb_one"], includes=["nbset"])
    toolsets.create_custom_toolset("b_set", tools=["geo_area"], includes=["a_set"])
    toolsets.TOOLSETS["a_set"]["includes"].append("b_set")  # make a cycle a -> b -> a
    assert toolsets.resolve_toolset("b_set") == ["geo_area", "nb_one", "nb_two"]
    assert toolsets.resolve_toolset("a_set") == ["geo_area", "nb_one", "nb_two"]


def test_create_custom_toolset_rejects_unknown_include(custom):
    with pytest.raises(UnknownToolsetError, match="nbsett"):
        toolsets.create_custom_toolset("bad", includes=["nbsett"])


def test_unknown_toolset_lists_known_ones(custom):
    with pytest.raises(UnknownToolsetError) as info:
        toolsets.resolve_toolset("geometri")
    assert "geometry" in str(info.value) and "nbset" in str(info.value)


def test_get_tool_definitions_enabled_and_disabled(custom):
    assert names(get_tool_definitions(["nbset"])) == ["nb_one", "nb_two"]
    assert names(get_tool_definitions(["nbset", "geometry"], ["geometry"])) == ["nb_one", "nb_two"]
    everything = names(get_tool_definitions())
    assert {"nb_one", "nb_two", "geo_area"} <= set(everything)
    assert "geo_area" not in names(get_tool_definitions(None, ["geometry"]))


def test_typo_in_enabled_toolsets_is_an_error_not_zero_tools(custom):
    with pytest.raises(UnknownToolsetError, match="known toolsets"):
        get_tool_definitions(["nbsett"])
    with pytest.raises(UnknownToolsetError):
        get_tool_definitions(None, ["geometri"])


def test_handle_function_call_passes_task_id(custom):
    registry.register("kw_tool", "nbset", SCHEMA, lambda a, **k: k, source="notebook")
    assert handle_function_call("kw_tool", "{}", task_id="abc") == '{"task_id": "abc", "session_id": null, "user_task": null}'
    assert "Unknown tool" in handle_function_call("nope", {})


def test_check_tool_availability_is_per_toolset_in_hermes_shape(custom, monkeypatch):
    monkeypatch.delenv("HNB_MISSING", raising=False)
    registry.register("needs_env", "keyed", SCHEMA, lambda a, **k: "", requires_env=["HNB_MISSING"], source="notebook")
    available, unavailable = check_tool_availability()
    assert "nbset" in available and "keyed" not in available
    assert {"name": "keyed", "env_vars": ["HNB_MISSING"], "tools": ["needs_env"]} in unavailable
    assert "HNB_MISSING" in registry.get_unavailable()["needs_env"].reason  # the per-tool reason


def test_a_single_toolset_name_as_a_string_is_that_toolset(custom):
    assert names(get_tool_definitions("nbset")) == ["nb_one", "nb_two"]
    assert names(get_tool_definitions(["nbset", "geometry"], "geometry")) == ["nb_one", "nb_two"]


def test_hermes_model_tools_names(custom):
    from hermes_nb.tools import model_tools
    from hermes_nb.tools.model_tools import (  # Hermes's model_tools public names
        TOOL_TO_TOOLSET_MAP,
        TOOLSET_REQUIREMENTS,
        check_toolset_requirements,
        get_all_tool_names,
        get_available_toolsets,
        get_toolset_for_tool,
    )

    assert TOOL_TO_TOOLSET_MAP["nb_one"] == "nbset" and TOOLSET_REQUIREMENTS["nbset"]["tools"] == ["nb_one", "nb_two"]
    registry.register("late", "later", SCHEMA, lambda a, **k: "", source="notebook")
    assert model_tools.TOOL_TO_TOOLSET_MAP["late"] == "later"  # computed on access: later tools are in it
    assert get_toolset_for_tool("geo_area") == "geometry" and "nb_two" in get_all_tool_names()
    assert check_toolset_requirements()["nbset"] is True and get_available_toolsets()["nbset"]["available"]
    assert "nbset" in check_tool_availability(quiet=True)[0]
    registry.register("kw_tool", "nbset", SCHEMA, lambda a, **k: k, source="notebook")
    # Hermes 0.19's positional order: name, args, task_id, tool_call_id, session_id, turn_id, api_request_id,
    # user_task; tool_call_id / turn_id / api_request_id are for hooks only
    got = handle_function_call("kw_tool", {}, "t1", "call-1", "s1", "turn", "req", "the task")
    assert json.loads(got) == {"task_id": "t1", "session_id": "s1", "user_task": "the task"}
