"""Issue 25's call rows, from Hermes's ``tests/test_model_tools.py``, ``tests/tools/test_registry.py`` and
``tests/tools/test_approval.py`` behaviour (our own words): the multimodal envelope comes back as the dict
(C3); ``session_id`` / ``user_task`` / ``task_id`` are passed as ``None`` when the caller gave none (C4);
``check_dangerous_command(cmd, "local")`` gives a verdict.
"""

from __future__ import annotations

from typing import Any

import pytest

from hermes_nb.tools.approval import check_dangerous_command
from hermes_nb.tools.model_tools import handle_function_call
from hermes_nb.tools.registry import registry

PARTS = [{"type": "text", "text": "the screen"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]


def _register(name: str, handler: Any) -> None:
    registry.register(name, "calls", {"name": name, "description": "d", "parameters": {"type": "object", "properties": {}}},
                      handler)


# -- C3: the multimodal envelope is a dict at Hermes's boundary ---------------------------------------


def test_handle_function_call_returns_the_multimodal_envelope_as_a_dict():
    _register("screenshot", lambda args, **kw: {"_multimodal": True, "content": PARTS, "text_summary": "a screenshot"})
    result = handle_function_call("screenshot", {})
    assert isinstance(result, dict)
    assert result == {"_multimodal": True, "content": PARTS, "text_summary": "a screenshot"}


def test_plain_results_stay_strings():
    _register("plain", lambda args, **kw: {"n": 1})
    assert handle_function_call("plain", {}) == '{"n": 1}'


# -- C4: Hermes's context keywords, None when not given ------------------------------------------------


def test_context_keywords_reach_a_handler_as_none_when_the_caller_gave_none():
    seen: list[dict[str, Any]] = []
    _register("ctx_probe", lambda args, **kw: seen.append(kw) or "ok")
    assert handle_function_call("ctx_probe", {}) == "ok"
    assert seen[0]["session_id"] is None and seen[0]["user_task"] is None and seen[0]["task_id"] is None
    handle_function_call("ctx_probe", {}, task_id="t", session_id="s", user_task="u")
    assert {k: seen[1][k] for k in ("task_id", "session_id", "user_task")} == {"task_id": "t", "session_id": "s",
                                                                               "user_task": "u"}


def test_a_handler_gets_only_the_context_keywords_it_names():
    seen: list[Any] = []

    def named(args, session_id="unset"):
        seen.append(session_id)
        return "ok"

    _register("named_probe", named)
    _register("bare_probe", lambda args: "bare")
    assert handle_function_call("named_probe", {}) == "ok" and seen == [None]
    assert handle_function_call("bare_probe", {}) == "bare"  # a handler taking only the arguments still works


# -- check_dangerous_command with Hermes's signature ----------------------------------------------------


def test_hermes_signature_gives_a_verdict_not_a_refusal_nobody_gave():
    assert check_dangerous_command("ls -la", "local")["approved"] is True
    verdict = check_dangerous_command("rm -rf build", "local")
    assert verdict["approved"] is False
    assert "no one is available" in verdict["message"] and "denied" not in verdict["message"].lower()


@pytest.mark.parametrize("call", [
    lambda cb: check_dangerous_command("rm -rf build", "local", cb),
    lambda cb: check_dangerous_command("rm -rf build", "docker", approval_callback=cb, has_host_access=True),
    lambda cb: check_dangerous_command("rm -rf build", cb),  # hermes_nb's own order
], ids=["hermes-positional", "hermes-keywords", "hermes_nb"])
def test_the_callback_is_asked_in_either_order_and_no_backend_skips_the_check(call):
    asked: list[str] = []

    def person(subject: str, key: str, description: str) -> str:
        asked.append(subject)
        return "once"

    assert call(person)["approved"] is True
    assert asked == ["rm -rf build"]


# -- model_tools.coerce_tool_args (Hermes's name) --------------------------------------------------------


def test_coerce_tool_args_turns_strings_into_what_the_schema_wants_and_keeps_a_call_that_does_not_fit():
    from hermes_nb.tools.model_tools import coerce_tool_args

    registry.register("sized", "calls", {"name": "sized", "description": "d", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer"}, "deep": {"type": "boolean"}}, "required": ["n"]}},
        lambda args, **kw: "ok")
    assert coerce_tool_args("sized", {"n": "42", "deep": "true"}) == {"n": 42, "deep": True}
    assert coerce_tool_args("sized", {"n": "many"}) == {"n": "many"}  # cannot be coerced: the original stays
    assert coerce_tool_args("no_such_tool", {"n": "1"}) == {"n": "1"}



# -- registry.dispatch: the envelope as the dict too ----------------------------------------------------


def test_registry_dispatch_returns_the_multimodal_envelope_as_a_dict():
    _register("screenshot2", lambda args, **kw: {"_multimodal": True, "content": PARTS})
    result = registry.dispatch("screenshot2", {})
    assert isinstance(result, dict) and result["_multimodal"] is True and result["content"] == PARTS
    assert registry.execute("screenshot2", {}).content == "the screen"  # inside, the record keeps the text view


# -- Hermes main's names: renamed tools, register(..., scope=...) ---------------------------------------


def test_hermes_mains_new_tool_names_reach_the_tool_under_its_old_name():
    if registry.get_entry("process") is not None:  # the built-in (tools.process_tool): this test brings its own
        registry.deregister("process")
    _register("process", lambda args, **kw: "process answered")
    assert registry.dispatch("process_manage", {}) == "process answered"
    assert handle_function_call("process_manage", {}) == "process answered"
    assert "process_manage" not in registry.get_all_tool_names()  # the model is offered the registered name only
    _register("cronjob_manage", lambda args, **kw: "new name answered")
    assert registry.dispatch("cronjob", {}) == "new name answered"  # and the old name reaches the new one
    _register("process_manage", lambda args, **kw: "its own")
    assert registry.dispatch("process_manage", {}) == "its own"  # an alias never hides a registered tool
    registry.deregister("process")
    registry.deregister("process_manage")
    assert "Unknown tool" in registry.dispatch("process_manage", {})  # no process tool: no alias


def test_register_accepts_a_scope_and_doctor_says_a_foreign_one_is_not_kept_apart(hermes_home):
    from hermes_nb.tools.sources.load_report import clear_failures, failures

    schema = {"name": "scoped", "description": "d", "parameters": {"type": "object", "properties": {}}}
    registry.register("scoped", "calls", schema, lambda args, **kw: "ok", scope=str(hermes_home))
    assert registry.get_entry("scoped").metadata["hermes_scope"] == str(hermes_home)
    registry.register("scoped_other", "calls", {**schema, "name": "scoped_other"}, lambda args, **kw: "ok",
                      scope="/elsewhere/profiles/coder")
    assert registry.dispatch("scoped_other", {}, scope="/elsewhere/profiles/coder") == "ok"
    assert registry.get_entry("scoped_other", scope="/elsewhere/profiles/coder") is registry.get_entry("scoped_other")
    assert registry.deregister("scoped_other", scope="/elsewhere/profiles/coder") is not None
    said = [f.message for f in failures() if f.name.endswith("scoped_other/scope")]
    clear_failures("tool")
    assert said and "one registry" in said[0] and "/elsewhere/profiles/coder" in said[0]
    assert not [f for f in failures() if f.name.endswith("scoped/scope")]
