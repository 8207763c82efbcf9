"""The MCP SDK seam reads the installed major (this file also runs on mcp 1.x: tests/packaging)."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest

from hermes_nb.tools.mcp_client import sdk


def _error(code: int) -> Exception:
    """The installed SDK's exception for a failed request, as its session raises it."""
    from mcp import types
    from mcp.shared import exceptions

    if sdk.major() >= 2:
        return exceptions.MCPError(code, "failed")
    return exceptions.McpError(types.ErrorData(code=code, message="failed"))


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (SimpleNamespace(is_error=True), True),  # 2.x spelling
        (SimpleNamespace(isError=True), True),  # 1.x spelling
        (SimpleNamespace(), "absent"),  # neither: the default
    ],
)
def test_field_reads_either_spelling(obj, expected):
    assert sdk.field(obj, "is_error", "absent") == expected


def test_field_on_a_real_result_of_the_installed_sdk():
    from mcp import types

    result = types.CallToolResult(content=[], structuredContent={"a": 1}, isError=True)
    assert (sdk.field(result, "structured_content"), sdk.field(result, "is_error")) == ({"a": 1}, True)
    page = types.ListToolsResult(tools=[], nextCursor="next")
    assert sdk.field(page, "next_cursor") == "next"


def test_tool_annotations_have_snake_case_keys_in_both_majors():
    from mcp import types

    tool = types.Tool(
        name="t", inputSchema={"type": "object"}, annotations=types.ToolAnnotations(readOnlyHint=True, destructiveHint=False)
    )
    assert sdk.tool_annotations(tool) == {"read_only_hint": True, "destructive_hint": False}
    assert sdk.tool_annotations(SimpleNamespace(annotations=None)) == {}


def test_request_failures_are_classified_by_code():
    timeout_code = -32001 if sdk.major() >= 2 else 408
    assert sdk.request_failure(_error(-32000)) == "closed"
    assert sdk.request_failure(_error(timeout_code)) == "timeout"
    assert sdk.request_failure(_error(-32602)) is None  # the server's own error: not ours to reword
    assert sdk.request_failure(ValueError("not an SDK error")) is None
    import anyio

    assert sdk.request_failure(anyio.BrokenResourceError()) == "closed"  # written to a broken transport


def test_timeout_in_the_unit_the_session_expects():
    assert sdk.timeout(1.5) == (1.5 if sdk.major() >= 2 else timedelta(seconds=1.5))


def test_tool_list_changed_is_recognised_bare_or_wrapped():
    from mcp import types

    note = types.ToolListChangedNotification(method="notifications/tools/list_changed")
    assert sdk.is_tool_list_changed(note)
    assert sdk.is_tool_list_changed(SimpleNamespace(root=note))  # 1.x hands over a ServerNotification
    assert not sdk.is_tool_list_changed(ValueError("junk on stdout"))
