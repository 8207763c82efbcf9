"""``%mcp serve --bridge``: two tools whose own list never changes, for MCP clients that read the tool
list once and ignore ``notifications/tools/list_changed`` (most do: Claude Code, Codex, Kiro).

``notebook_tools`` answers with the tools served now (name, description, input schema), computed per call
from the same ``ToolView`` as the direct list; ``notebook_call`` names one of them and its arguments, and
is then served exactly as a direct call of that tool (``ServedApp._call_tool``): the name is checked
against the served selection, the call goes through the agent's batch (the gate, the approval prompt
naming the client, the result budget), and the panel shows the tool's own name. So a tool defined after
the client connected is found and called, and nothing outside the selection is reached either way.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

__all__ = ["BRIDGE_TOOLS", "NOTEBOOK_CALL", "NOTEBOOK_TOOLS", "bridge_tools", "listing", "parse_call"]

NOTEBOOK_TOOLS = "notebook_tools"
NOTEBOOK_CALL = "notebook_call"
BRIDGE_TOOLS = frozenset({NOTEBOOK_TOOLS, NOTEBOOK_CALL})


def bridge_tools() -> list[types.Tool]:
    """The two bridge tools as the client lists them."""
    return [
        types.Tool(
            name=NOTEBOOK_TOOLS,
            description=("The notebook's tools served right now, with their input schemas: tools can be added "
                         "while you are connected, so look here for one your tool list lacks, then run it "
                         "with notebook_call."),
            input_schema={"type": "object", "properties": {}},
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        types.Tool(
            name=NOTEBOOK_CALL,
            description=("Run one of the notebook's tools by name (as notebook_tools lists them), with "
                         "arguments matching its input schema. It runs as a direct call would, approval included."),
            input_schema={"type": "object", "properties": {
                "name": {"type": "string", "description": "The tool's exact name."},
                "arguments": {"type": "object", "description": "Arguments matching its input schema."},
            }, "required": ["name"]},
        ),
    ]


def listing(definitions: list[dict[str, Any]]) -> str:
    """``notebook_tools``'s answer: ``{"tools": [{"name", "description", "input_schema"}]}``."""
    tools = [{"name": d["function"]["name"], "description": d["function"].get("description") or "",
              "input_schema": d["function"].get("parameters") or {"type": "object", "properties": {}}}
             for d in definitions if d["function"]["name"] not in BRIDGE_TOOLS]
    return json.dumps({"tools": tools}, ensure_ascii=False)


def parse_call(arguments: Any) -> tuple[str, dict[str, Any]] | str:
    """``notebook_call``'s arguments as ``(name, arguments)``, or what is wrong with them."""
    if not isinstance(arguments, dict):
        return "notebook_call takes an object with 'name' and 'arguments'"
    name, args = arguments.get("name"), arguments.get("arguments")
    if not isinstance(name, str) or not name.strip():
        return "notebook_call needs 'name': a tool's exact name from notebook_tools"
    if name.strip() in BRIDGE_TOOLS:
        return f"notebook_call cannot run {name.strip()!r}; call it directly"
    if args is None:
        args = {}
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError as exc:
            return f"notebook_call 'arguments' is not valid JSON: {exc}"
    if not isinstance(args, dict):
        return "notebook_call 'arguments' must be an object"
    return name.strip(), args
