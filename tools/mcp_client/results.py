"""An MCP ``CallToolResult`` as the string the model receives, with images and resources kept aside.

Text blocks are joined; ``structured_content`` becomes JSON; an image, audio clip or embedded resource
becomes a placeholder such as ``[image: image/png, 1234 bytes, id=ab12cd34]`` and the bytes stay in a
small in-process LRU (``get_mcp_attachment(id)``) for display; ``is_error`` becomes an error result.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from hermes_nb.tools.mcp_client import sdk
from hermes_nb.tools.registry import tool_error

__all__ = ["MCPAttachment", "convert_result", "get_mcp_attachment"]

MAX_ATTACHMENTS = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPAttachment:
    """Binary or long content from an MCP result, kept for display rather than sent to the model."""

    id: str
    kind: str  # image / audio / resource
    mime_type: str
    data: bytes
    uri: str = ""
    server: str = ""
    tool: str = ""


_lock = threading.Lock()
_attachments: OrderedDict[str, MCPAttachment] = OrderedDict()


def get_mcp_attachment(attachment_id: str) -> MCPAttachment | None:
    """The attachment a placeholder's ``id=`` names, while it is among the most recent ones."""
    with _lock:
        return _attachments.get(attachment_id)


def _keep(kind: str, mime_type: str, data: bytes, *, uri: str = "", server: str, tool: str) -> str:
    attachment = MCPAttachment(
        id=secrets.token_hex(4), kind=kind, mime_type=mime_type, data=data, uri=uri, server=server, tool=tool
    )
    with _lock:
        _attachments[attachment.id] = attachment
        while len(_attachments) > MAX_ATTACHMENTS:
            _attachments.popitem(last=False)
    where = f", {uri}" if uri else ""
    return f"[{kind}: {mime_type}{where}, {len(data)} bytes, id={attachment.id}]"


def _b64(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return data.encode("utf-8", "replace")


def _block_text(block: Any, server: str, tool: str) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        mime = sdk.field(block, "mime_type") or "application/octet-stream"
        return _keep(kind, mime, _b64(block.data), server=server, tool=tool)
    if kind == "resource":
        res = block.resource
        uri, mime = str(res.uri), sdk.field(res, "mime_type") or ""
        if getattr(res, "text", None) is not None:
            # text resources are readable by the model; keep a copy for display as well
            label = _keep(
                "resource", mime or "text/plain", res.text.encode(), uri=uri, server=server, tool=tool
            )
            return f"{label}\n{res.text}"
        return _keep(
            "resource", mime or "application/octet-stream", _b64(res.blob), uri=uri, server=server, tool=tool
        )
    if kind == "resource_link":
        link_mime = sdk.field(block, "mime_type")
        return f"[resource link: {block.uri}" + (f" ({link_mime})" if link_mime else "") + "]"
    return f"[{kind or type(block).__name__} content]"


def convert_result(result: Any, *, server: str, tool: str) -> str:
    """The model's view of a ``CallToolResult``."""
    parts = [_block_text(block, server, tool) for block in (getattr(result, "content", None) or [])]
    text = "\n".join(p for p in parts if p)
    structured = sdk.field(result, "structured_content")
    if structured is not None:
        as_json = json.dumps(structured, ensure_ascii=False)
        # servers usually repeat the structured value as a text block; say it once
        if _is_wrapped_text(text, structured):
            pass  # {"result": "..."}: the SDK's wrapper around a plain return value
        elif not text or _same_json(text, structured):
            text = as_json
        else:
            text = f"{text}\n{as_json}"
    if sdk.field(result, "is_error", False):
        return tool_error(
            f"MCP tool {tool!r} on server {server!r} reported an error: {text or '(no message)'}"
        )
    return text


def _same_json(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False


def _is_wrapped_text(text: str, value: Any) -> bool:
    if not (isinstance(value, dict) and list(value) == ["result"]):
        return False
    inner = value["result"]
    return text == inner if isinstance(inner, str) else _same_json(text, inner)
