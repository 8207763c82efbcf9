"""Ranking deferred tools for a query: BM25 by SQLite FTS5 (``bm25()``) over name, description, parameters.

One in-memory FTS5 table per catalog, built on the first search and kept for the few catalogs in use
(a run's catalog changes only when the registry or the selection does). Columns are weighted: a word
of the tool's name (or its MCP server's, or its toolset's) counts most, then its parameter names, then
its description. Words are split the way tool names are written (``get_tiny_image``, ``getTinyImage``,
``get-tiny-image``) and stemmed by FTS5's porter tokenizer, so "timezones" finds ``timezone``.

A query is turned into quoted words joined by OR, so no query text reaches FTS5's own syntax.
``select:a,b`` picks tools by exact name instead.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from hermes_nb.tools.search.catalog import Catalog, CatalogEntry, words

if TYPE_CHECKING:
    import sqlite3

__all__ = ["SELECT_PREFIX", "search", "select"]

SELECT_PREFIX = "select:"
#: bm25() column weights: name words, description, parameter names.
WEIGHTS = (6.0, 1.0, 2.0)
_KEEP = 4  # catalogs whose index is kept
_QUERY_CHARS, _TERMS = 1_000, 24  # a query longer than a search box is cut: its words are ORed, each costs
# words that say nothing about which tool is meant (and cost time: they are in many descriptions)
_STOP = frozenset(
    "a an and are as at be by can do does for from how i in into is it its me my of on or please show "
    "that the this to tool tools use using want what which with you your".split())
_lock = threading.Lock()
_indexes: OrderedDict[int, _Index] = OrderedDict()


class _Index:
    def __init__(self, catalog: Catalog) -> None:
        import sqlite3

        self.catalog = catalog
        self.lock = threading.Lock()
        self.db: sqlite3.Connection = sqlite3.connect(":memory:", check_same_thread=False)
        self.db.execute("CREATE VIRTUAL TABLE tools USING fts5(name, description, params, "
                        "tokenize='porter unicode61')")
        self.db.executemany("INSERT INTO tools(rowid, name, description, params) VALUES (?, ?, ?, ?)",
                            ((i, _name_text(e), e.description, " ".join(w for p in e.parameters for w in words(p)))
                             for i, e in enumerate(catalog.entries)))
        weights = ", ".join(map(str, WEIGHTS))
        self.sql = f"SELECT rowid FROM tools WHERE tools MATCH ? ORDER BY bm25(tools, {weights}) LIMIT ?"

    def rows(self, match: str, limit: int) -> list[int]:
        with self.lock:
            return [row for (row,) in self.db.execute(self.sql, (match, limit))]


def _name_text(entry: CatalogEntry) -> str:
    name = entry.name
    if entry.server and name.startswith("mcp__"):
        name = name[len("mcp__"):]  # in every MCP name: it separates nothing
    return " ".join(words(name) + words(entry.toolset.removeprefix("mcp-")))


def _index(catalog: Catalog) -> _Index:
    with _lock:
        index = _indexes.get(catalog.key)
        if index is not None:
            _indexes.move_to_end(catalog.key)
            return index
    index = _Index(catalog)  # built outside the lock: another catalog's searches need not wait
    with _lock:
        _indexes[catalog.key] = index
        while len(_indexes) > _KEEP:
            _indexes.popitem(last=False)
    return index


def select(catalog: Catalog, names: str) -> tuple[list[CatalogEntry], list[str]]:
    """``select:a,b``'s names: the catalog's entries for them, and the names it does not hold."""
    found, missing = [], []
    for name in (n.strip() for n in names.split(",")):
        if name:
            entry = catalog.by_name.get(name)
            (found.append(entry) if entry is not None else missing.append(name))
    return found, missing


def search(catalog: Catalog, query: str, limit: int = 5) -> list[CatalogEntry]:
    """The best ``limit`` entries for ``query`` by BM25; an exact tool name ranks first."""
    if not catalog.entries or limit <= 0:
        return []
    exact = catalog.by_name.get(query.strip())
    found = words(query[:_QUERY_CHARS])
    terms = (list(dict.fromkeys(w for w in found if w not in _STOP)) or list(dict.fromkeys(found)))[:_TERMS]
    rows = _index(catalog).rows(" OR ".join(f'"{t}"' for t in terms), limit) if terms else []
    hits = [catalog.entries[r] for r in rows]
    if exact is not None:
        hits = [exact, *(h for h in hits if h is not exact)][:limit]
    return hits
