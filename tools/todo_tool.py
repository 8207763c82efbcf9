"""Built-in toolset ``todo``: the model's plan for a run, a checklist it writes and updates.

Hermes's tool: ``todos: [{id, content, status}]`` (statuses ``pending``, ``in_progress``, ``completed``,
``cancelled``) and ``merge`` (update by id instead of replacing the list); a call without ``todos``
reads the list. Every call returns the whole list and a summary of counts. The list belongs to the agent
that runs (``hermes_nb.agent.routes``), so it is routed there: it survives the agent's runs, is in
``result.todos`` and shows as one checklist in the transcript that updates in place. Hermes ``main``
names the tool ``todo_list``; both names are registered (``todo_list`` in its own toolset, so a model is
not offered the same tool twice).
"""

from __future__ import annotations

from hermes_nb.tools.agent_loop.routes import routed
from hermes_nb.tools.registry import registry

__all__ = ["STATUSES", "TODO_SCHEMA"]

STATUSES = ("pending", "in_progress", "completed", "cancelled")

TODO_SCHEMA = {
    "description": (
        "Plan multi-step work (3 or more steps) as a checklist, and keep it current. Call with no parameters "
        "to read the list. List order is priority; only one item in_progress at a time; mark an item "
        "completed only when the work is verified done; cancel what failed and add a revised item. "
        "Always returns the full current list."),
    "parameters": {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "Task items to write.",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "A short unique id you choose."},
                        "content": {"type": "string", "description": "Task description."},
                        "status": {"type": "string", "enum": list(STATUSES)},
                    },
                    "required": ["id", "content", "status"],
                },
            },
            "merge": {"type": "boolean", "default": False,
                      "description": "true: update existing items by id and add new ones; false (default): "
                                     "replace the entire list with a fresh plan."},
        },
        "required": [],
    },
}

for _name, _toolset in (("todo", "todo"), ("todo_list", "todo_list")):
    registry.register(
        name=_name,
        toolset=_toolset,
        schema=TODO_SCHEMA,
        handler=routed(_name),
        emoji="📋",
    )
