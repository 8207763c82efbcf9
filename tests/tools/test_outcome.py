"""One outcome inside (content, is_error, timing): dispatch, batches and the display read the flag, never the text.

The bug this guards: "is this an error?" was re-derived by parsing the result, so a tool that legitimately
returns ``{"error": null}`` showed and counted as failed.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from hermes_nb.tools.batch.scheduling import arun_tool_batch, run_tool_batch
from hermes_nb.tools.calls.outcome import Outcome, says_error, text_says_error
from hermes_nb.tools.registry import ToolRegistry
from hermes_nb.tools.safety.approvals.gate import use_approver

NO_ARGS = {"description": "test tool", "parameters": {"type": "object", "properties": {}}}

# (tool name, what its handler returns, is it an error?, why)
CASES: list[tuple[str, Any, bool, str]] = [
    ("null_dict", {"error": None, "rows": 3}, False, "a dict saying there is no error"),
    ("null_text", '{"error": null, "rows": 3}', False, "the same as JSON text"),
    ("empty_error", {"error": ""}, False, "an empty error is no error"),
    ("plain", "all good", False, "plain text"),
    ("mentions", '{"note": "no \\"error\\" here"}', False, "the word inside a value"),
    ("error_dict", {"error": "disk full"}, True, "Hermes's error shape, as a dict"),
    ("error_text", json.dumps({"error": "disk full"}), True, "Hermes's tool_error() text"),
    ("error_later", json.dumps({"success": False, "error": "no such file"}), True, "error not the first key"),
    ("unicode_error", json.dumps({"error": "ünïcode"}, ensure_ascii=False), True, "non-ASCII text takes the long path"),
]


def _registry() -> ToolRegistry:
    reg = ToolRegistry()
    for name, value, _, _ in CASES:
        reg.register(name, "t", NO_ARGS, lambda args, value=value, **kw: value)

    def boom(args: dict, **kw: Any) -> str:
        raise ValueError("nope")

    reg.register("boom", "t", NO_ARGS, boom)
    reg.register("asks", "t", NO_ARGS, lambda args, **kw: "ran", needs_approval=True)
    return reg


@pytest.mark.parametrize(("name", "value", "is_error", "why"), CASES, ids=[c[0] for c in CASES])
def test_execute_flags_errors_by_what_the_handler_returned(name: str, value: Any, is_error: bool, why: str) -> None:
    reg = _registry()
    outcome = reg.execute(name, {})
    assert isinstance(outcome, Outcome)
    assert outcome.is_error is is_error, why
    assert outcome.content == reg.dispatch(name, {})  # dispatch is the same call, as its Hermes string
    assert outcome.ended >= outcome.started and outcome.duration >= 0


@pytest.mark.parametrize(("name", "value", "is_error", "why"), CASES, ids=[c[0] for c in CASES])
def test_batches_count_errors_from_the_outcome(name: str, value: Any, is_error: bool, why: str) -> None:
    reg = _registry()
    call = {"id": "c1", "type": "function", "function": {"name": name, "arguments": "{}"}}
    [sync] = run_tool_batch([call], registry=reg)
    [on_loop] = asyncio.run(arun_tool_batch([call], registry=reg))
    assert sync.is_error is is_error and on_loop.is_error is is_error, why


def test_errors_made_inside_dispatch_are_flagged_without_parsing() -> None:
    reg = _registry()
    with use_approver(lambda subject, key, description: "deny"):
        cases = {"unknown": reg.execute("nope", {}), "invalid": reg.execute("plain", '{"x": '),
                 "raised": reg.execute("boom", {}), "denied": reg.execute("asks", {})}
    for why, outcome in cases.items():
        assert outcome.is_error, why
    assert "BLOCKED" in cases["denied"].content


def test_async_outcome_matches_sync() -> None:
    reg = _registry()
    for name, _, is_error, why in CASES:
        outcome = asyncio.run(reg.aexecute(name, {}))
        assert outcome.is_error is is_error, why


@pytest.mark.parametrize(("value", "expected"), [
    ({"error": None}, False), ({"error": "x"}, True), ({"error": False}, False), ({"errors": ["x"]}, False),
    (["error"], False), ("error", False),
])
def test_says_error(value: Any, expected: bool) -> None:
    assert says_error(value) is expected
    assert text_says_error(json.dumps(value)) is expected
