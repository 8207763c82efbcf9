"""Finding past runs: ``session_search``'s answer (Hermes's shape), and the ``sessions`` memory provider.

``search_runs`` turns the session store's matches into what the model reads: per run its id, when and
where it ran, the prompt, the best snippet and the messages around the first hit (each cut to 1 000
characters). ``SessionsProvider`` is the built-in example of a memory provider (``memory-sessions``): a
``recall`` tool over the same store, and a ``prefetch`` that recalls nothing unless asked (it is cheap to
keep it that way: the model decides when to search).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from hermes_nb.agent.session_store import SessionStoreError, session_store

__all__ = ["RECALL_SCHEMA", "SessionsProvider", "current_notebook", "search_runs"]

_CONTENT_CHARS = 1_000


def current_notebook() -> str:
    """The running notebook's path, when the kernel knows it (Jupyter sets ``JPY_SESSION_NAME``); runs are
    stored under it, and a search reads this notebook's runs unless asked for all."""
    path = os.environ.get("JPY_SESSION_NAME", "")
    if path:
        return path
    try:
        from IPython import get_ipython
    except ImportError:
        return ""
    ip = get_ipython()
    return str(ip.user_ns.get("__session__", "")) if ip is not None else ""


def _when(started: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(started)) if started else "unknown"


def search_runs(query: str, *, limit: int = 3, exclude_run: str | None = None, notebook: str | None = None,
                ended_only: bool = False) -> dict[str, Any]:
    """``session_search``'s result for ``query`` (the latest runs when it is empty): ``notebook``'s runs only
    (None: every notebook's), and with ``ended_only`` only runs that ended."""
    store = session_store()
    limit = max(1, min(int(limit), 10))
    try:
        if not query.strip():
            runs = store.recent(limit=limit, exclude_run=exclude_run, notebook=notebook, ended_only=ended_only)
            return {"success": True, "mode": "browse", "count": len(runs), "results": [
                {"session_id": r["run_id"], "when": _when(r["started"]), "notebook": r["notebook"],
                 "title": r["prompt"][:120], "message_count": r["messages"]} for r in runs]}
        runs = store.search(query, limit=limit, exclude_run=exclude_run, notebook=notebook, ended_only=ended_only)
        results = []
        for r in runs:
            first = r["hits"][0]
            window = store.messages(r["run_id"], around=first["id"], window=5)  # Hermes: ±5 messages
            results.append({
                "session_id": r["run_id"], "when": _when(r["started"]), "notebook": r["notebook"],
                "model": r["model"], "title": r["prompt"][:120], "matched_role": first["role"],
                "match_message_id": first["id"], "snippet": first.get("snippet", ""), "matches": r["matches"],
                "messages": [{"id": m.id, "role": m.role, "content": _cut(m.content),
                              **({"tool_name": m.tool_name} if m.tool_name else {})} for m in window],
            })
    except SessionStoreError as exc:
        return {"success": False, "error": str(exc)}
    out: dict[str, Any] = {"success": True, "mode": "discover", "query": query, "results": results,
                           "count": len(results)}
    if not results:
        out["message"] = "No matching runs found."
    return out


def _cut(text: str) -> str:
    return text if len(text) <= _CONTENT_CHARS else text[:_CONTENT_CHARS] + "…"


RECALL_SCHEMA = {
    "name": "recall",
    "description": "Recall what past agent runs said about something (full-text search of stored runs). "
                   "Returns the best matching snippets, newest knowledge first.",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "What to recall."},
                       "limit": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5}},
        "required": ["query"],
    },
}


class SessionsProvider:
    """The built-in memory provider: the session store as a ``recall`` tool."""

    name = "sessions"

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [RECALL_SCHEMA]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any]) -> str:
        found = search_runs(str(args.get("query") or ""), limit=int(args.get("limit") or 5), notebook=current_notebook())
        if not found.get("success"):
            return json.dumps(found)
        snippets = [{"session_id": r["session_id"], "when": r["when"], "snippet": r.get("snippet", "")}
                    for r in found["results"]]
        return json.dumps({"success": True, "query": args.get("query"), "recalled": snippets,
                           "count": len(snippets)}, ensure_ascii=False)

    def prefetch(self, query: str) -> str:
        return ""

    def sync(self, messages: list[dict[str, Any]]) -> None:
        """Nothing to do: the agent stores every run's messages as it goes."""
