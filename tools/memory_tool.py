"""Built-in toolset ``memory``: durable notes across runs and kernels, as Hermes keeps them.

``action`` add / replace / remove, ``target`` ``memory`` (the agent's own notes, ``MEMORY.md``) or ``user``
(about the person, ``USER.md``), ``content`` and ``old_text`` (a short unique part of the entry to change).
The files live under ``$HERMES_NB_HOME/memories/`` with Hermes's character limits; a write that would pass
a limit is refused with the current entries, so the model can make room. What the files hold is put in the
system prompt when a run starts (``hermes_nb.agent.memory_store``); calls are routed to the running agent.
"""

from __future__ import annotations

from hermes_nb.tools.agent_loop.routes import routed
from hermes_nb.tools.registry import registry

__all__ = ["MEMORY_SCHEMA"]

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
        },
        "required": ["action", "target"],
    },
}

registry.register(
    name="memory",
    toolset="memory",
    schema=MEMORY_SCHEMA,
    handler=routed("memory"),
    emoji="🧠",
)
