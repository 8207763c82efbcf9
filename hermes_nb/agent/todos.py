"""An agent's plan: the ``todo`` tool's list, kept on the agent across its runs (``Agent.reset`` clears it).

Items may nest (Hermes main's ``parent``: the id of another item); a dangling parent or a loop makes the item a
top one.

The semantics are Hermes's: a write replaces the list, or with ``merge`` updates items by id and appends
new ones; an unknown status reads ``pending``; duplicate ids keep the last; every answer is the whole list
with counts. Items are capped (256 items, 4 000 characters each) so a hostile model cannot grow the
transcript or the result without bound.
"""

from __future__ import annotations

import threading
from typing import Any

from hermes_nb.tools.agent_loop.tool import STATUSES

__all__ = ["MAX_ITEMS", "TodoStore"]

MAX_ITEMS = 256
MAX_CONTENT = 4_000


class TodoStore:
    """The list of ``{id, content, status}`` items, in priority order (thread-safe)."""

    def __init__(self) -> None:
        self._items: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self.revision = 0

    def read(self) -> list[dict[str, str]]:
        with self._lock:
            return [dict(i) for i in self._items]

    def clear(self) -> None:
        with self._lock:
            self._items, self.revision = [], self.revision + 1

    def write(self, todos: list[Any], merge: bool = False) -> list[dict[str, str]]:
        """Apply one ``todo`` call's items; the list after it."""
        with self._lock:
            before = [dict(i) for i in self._items]
            incoming = _dedupe([t for t in todos if isinstance(t, dict)])
            if not merge:
                self._items = [_valid(t) for t in incoming]
            else:
                by_id = {i["id"]: i for i in self._items}
                for t in incoming:
                    key = str(t.get("id", "")).strip()
                    if key in by_id:
                        if str(t.get("content") or "").strip():
                            by_id[key]["content"] = _capped(str(t["content"]).strip())
                        status = str(t.get("status") or "").strip().lower()
                        if status in STATUSES:
                            by_id[key]["status"] = status
                        if "parent" in t:
                            by_id[key].pop("parent", None)
                            if str(t["parent"] or "").strip():
                                by_id[key]["parent"] = str(t["parent"]).strip()
                    elif key:
                        item = _valid(t)
                        by_id[key] = item
                        self._items.append(item)
            del self._items[MAX_ITEMS:]
            _sane_parents(self._items)
            if self._items != before:
                self.revision += 1
            return [dict(i) for i in self._items]

    def answer(self, items: list[dict[str, str]]) -> dict[str, Any]:
        """Hermes's result: the list, its revision and the counts by status."""
        counts = {s: sum(1 for i in items if i["status"] == s) for s in STATUSES}
        return {"todos": items, "revision": self.revision, "summary": {"total": len(items), **counts}}


def _dedupe(todos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last: dict[Any, int] = {}
    for n, t in enumerate(todos):
        key = str(t.get("id", "")).strip()
        last[key or ("no id", n)] = n
    return [todos[n] for n in sorted(last.values())]


def _capped(text: str) -> str:
    return text if len(text) <= MAX_CONTENT else text[: MAX_CONTENT - 1] + "…"


def _valid(t: dict[str, Any]) -> dict[str, str]:
    status = str(t.get("status") or "pending").strip().lower()
    item = {"id": str(t.get("id", "")).strip() or "?",
            "content": _capped(str(t.get("content") or "").strip() or "(no description)"),
            "status": status if status in STATUSES else "pending"}
    if str(t.get("parent") or "").strip():
        item["parent"] = str(t["parent"]).strip()
    return item


def _sane_parents(items: list[dict[str, str]]) -> None:
    """Hermes's nesting: a parent must be another item of the list, and no chain may loop (else: a top item)."""
    by_id = {i["id"]: i for i in items}
    for item in items:
        if item.get("parent") not in by_id or item.get("parent") == item["id"]:
            item.pop("parent", None)
    for item in items:
        seen, node = {item["id"]}, item
        while "parent" in node:
            if node["parent"] in seen:
                item.pop("parent", None)
                break
            seen.add(node["parent"])
            node = by_id[node["parent"]]
