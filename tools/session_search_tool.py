"""Built-in toolset ``session_search``: search the messages of past runs (any kernel, any notebook).

Every run's messages are stored as it goes in ``$HERMES_NB_HOME/sessions.db`` (SQLite, FTS5); ``query``
takes FTS5 syntax (words are ANDed; ``OR``, ``"a phrase"``, ``prefix*``), ``limit`` the number of runs
(default 3, at most 10). Without a query it lists the latest runs. Hermes's result shape: ``{"success",
"mode", "query", "results": [{"session_id", "when", "notebook", "snippet", "messages", ...}], "count"}``.
The current run is left out (it is already in the conversation); calls are routed to the running agent.
"""

from __future__ import annotations

from hermes_nb.tools.agent_loop.routes import routed
from hermes_nb.tools.registry import registry

__all__ = ["SESSION_SEARCH_SCHEMA"]

SESSION_SEARCH_SCHEMA = {
    "description": (
        "Search what was said in past agent runs (earlier conversations, other notebooks and kernels): "
        "full-text search over their messages. Use it for 'what did we find about X', 'where did we leave "
        "Y'. Multi-word queries need all words; use OR for any, quotes for a phrase, word* for a prefix. "
        "Without a query, lists the latest runs."),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words or an FTS5 expression to find; omit to browse."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3,
                      "description": "How many runs to return (default 3)."},
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
