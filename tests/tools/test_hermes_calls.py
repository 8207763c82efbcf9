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
