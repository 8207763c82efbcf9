"""``%sessions``: past agent runs (every kernel's, stored in ``sessions.db``), listed and searched."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from hermes_nb.magics.arguments import parse_line
from hermes_nb.magics.comments import uncommented

__all__ = ["SessionList", "SessionMagics"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionList:
    """Runs found (or one run's messages) as a table; ``.results`` is ``session_search``'s answer."""

    title: str
    rows: list[dict[str, Any]]
    results: dict[str, Any]

    def _repr_html_(self) -> str:
        from hermes_nb.display.cards import Table

        keys = tuple(self.rows[0]) if self.rows else ()
        return Table(headers=keys, rows=tuple(tuple(str(r[k]) for k in keys) for r in self.rows), title=self.title,
                     empty="nothing found").html()

    def __repr__(self) -> str:
        lines = [self.title]
        lines += ["  " + " · ".join(str(v) for v in r.values()) for r in self.rows] or ["  nothing found"]
        return "\n".join(lines)


@magics_class
class SessionMagics(Magics):
    """Past runs, as ``session_search`` finds them."""

    @magic_arguments()
    @argument("query", nargs="*", help="Words to find (FTS5: a OR b, \"a phrase\", pre*); none: the latest runs. "
                                       "'show RUN_ID' lists one run's messages.")
    @argument("--limit", type=int, default=10, help="How many runs, 1 to 10 (default 10).")
    @line_magic
    @uncommented
    def sessions(self, line: str) -> SessionList:
        """List or search the agent runs stored in $HERMES_NB_HOME/sessions.db (every kernel writes there).

        Example::

            %sessions                       # the latest runs: id, when, notebook, prompt
            %sessions penguin OR puffin     # runs whose messages mention either word
            %sessions show 3f2a9c81d0e4     # one run's messages
        """
        from hermes_nb.agent.recall import search_runs

        args = parse_line(self.sessions, line, "%sessions")
        if not 1 <= args.limit <= 10:  # session_search's own bounds: more was cut to 10 without a word
            raise UsageError(f"%sessions: --limit is 1 to 10, not {args.limit}")
        words = list(args.query)
        if words[:1] == ["show"]:
            if len(words) != 2:
                raise UsageError("%sessions show RUN_ID: give one run id (from %sessions)")
            return _show(words[1])
        query = " ".join(words)
        found = search_runs(query, limit=args.limit)
        if not found.get("success"):
            raise UsageError(f"%sessions: {found['error']}")
        rows = [{"run": r["session_id"], "when": r["when"], "notebook": r["notebook"] or "—",
                 ("snippet" if query else "prompt"): r.get("snippet") or r.get("title", "")}
                for r in found["results"]]
        title = f"runs matching {query!r}" if query else "latest runs"
        return SessionList(title=title, rows=rows, results=found)


def _show(run_id: str) -> SessionList:
    from hermes_nb.agent.session_store import SessionStoreError, session_store

    try:
        messages = session_store().messages(run_id)
    except SessionStoreError as exc:
        raise UsageError(f"%sessions: {exc}") from None
    rows = [{"id": m.id, "role": m.role + (f" ({m.tool_name})" if m.tool_name else ""),
             "content": m.content[:300] + ("…" if len(m.content) > 300 else "")} for m in messages]
    return SessionList(title=f"run {run_id}", rows=rows, results={"success": True, "messages": rows})
