"""``session_search``'s four shapes as Hermes 0.19.0 answers them: browse, read, scroll, discover (with
``sort`` and ``role_filter``). Before, only ``query`` and ``limit`` were taken ("unknown argument")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes_nb.agent.recall import current_notebook
from hermes_nb.agent.session_store import session_store
from hermes_nb.agent.session_views import session_search
from hermes_nb.tools.registry import registry


def _run(run_id: str, prompt: str, replies: list[tuple[str, str]], started: float) -> list[int]:
    store = session_store()
    store.begin(run_id, prompt=prompt, notebook=current_notebook(), model="m")  # this notebook's: in reach
    store._run("dating", lambda db: db.execute("UPDATE runs SET started = ? WHERE id = ?", (started, run_id)))
    store.add(run_id, [{"role": "user", "content": prompt}] + [{"role": r, "content": c} for r, c in replies])
    return [m.id for m in store.messages(run_id)]


def dispatch(**args: Any) -> dict[str, Any]:
    import hermes_nb.tools.agent_loop.tool  # noqa: F401  (registers session_search)
    from hermes_nb.agent.routes import install_default

    undo = install_default()
    try:
        return json.loads(registry.dispatch("session_search", args))
    finally:
        undo()


def test_no_arguments_lists_recent_sessions_newest_first() -> None:
    _run("old", "first topic", [("assistant", "a")], 1_000.0)
    _run("new", "second topic", [("assistant", "b")], 2_000.0)
    out = dispatch()
    assert out["mode"] == "browse" and [r["session_id"] for r in out["results"]] == ["new", "old"]
    assert {"session_id", "title", "source", "started_at", "last_active", "message_count",
            "preview"} <= set(out["results"][0])


def test_session_id_reads_one_run_head_and_tail() -> None:
    ids = _run("long", "a long run", [("assistant", f"step {i}") for i in range(40)], 1_000.0)
    out = dispatch(session_id="long")
    assert out["mode"] == "read" and out["message_count"] == 41 and out["truncated"]
    assert [m["id"] for m in out["messages"]] == ids[:20] + ids[-10:]
    assert out["session_meta"]["title"] == "a long run"
    assert "not found" in dispatch(session_id="nope")["error"]


def test_around_message_id_scrolls_a_window() -> None:
    ids = _run("r", "scroll me", [("assistant", f"m{i}") for i in range(20)], 1_000.0)
    out = dispatch(session_id="r", around_message_id=ids[10], window=2)
    assert out["mode"] == "scroll" and [m["id"] for m in out["messages"]] == ids[8:13]
    assert [m.get("anchor", False) for m in out["messages"]] == [False, False, True, False, False]
    assert out["messages_before"] == 8 and out["messages_after"] == len(ids) - 13
    assert "not in session_id" in dispatch(session_id="r", around_message_id=10**9)["error"]


def test_sort_orders_the_runs_found_by_time() -> None:
    _run("a", "penguin census one", [], 1_000.0)
    _run("b", "penguin census two", [], 3_000.0)
    _run("c", "penguin census three", [], 2_000.0)
    newest = dispatch(query="penguin", limit=3, sort="newest")
    oldest = dispatch(query="penguin", limit=3, sort="oldest")
    assert [r["session_id"] for r in newest["results"]] == ["b", "c", "a"]
    assert [r["session_id"] for r in oldest["results"]] == ["a", "c", "b"]
    hit = newest["results"][0]
    assert {"bookend_start", "bookend_end", "messages_before", "messages_after", "source"} <= set(hit)


@pytest.mark.parametrize(("role_filter", "found"), [
    (None, {"u"}),  # Hermes's default: user and assistant only
    ("tool", {"t"}),
    ("user,assistant,tool", {"u", "t"}),
])
def test_role_filter_picks_the_roles_searched(role_filter: str | None, found: set[str]) -> None:
    _run("u", "walrus question", [], 1_000.0)
    _run("t", "other", [("tool", "walrus output")], 2_000.0)
    args = {"query": "walrus", "limit": 5} | ({"role_filter": role_filter} if role_filter else {})
    assert {r["session_id"] for r in session_search(args)["results"]} == found


def test_bad_shapes_are_one_clear_error() -> None:
    assert "role_filter" in session_search({"query": "x", "role_filter": "robot"})["error"]
    assert "profile" in session_search({"session_id": "x", "profile": "work"})["error"]


def test_every_shape_keeps_to_this_notebooks_runs_unless_scope_is_all() -> None:
    """Reading or scrolling a run by its id is no way round the scope: another notebook's run is not found."""
    store = session_store()
    store.begin("elsewhere", prompt="secret plan", notebook="other.ipynb", model="m")
    store.add("elsewhere", [{"role": "user", "content": "secret plan"}, {"role": "assistant", "content": "ok"}])
    anchor = store.messages("elsewhere")[0].id
    assert dispatch(session_id="elsewhere")["success"] is False
    assert dispatch(session_id="elsewhere", around_message_id=anchor)["success"] is False
    assert all(r["session_id"] != "elsewhere" for r in dispatch().get("results", []))
    assert dispatch(session_id="elsewhere", scope="all")["mode"] == "read"
    assert dispatch(session_id="elsewhere", around_message_id=anchor, scope="all")["mode"] == "scroll"
