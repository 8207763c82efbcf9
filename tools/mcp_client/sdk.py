"""The installed MCP SDK, 1.x (1.26 or later) or 2.x, behind one small face.

hermes-agent[mcp] pins ``mcp==1.26.0`` and most projects still pin ``mcp<2``, so both majors must work.
They speak the same protocol and differ in spelling only:

- result and tool fields: 2.x attributes are snake_case (``input_schema``, ``is_error``,
  ``structured_content``, ``mime_type``, ``next_cursor``); 1.x attributes are the wire's camelCase;
- the request timeout: 2.x takes seconds as a float, 1.x a ``timedelta``;
- a failed request: 2.x raises ``MCPError`` with ``.code`` (timeout ``-32001``), 1.x ``McpError`` with
  ``.error.code`` (timeout 408, the HTTP status);
- notifications: 1.x hands the message handler a ``ServerNotification`` wrapper (``.root``), 2.x the
  notification itself.

Both have ``mcp.types`` and ``streamable_http_client(url, http_client=...)``. Everything else in
``hermes_nb.tools.mcp_client`` and ``mcp_tool`` reads the SDK through the functions here, and ``mcp``
is imported only when one of them is called.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.metadata import version
from typing import Any, Literal

__all__ = [
    "field",
    "is_tool_list_changed",
    "major",
    "request_failure",
    "streamable_http_client",
    "timeout",
    "tool_annotations",
]

CONNECTION_CLOSED = -32000  # the same in both majors
_TIMEOUT_CODES = frozenset({-32001, 408})  # 2.x REQUEST_TIMEOUT; 1.x reuses the HTTP status
_MISSING = object()


@cache
def major() -> int:
    """The installed SDK's major version (1 or 2)."""
    return int(version("mcp").split(".")[0])


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj``'s field by its snake_case name, read under either major's spelling."""
    value = getattr(obj, name, _MISSING)
    if value is _MISSING:
        value = getattr(obj, _camel(name), default)
    return value


def tool_annotations(tool: Any) -> dict[str, Any]:
    """A tool's annotations as a dict with snake_case keys (``read_only_hint``, ``destructive_hint``)."""
    ann = getattr(tool, "annotations", None)
    if ann is None:
        return {}
    return {_snake(key): value for key, value in ann.model_dump(exclude_none=True).items()}


def timeout(seconds: float) -> Any:
    """A per-request read timeout as ``ClientSession.call_tool`` of this major expects it."""
    if major() >= 2:
        return seconds
    from datetime import timedelta

    return timedelta(seconds=seconds)


def request_failure(exc: BaseException) -> Literal["closed", "timeout"] | None:
    """What an exception from a request means: the connection closed, the request timed out, or
    something else (None: not an SDK error, or an error the server sent)."""
    import anyio
    from mcp.shared import exceptions

    if isinstance(exc, (anyio.BrokenResourceError, anyio.ClosedResourceError)):
        return "closed"  # the request was written to a transport that had already broken
    error_class = getattr(exceptions, "MCPError", None) or getattr(exceptions, "McpError")  # noqa: B009
    if not isinstance(exc, error_class):
        return None
    code = getattr(exc, "code", None)
    if code is None:
        code = getattr(getattr(exc, "error", None), "code", None)
    if code == CONNECTION_CLOSED:
        return "closed"
    return "timeout" if code in _TIMEOUT_CODES else None


def is_tool_list_changed(message: Any) -> bool:
    """Whether a message handed to the session's message handler is ``notifications/tools/list_changed``."""
    from mcp import types

    return isinstance(getattr(message, "root", message), types.ToolListChangedNotification)


def streamable_http_client() -> Any:
    """The streamable HTTP transport factory, called as ``factory(url, http_client=client)``."""
    from mcp.client import streamable_http

    return streamable_http.streamable_http_client
