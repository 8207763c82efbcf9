"""The agent-loop tools' registrations: ``todo`` (and ``todo_list``), ``memory``, ``session_search``, ``delegate_task``.

Hermes's names, arguments and result shapes, so a model prompted for Hermes works here. Each handler is
``routes.routed(name)``: the call goes to the running agent (``hermes_nb.agent.routes``), which has the
state these tools need; outside a run the extension's default route answers.

- ``todo``: the model's plan, ``todos: [{id, content, status}]`` and ``merge``; statuses ``pending``,
  ``in_progress``, ``completed``, ``cancelled``; without ``todos`` it reads the list. Hermes ``main`` names it
  ``todo_list``: both are registered (``todo_list`` in its own toolset, so a model is not offered it twice).
- ``memory``: ``action`` add / replace / remove, ``target`` ``memory`` (the agent's notes, ``MEMORY.md``) or
  ``user`` (``USER.md``), ``content``, ``old_text``, or Hermes main's ``operations`` (several at once, all or
  nothing); files under ``$HERMES_NB_HOME/memories/``.
- ``session_search``: Hermes's shapes: without arguments the latest runs; ``query`` (FTS5) with ``limit``, ``sort``
  and ``role_filter``; ``session_id`` reads one run, ``around_message_id`` + ``window`` scrolls inside it; over this
  notebook's stored runs, or every notebook's with ``scope="all"``; a sub-agent reads only runs that ended.
- ``delegate_task``: ``goal``, ``context``, ``tasks``, ``role``, ``output_schema`` and ``background`` (accepted; the
  answers come back in the same turn). ``toolsets`` and ``max_iterations`` are Hermes's hidden arguments: the model
  is not shown them, a call that gives them is still read. Sub-agents get a subset of the caller's toolsets, at most
  3 at a time, 2 levels deep.
"""

from __future__ import annotations

from typing import Any

from hermes_nb.tools.agent_loop.routes import routed
from hermes_nb.tools.registry import registry

__all__ = ["DELEGATE_SCHEMA", "MAX_CONCURRENT_CHILDREN", "MAX_DEPTH", "MEMORY_SCHEMA", "SESSION_SEARCH_SCHEMA",
           "STATUSES", "TODO_SCHEMA"]



# -- todo --------------------------------------------------------------------------------------------

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
                        "parent": {"type": "string",
                                   "description": "Optional id of another item, making this a nested subtask."},
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


# -- memory ------------------------------------------------------------------------------------------

MEMORY_SCHEMA = {
    "description": (
        "Save durable facts that should survive this conversation: the person's preferences and corrections, "
        "stable facts about their environment, conventions, lessons learned. What memory holds is in your "
        "system prompt at the start of every later run, so keep entries short. Targets: 'user' = who the "
        "person is; 'memory' = your own notes. When memory is full, an add is refused with the current "
        "entries: replace or remove stale ones, then add again. Skip trivia and temporary task state."),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["add", "replace", "remove"], "description": "What to do."},
            "target": {"type": "string", "enum": ["memory", "user"],
                       "description": "'memory' for your notes, 'user' for the person's profile."},
            "content": {"type": "string", "description": "The entry's text (add and replace)."},
            "old_text": {"type": "string",
                         "description": "A short unique part of the entry to change (replace and remove)."},
            "operations": {
                "type": "array", "maxItems": 50,
                "description": "Several changes at once, applied together or not at all; the limit is checked "
                               "on the result, so one call can make room and add. Omit action when using it.",
                "items": {"type": "object", "required": ["action"], "properties": {
                    "action": {"type": "string", "enum": ["add", "replace", "remove"]},
                    "content": {"type": "string"}, "old_text": {"type": "string"}}},
            },
        },
        "required": ["target"],
    },
}

registry.register(
    name="memory",
    toolset="memory",
    schema=MEMORY_SCHEMA,
    handler=routed("memory"),
    emoji="🧠",
)


# -- session_search ----------------------------------------------------------------------------------

SESSION_SEARCH_SCHEMA = {
    "description": (
        "Search what was said in past agent runs of this notebook (scope='all': of every notebook), or "
        "scroll inside one. Four shapes, by the arguments given: 1) query: full-text search; each result has "
        "session_id, title, when, snippet, match_message_id, the messages around the match (the anchor "
        "flagged), bookend_start / bookend_end (how the run began and ended), messages_before / "
        "messages_after. Multi-word queries need all words; use OR for any, quotes for a phrase, word* for a "
        "prefix. 2) session_id + around_message_id: a window of messages around that message (window each "
        "side); pass the first or last id back to scroll. 3) session_id alone: the run's messages (first 20 "
        "and last 10 when longer). 4) no arguments: the latest runs."),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words or an FTS5 expression to find; omit to browse."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3,
                      "description": "How many runs to return (default 3, max 10)."},
            "sort": {"type": "string", "enum": ["newest", "oldest"],
                     "description": "Search only: order the runs found by time instead of relevance."},
            "session_id": {"type": "string", "description": "A run to read, or to scroll inside with "
                                                            "around_message_id."},
            "around_message_id": {"type": "integer", "description": "The message to centre the window on."},
            "window": {"type": "integer", "default": 5,
                       "description": "Messages each side of around_message_id (1-20, default 5)."},
            "role_filter": {"type": "string", "description": "Comma-separated roles to search (default "
                                                             "'user,assistant'; add 'tool' for tool output)."},
            "profile": {"type": "string", "description": "Hermes's profile of another database; hermes_nb has "
                                                         "none, so leave it out."},
            "scope": {"type": "string", "enum": ["current", "all"], "default": "current",
                      "description": "'current' (default): this notebook's runs; 'all': every notebook's."},
        },
        "required": [],
    },
}

registry.register(
    name="session_search",
    toolset="session_search",
    schema=SESSION_SEARCH_SCHEMA,
    handler=routed("session_search"),
    emoji="🔍",
    read_only=True,
)


# -- delegate_task -----------------------------------------------------------------------------------

MAX_CONCURRENT_CHILDREN = 3
#: Levels below the agent the person runs: its children (1) and, from an orchestrator child, theirs (2).
MAX_DEPTH = 2

_TASK_FIELDS: dict[str, Any] = {
    "goal": {"type": "string", "description": "What this sub-agent should accomplish, self-contained."},
    "context": {"type": "string", "description": "Background it needs: paths, errors, constraints."},
    "output_schema": {"type": "object", "description": "JSON schema its final answer must match (optional)."},
    "role": {"type": "string", "enum": ["leaf", "orchestrator"]},
}
_TASK: dict[str, Any] = {"type": "object", "properties": _TASK_FIELDS, "required": ["goal"]}

#: As in Hermes 0.19.0, ``toolsets`` and ``max_iterations`` are not in the schema the model sees: the person
#: sets them (``delegate(run, {"toolsets": [...], "max_iterations": n}, ...)`` or a dispatch from Python still
#: passes them, checked: a subset of the parent's toolsets, at most 50 turns).
DELEGATE_SCHEMA = {
    "description": (
        "Hand work to sub-agents that run in their own fresh conversations, and get back one summary per "
        "task (final text, tool calls made, tokens, why it stopped). Give 'goal' (+ 'context') for one task, "
        "or 'tasks' for several that run at once (at most 3 at a time). Sub-agents know nothing of this "
        "conversation: put everything they need in 'goal' and 'context'. Give 'output_schema' when you need "
        "a structured answer. Sub-agents cannot ask the person questions, write memory, or delegate further "
        "(unless role='orchestrator')."),
    "parameters": {
        "type": "object",
        "properties": {
            "goal": _TASK_FIELDS["goal"],
            "context": _TASK_FIELDS["context"],
            "tasks": {"type": "array", "items": _TASK, "maxItems": 10,
                      "description": "Several tasks to run at once; when given, goal/context are ignored."},
            "output_schema": _TASK_FIELDS["output_schema"],
            "role": {"type": "string", "enum": ["leaf", "orchestrator"],
                     "description": "'leaf' (default) cannot delegate; 'orchestrator' may, one level further."},
            "background": {"type": "boolean",
                           "description": "Accepted for Hermes compatibility: the sub-agents' answers come back "
                                          "in this turn, under this call's card, either way."},
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
