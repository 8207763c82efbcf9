"""Built-in toolset ``delegation``: ``delegate_task`` runs sub-agents, one per task, and returns their summaries.

Hermes's arguments: ``goal``, ``context``, ``toolsets`` (a subset of the parent's: a child never gets a
toolset its parent was not offered), ``tasks: [{goal, context, toolsets, output_schema}]`` for several at once
(run concurrently, at most 3 at a time), ``role`` (``leaf``, or ``orchestrator`` for a child that may delegate
in its turn, two levels deep at most), plus ``output_schema``: a JSON schema the child's final answer must
match (one correction turn; the result says ``schema_valid``). Each child is a fresh conversation with its own
iteration and token budget and the parent's approver. The result is Hermes's: ``{"results": [{"task_index",
"status", "summary", "api_calls", "duration_seconds", "exit_reason", "tokens", "tool_trace"}], ...}``.
The work happens in the running agent (``hermes_nb.agent.delegation``), so the call is routed there.
"""

from __future__ import annotations

from hermes_nb.tools.agent_loop.routes import routed
from hermes_nb.tools.registry import registry

__all__ = ["DELEGATE_SCHEMA", "MAX_CONCURRENT_CHILDREN", "MAX_DEPTH"]

MAX_CONCURRENT_CHILDREN = 3
#: Levels below the agent the person runs: its children (1) and, from an orchestrator child, theirs (2).
MAX_DEPTH = 2

_TASK = {
    "type": "object",
    "properties": {
        "goal": {"type": "string", "description": "What this sub-agent should accomplish, self-contained."},
        "context": {"type": "string", "description": "Background it needs: paths, errors, constraints."},
        "toolsets": {"type": "array", "items": {"type": "string"},
                     "description": "Toolsets for this task (a subset of yours; default: yours)."},
        "output_schema": {"type": "object", "description": "JSON schema its final answer must match (optional)."},
        "role": {"type": "string", "enum": ["leaf", "orchestrator"]},
    },
    "required": ["goal"],
}

DELEGATE_SCHEMA = {
    "description": (
        "Hand work to sub-agents that run in their own fresh conversations, and get back one summary per "
        "task (final text, tool calls made, tokens, why it stopped). Give 'goal' (+ 'context', 'toolsets') "
        "for one task, or 'tasks' for several that run at once (at most 3 at a time). Sub-agents know "
        "nothing of this conversation: put everything they need in 'goal' and 'context'. Give "
        "'output_schema' when you need a structured answer. Sub-agents cannot ask the person questions, "
        "write memory, or delegate further (unless role='orchestrator')."),
    "parameters": {
        "type": "object",
        "properties": {
            "goal": _TASK["properties"]["goal"],
            "context": _TASK["properties"]["context"],
            "toolsets": _TASK["properties"]["toolsets"],
            "tasks": {"type": "array", "items": _TASK, "maxItems": 10,
                      "description": "Several tasks to run at once; when given, goal/context/toolsets are ignored."},
            "output_schema": _TASK["properties"]["output_schema"],
            "role": {"type": "string", "enum": ["leaf", "orchestrator"],
                     "description": "'leaf' (default) cannot delegate; 'orchestrator' may, one level further."},
            "max_iterations": {"type": "integer", "minimum": 1, "maximum": 50,
                               "description": "Model turns each sub-agent may take (default 10)."},
        },
        "required": [],
    },
}

registry.register(
    name="delegate_task",
    toolset="delegation",
    schema=DELEGATE_SCHEMA,
    handler=routed("delegate_task"),
    emoji="🔀",
)
