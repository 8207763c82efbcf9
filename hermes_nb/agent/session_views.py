"""``session_search``'s four calling shapes, as Hermes 0.19.0 answers them.

Hermes infers the shape from the arguments: ``session_id`` + ``around_message_id`` scrolls a window of
messages around one message (``window`` each side), ``session_id`` alone reads a run (its first 20 and last 10
messages when longer), ``query`` discovers runs by full-text search (``sort`` biases the order by time,
``role_filter`` picks which roles are searched; ``user,assistant`` by default, as in Hermes), and nothing at
all browses the latest runs. Discovery itself is ``hermes_nb.agent.recall.search_runs``; this module adds
Hermes's per-result keys (bookends, counts either side) and answers the other three shapes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from hermes_nb.agent.session_store import SessionStoreError, StoredMessage, session_store

__all__ = ["session_search"]

_HEAD, _TAIL = 20, 10
_BOOKEND = 3
_ROLES = frozenset({"user", "assistant", "tool", "system"})


def _when(started: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(started)) if started else "unknown"


def _shape(message: StoredMessage, anchor: int | None = None) -> dict[str, Any]:
    """One message as Hermes shows it: id, role, content, timestamp (+ tool_name, + anchor on the hit)."""
    out: dict[str, Any] = {"id": message.id, "role": message.role, "content": message.content,
                           "timestamp": message.time}
    if message.tool_name:
        out["tool_name"] = message.tool_name
    if anchor is not None and message.id == anchor:
        out["anchor"] = True
    return out


def _meta(run: dict[str, Any]) -> dict[str, Any]:
    return {"when": _when(run["started"]), "source": run["notebook"] or "notebook", "model": run["model"] or None,
            "title": run["prompt"][:120] or None}


def _window(messages: list[StoredMessage], anchor: int, window: int) -> tuple[list[StoredMessage], int, int]:
    """The messages ``window`` either side of ``anchor``, and how many lie before and after them."""
    at = next(i for i, m in enumerate(messages) if m.id == anchor)
    lo, hi = max(0, at - window), min(len(messages), at + window + 1)
    return messages[lo:hi], lo, len(messages) - hi


def _roles(role_filter: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    if not role_filter:
        return default
    roles = tuple(r.strip() for r in str(role_filter).split(",") if r.strip())
    unknown = [r for r in roles if r not in _ROLES]
    if unknown or not roles:
        raise ValueError(f"role_filter {role_filter!r}: give comma-separated roles from "
                         f"{', '.join(sorted(_ROLES))}")
    return roles


@dataclass(frozen=True, slots=True, kw_only=True)
class Reach:
    """Which runs a call may see: ``notebook``'s only (None: every notebook's, ``scope="all"``), and with
    ``ended_only`` only runs that ended (a sub-agent never reads its parent's unfinished run)."""

    notebook: str | None = None
    ended_only: bool = False

    def sees(self, run: dict[str, Any]) -> bool:
        return ((self.notebook is None or run.get("notebook") == self.notebook)
                and (not self.ended_only or run.get("ended") is not None))


EVERY_RUN = Reach()


def _run_in_reach(run_id: str, reach: Reach) -> dict[str, Any] | None:
    """The stored run, or None when there is none or it lies outside ``reach`` (the same answer either way:
    a run outside the reach is not told to exist)."""
    run = session_store().run(run_id)
    return run if run is not None and reach.sees(run) else None


def _read(run_id: str, reach: Reach) -> dict[str, Any]:
    store = session_store()
    run = _run_in_reach(run_id, reach)
    if run is None:
        return {"success": False, "error": f"session_id not found: {run_id}"}
    messages = store.messages(run_id)
    truncated = len(messages) > _HEAD + _TAIL
    shown = messages[:_HEAD] + messages[-_TAIL:] if truncated else messages
    out = {"success": True, "mode": "read", "session_id": run_id, "session_meta": _meta(run),
           "message_count": len(messages), "truncated": truncated, "messages": [_shape(m) for m in shown]}
    if truncated:
        out["message"] = (f"Session has {len(messages)} messages; showing first {_HEAD} + last {_TAIL}. Pass "
                          "around_message_id (any id above) to scroll the middle.")
    return out


def _scroll(run_id: str, anchor: int, window: int, reach: Reach) -> dict[str, Any]:
    store = session_store()
    run = _run_in_reach(run_id, reach)
    if run is None:
        return {"success": False, "error": f"session_id not found: {run_id}"}
    window = max(1, min(int(window), 20))  # Hermes clamps to [1, 20]
    messages = store.messages(run_id)
    if not any(m.id == anchor for m in messages):
        return {"success": False, "error": f"around_message_id {anchor} not in session_id {run_id}"}
    shown, before, after = _window(messages, anchor, window)
    return {"success": True, "mode": "scroll", "session_id": run_id, "around_message_id": anchor,
            "session_meta": _meta(run), "window": window, "messages": [_shape(m, anchor) for m in shown],
            "messages_before": before, "messages_after": after}


def _browse(limit: int, exclude_run: str | None, reach: Reach) -> dict[str, Any]:
    store = session_store()
    results = []
    for run in store.recent(limit=limit, exclude_run=exclude_run, notebook=reach.notebook,
                            ended_only=reach.ended_only):
        messages = store.messages(run["run_id"])
        first = next((m.content for m in messages if m.role == "user"), "")
        results.append({"session_id": run["run_id"], "title": run["prompt"][:120] or None,
                        "source": run["notebook"] or "notebook", "started_at": run["started"],
                        "last_active": messages[-1].time if messages else run["started"],
                        "message_count": run["messages"], "preview": first[:200],
                        "when": _when(run["started"]), "notebook": run["notebook"]})
    return {"success": True, "mode": "browse", "results": results, "count": len(results),
            "message": f"Showing {len(results)} most recent sessions. Pass a query= to search, or "
                       "session_id+around_message_id to scroll."}


def _discover(query: str, limit: int, exclude_run: str | None, sort: str | None,
              roles: tuple[str, ...], reach: Reach) -> dict[str, Any]:
    from hermes_nb.agent.recall import search_runs

    found = search_runs(query, limit=limit, exclude_run=exclude_run, roles=roles, notebook=reach.notebook,
                        ended_only=reach.ended_only)
    if not found.get("success"):
        return found
    store = session_store()
    for result in found["results"]:
        run = store.run(result["session_id"]) or {}
        messages = store.messages(result["session_id"])
        anchor = result["match_message_id"]
        shown, before, after = _window(messages, anchor, 5)
        talk = [m for m in messages if m.role in ("user", "assistant")]
        result.update(source=run.get("notebook") or "notebook", messages=[_shape(m, anchor) for m in shown],
                      messages_before=before, messages_after=after,
                      bookend_start=[_shape(m) for m in talk[:_BOOKEND]],
                      bookend_end=[_shape(m) for m in talk[-_BOOKEND:]], started_at=run.get("started", 0.0))
    if sort in ("newest", "oldest"):
        found["results"].sort(key=lambda r: r["started_at"], reverse=sort == "newest")
    found["sessions_searched"] = len(found["results"])
    return found


def session_search(args: dict[str, Any], *, exclude_run: str | None = None,
                   reach: Reach = EVERY_RUN) -> dict[str, Any]:
    """The answer to one ``session_search`` call, in the shape its arguments ask for, over the runs in
    ``reach`` (every shape: a run outside it is neither found, listed, read nor scrolled)."""
    if args.get("profile"):
        return {"success": False, "error": "hermes_nb has no Hermes profiles: leave out profile and give the "
                                           "session_id alone"}
    sort = args.get("sort")
    if sort not in (None, "newest", "oldest"):
        return {"success": False, "error": f"sort {sort!r}: use 'newest' or 'oldest', or leave it out"}
    limit = max(1, min(int(args.get("limit") or 3), 10))
    try:
        session_id, anchor = args.get("session_id"), args.get("around_message_id")
        if session_id and anchor is not None:
            return _scroll(str(session_id), int(anchor), int(args.get("window") or 5), reach)
        if session_id:
            return _read(str(session_id), reach)
        query = str(args.get("query") or "")
        if not query.strip():
            return _browse(limit, exclude_run, reach)
        roles = _roles(args.get("role_filter"), ("user", "assistant"))
        return _discover(query, limit, exclude_run, sort, roles, reach)
    except (SessionStoreError, ValueError) as exc:
        return {"success": False, "error": str(exc)}
