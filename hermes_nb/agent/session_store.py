"""Past runs in SQLite with FTS5: ``$HERMES_NB_HOME/sessions.db``, WAL mode, one row per message.

Each row keeps the run id, the notebook's path, the time, the role and the tool name; an FTS5 index over
the text (kept by triggers) answers ``search``. A run is marked when it ends (``end``): searches can be kept to
one notebook's runs (``notebook``) and to runs that ended (``ended_only``: a sub-agent never reads the run that
started it, still being written). A run writes its messages as it goes (``add``), so a run
interrupted halfway, or a kernel that dies, still leaves what it said. WAL lets another kernel read while
this one writes; a writer waits at most ``busy_timeout`` for a lock.

Failures are values here: every method raises ``SessionStoreError`` (one line, the path and SQLite's
reason) and the caller decides; the agent reports it once and runs on without the store. After a failure
the store rests for ``RETRY_AFTER`` seconds, so a locked database costs one wait, not one per run.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_nb.tools.calls.results import clean_text
from hermes_nb.tools.config import hermes_home
from hermes_nb.tools.errors import HermesNbError

__all__ = ["SessionStore", "SessionStoreError", "StoredMessage", "session_store"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, started REAL NOT NULL, notebook TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '',
    prompt TEXT NOT NULL DEFAULT '', parent TEXT, ended REAL);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, notebook TEXT NOT NULL DEFAULT '', time REAL NOT NULL,
    role TEXT NOT NULL, tool_name TEXT NOT NULL DEFAULT '', content TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS messages_run ON messages(run_id, id);
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(content, content='messages', content_rowid='id');
CREATE TRIGGER IF NOT EXISTS messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content); END;
CREATE TRIGGER IF NOT EXISTS messages_ad AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content); END;
"""


#: Seconds a store that failed (locked, corrupt) answers at once with that failure instead of trying again:
#: each try may wait ``busy_timeout`` for a lock, on the loop where every run of the process lives.
RETRY_AFTER = 10.0
#: How many matching messages (the newest) a search ranks at most.
_CANDIDATES = 1_500


class SessionStoreError(HermesNbError, RuntimeError):
    """The session database cannot be used (corrupt, locked, unwritable); the message says which."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredMessage:
    """One message as stored."""

    id: int
    run_id: str
    time: float
    role: str
    tool_name: str
    content: str


class SessionStore:
    """One connection per database file, shared by the process's threads under a lock."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 0.5) -> None:
        self.path = Path(path)
        self._busy = busy_timeout
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._resting_until = 0.0
        self._last_error = ""

    # -- connection -------------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            db = sqlite3.connect(self.path, timeout=self._busy, check_same_thread=False, isolation_level=None)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at checkpoints, never corrupt
                db.executescript(_SCHEMA)
                if "ended" not in {row[1] for row in db.execute("PRAGMA table_info(runs)")}:  # a store made before
                    db.execute("ALTER TABLE runs ADD COLUMN ended REAL")
            except BaseException:
                db.close()
                raise
            self._db = db
        return self._db

    def _run(self, what: str, fn: Any, *args: Any) -> Any:
        with self._lock:
            if time.monotonic() < self._resting_until:  # failed just now: do not wait for a lock again
                raise SessionStoreError(self._last_error)
            try:
                return fn(self._conn(), *args)
            except (sqlite3.Error, ValueError) as exc:  # ValueError: text SQLite cannot encode
                if self._db is not None:  # a broken connection is not reused
                    self._db.close()
                    self._db = None
                self._last_error = f"session store {self.path}: {what} failed ({exc})"
                if isinstance(exc, sqlite3.OperationalError):  # locked, unreadable: other runs need not wait
                    self._resting_until = time.monotonic() + RETRY_AFTER
                raise SessionStoreError(self._last_error) from None

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- writing ----------------------------------------------------------------------------------

    def begin(self, run_id: str, *, notebook: str = "", model: str = "", prompt: str = "",
              parent: str | None = None) -> None:
        """Record that a run started (its first message follows through ``add``)."""
        self._run("starting a run", lambda db: db.execute(
            "INSERT OR IGNORE INTO runs(id, started, notebook, model, prompt, parent) VALUES (?,?,?,?,?,?)",
            (run_id, time.time(), clean_text(notebook), clean_text(model), clean_text(prompt[:500]), parent)))

    def end(self, run_id: str) -> None:
        """Record that a run ended (its messages are all stored)."""
        self._run("ending a run", lambda db: db.execute("UPDATE runs SET ended = ? WHERE id = ?", (time.time(), run_id)))

    def add(self, run_id: str, messages: Iterable[dict[str, Any]], *, notebook: str = "") -> int:
        """Store messages of a run (OpenAI shape); the number stored."""
        now = time.time()
        rows = [(run_id, clean_text(notebook), now, str(m.get("role", "")), clean_text(_tool_name(m)), clean_text(_text(m)))
                for m in messages]
        if not rows:
            return 0

        def insert(db: sqlite3.Connection) -> None:
            db.execute("BEGIN")
            try:
                db.executemany("INSERT INTO messages(run_id, notebook, time, role, tool_name, content) "
                               "VALUES (?,?,?,?,?,?)", rows)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

        self._run("storing messages", insert)
        return len(rows)

    # -- reading ----------------------------------------------------------------------------------

    def search(self, query: str, *, limit: int = 3, exclude_run: str | None = None,
               roles: tuple[str, ...] = ("user", "assistant", "tool"), notebook: str | None = None,
               ended_only: bool = False) -> list[dict[str, Any]]:
        """The runs whose messages match ``query`` (FTS5 syntax; plain words if it does not parse), best
        first: ``{run_id, notebook, started, prompt, matches, hits: [{id, role, tool_name, snippet}]}``. Sub-agents'
        runs are left out, as Hermes does: their parent's ``delegate_task`` answer holds what they found.
        ``notebook``: that notebook's runs only (None: every notebook's); ``ended_only``: runs that ended."""
        kept = _kept(notebook, ended_only)
        limit = max(1, min(int(limit), 20))

        def ranked_ids(db: sqlite3.Connection, match: str) -> list[Any]:
            # ranked ids first (the index alone), then the rows and snippets of the few that are kept; a word
            # in most messages ranks only its newest _CANDIDATES matches, so a query stays fast at any size
            return db.execute("SELECT rowid FROM (SELECT rowid, rank FROM messages_fts WHERE messages_fts MATCH ? "
                              "ORDER BY rowid DESC LIMIT ?) ORDER BY rank LIMIT 400", (match, _CANDIDATES)).fetchall()

        def find(db: sqlite3.Connection) -> tuple[list[Any], str]:
            match = query
            try:
                ranked = ranked_ids(db, match)
            except sqlite3.OperationalError:  # not FTS5 syntax (a stray quote, a colon): the words as literals
                match = _plain(query)
                ranked = ranked_ids(db, match)
            if not ranked:
                return [], match
            order = {rid: i for i, (rid,) in enumerate(ranked)}
            marks = ",".join("?" * len(roles))
            # a join, looked up by message id: written as "run_id IN (SELECT ...)", SQLite's planner took the
            # (run_id, id) index and probed every run times every id (9 ms, not 0.3, for 400 ids in 200 runs)
            rows = db.execute(f"SELECT m.id, m.run_id, m.role, m.tool_name FROM messages m JOIN runs r "
                              f"ON r.id = m.run_id WHERE m.id IN ({','.join('?' * len(order))}) "
                              f"AND m.role IN ({marks}) AND m.run_id != ? AND r.parent IS NULL{kept[0]}",
                              (*order, *roles, exclude_run or "", *kept[1])).fetchall()
            return sorted(rows, key=lambda r: order[r[0]]), match

        rows, match = self._run("searching", find)
        runs: dict[str, dict[str, Any]] = {}
        for mid, run_id, role, tool in rows:
            run = runs.get(run_id)
            if run is None:
                if len(runs) >= limit:
                    continue
                run = runs[run_id] = {"run_id": run_id, "matches": 0, "hits": []}
            run["matches"] += 1
            if len(run["hits"]) < 3:
                run["hits"].append({"id": mid, "role": role, "tool_name": tool})
        hits = {h["id"]: h for r in runs.values() for h in r["hits"]}
        if hits:
            snippets = self._run("searching", lambda db: db.execute(
                "SELECT rowid, snippet(messages_fts, 0, '»', '«', '…', 16) FROM messages_fts WHERE messages_fts "
                f"MATCH ? AND rowid IN ({','.join('?' * len(hits))})", (match, *hits)).fetchall())
            for rid, snippet in snippets:
                hits[rid]["snippet"] = snippet
        self._describe(list(runs.values()))
        return list(runs.values())

    def recent(self, *, limit: int = 10, exclude_run: str | None = None, notebook: str | None = None,
               ended_only: bool = False) -> list[dict[str, Any]]:
        """The latest runs, newest first: ``{run_id, notebook, started, prompt, messages}`` (``notebook`` and
        ``ended_only`` as for ``search``)."""
        where, params = _kept(notebook, ended_only)
        rows = self._run("listing runs", lambda db: db.execute(
            "SELECT r.id, (SELECT count(*) FROM messages m WHERE m.run_id = r.id) FROM runs r "
            f"WHERE r.id != ? AND r.parent IS NULL{where} "
            "ORDER BY r.started DESC LIMIT ?",
            (exclude_run or "", *params, max(1, int(limit)))).fetchall())
        runs = [{"run_id": rid, "messages": n} for rid, n in rows]
        self._describe(runs)
        return runs

    def messages(self, run_id: str, *, around: int | None = None, window: int = 2) -> list[StoredMessage]:
        """A run's messages in order (``around`` a message id: ``window`` each side)."""
        def read(db: sqlite3.Connection) -> list[Any]:
            if around is None:
                return db.execute("SELECT id, run_id, time, role, tool_name, content FROM messages "
                                  "WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()
            before = db.execute("SELECT id, run_id, time, role, tool_name, content FROM messages WHERE run_id = ? "
                                "AND id < ? ORDER BY id DESC LIMIT ?", (run_id, around, window)).fetchall()
            after = db.execute("SELECT id, run_id, time, role, tool_name, content FROM messages WHERE run_id = ? "
                               "AND id >= ? ORDER BY id LIMIT ?", (run_id, around, window + 1)).fetchall()
            return before[::-1] + after

        return [StoredMessage(id=r[0], run_id=r[1], time=r[2], role=r[3], tool_name=r[4], content=r[5])
                for r in self._run("reading a run", read)]

    def count(self) -> int:
        return int(self._run("counting", lambda db: db.execute("SELECT count(*) FROM messages").fetchone()[0]))

    def run(self, run_id: str) -> dict[str, Any] | None:
        """One run's ``{run_id, notebook, started, prompt, model, parent, ended}``, or None when no such run
        (``ended`` is None while the run goes on)."""
        row = self._run("reading a run", lambda db: db.execute(
            "SELECT id, started, notebook, model, prompt, parent, ended FROM runs WHERE id = ?", (run_id,)).fetchone())
        if row is None:
            return None
        return dict(zip(("run_id", "started", "notebook", "model", "prompt", "parent", "ended"), row, strict=True))

    def _describe(self, runs: list[dict[str, Any]]) -> None:
        if not runs:
            return
        ids = [r["run_id"] for r in runs]
        rows = self._run("reading runs", lambda db: db.execute(
            f"SELECT id, started, notebook, model, prompt FROM runs WHERE id IN ({','.join('?' * len(ids))})",
            ids).fetchall())
        meta = {r[0]: r[1:] for r in rows}
        for run in runs:
            started, notebook, model, prompt = meta.get(run["run_id"], (0.0, "", "", ""))
            run.update(started=started, notebook=notebook, model=model, prompt=prompt)


def _kept(notebook: str | None, ended_only: bool) -> tuple[str, tuple[Any, ...]]:
    """The conditions on ``runs r`` (appended after ``r.parent IS NULL``) and their parameters."""
    where = ""
    params: tuple[Any, ...] = ()
    if notebook is not None:
        where, params = " AND r.notebook = ?", (clean_text(notebook),)
    if ended_only:
        where += " AND r.ended IS NOT NULL"
    return where, params


def _tool_name(message: dict[str, Any]) -> str:
    if message.get("role") == "tool":
        return str(message.get("name") or "")
    calls = message.get("tool_calls") or ()
    return ",".join(str((c.get("function") or {}).get("name", "")) for c in calls if isinstance(c, dict))


def _text(message: dict[str, Any]) -> str:
    """What is searchable of a message: its text, and the arguments of the calls it made."""
    content = message.get("content")
    if isinstance(content, list):  # content parts: their text
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    parts = [content if isinstance(content, str) else ""]
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict):
            fn = call.get("function") or {}
            parts.append(f"{fn.get('name', '')}({fn.get('arguments', '')})")
    return "\n".join(p for p in parts if p)


def _plain(query: str) -> str:
    """``query`` as FTS5 literal terms (each word quoted), for text that is not valid FTS5 syntax."""
    words = [w.replace('"', '""') for w in query.split()]
    return " ".join(f'"{w}"' for w in words) or '""'


_store: SessionStore | None = None
_store_lock = threading.Lock()


def session_store(path: str | os.PathLike[str] | None = None) -> SessionStore:
    """The process's store for ``path`` (default ``$HERMES_NB_HOME/sessions.db``, looked up now). One is kept
    open at a time: moving the home closes the last one."""
    global _store
    p = Path(path) if path is not None else hermes_home() / "sessions.db"
    with _store_lock:
        if _store is None or _store.path != p:
            if _store is not None:
                _store.close()
            _store = SessionStore(p)
        return _store
