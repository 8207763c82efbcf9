"""Hermes's result shapes for the file tools: what ``read_file`` and ``search_files`` return, and what
``write_file`` refuses.

hermes_nb ships these tools under Hermes's names, so models trained on Hermes, Hermes plugins and
``execute_code`` scripts read the same JSON keys with the same meanings (hermes-agent 0.19.0): a read is
``{"content": "1|x = 1\\n2|y = 2", "total_lines", "file_size", "truncated", "is_binary", "is_image"}``
with a ``hint`` saying which offset comes next; a search is ``{"total_count", "matches" | "files" | "counts",
"truncated"}``. This module only shapes what ``tools.file_tools`` read; it opens nothing itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: A read's content is cut on a line boundary past this many characters (Hermes's default read budget).
MAX_READ_CHARS = 100_000
#: A line longer than this is cut, and says so (Hermes's default ``tool_output.max_line_length``).
MAX_LINE_CHARS = 2_000
#: Image files are never inlined: the result says what they are, like Hermes's.
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """Which lines of a file a read shows: ``start`` (1-based) and at most ``count`` of them."""

    start: int
    count: int


def page(offset: int, limit: int, total: int) -> Page:
    """The lines ``offset``/``limit`` select in a file of ``total`` lines.

    ``offset`` counts from 1; a negative one counts back from the end (``-20`` is the last 20 lines, as in
    Hermes v0.23.5), so a tail needs no line count first. ``0`` is neither and is refused.
    """
    if offset == 0:
        raise ValueError("offset 0 names no line: give 1 for the first line, or a negative offset such as -20 "
                         "for the last 20 lines")
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    start = max(1, total + offset + 1) if offset < 0 else offset
    return Page(start=start, count=limit)


def numbered(lines: list[str], start: int) -> str:
    """``LINE_NUM|CONTENT`` lines, the gutter Hermes's read_file uses (no padding)."""
    out = []
    for number, line in enumerate(lines, start=start):
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + "... [truncated]"
        out.append(f"{number}|{line}")
    return "\n".join(out)


def read_result(*, lines: list[str], start: int, total: int, file_size: int) -> dict[str, Any]:
    """A read of ``lines`` (the file's lines from ``start``) in Hermes's shape, cut to ``MAX_READ_CHARS``."""
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = min(len(line), MAX_LINE_CHARS + 16) + len(str(start + len(kept))) + 2
        if kept and used + cost > MAX_READ_CHARS:
            break
        kept.append(line)
        used += cost
    end = start + len(kept) - 1
    result: dict[str, Any] = {"content": numbered(kept, start), "total_lines": total, "file_size": file_size,
                              "truncated": end < total, "is_binary": False, "is_image": False}
    if len(kept) < len(lines):
        result["truncated_by"] = "bytes"
        result["next_offset"] = end + 1
    if end < total:
        result["hint"] = f"Use offset={end + 1} to continue reading (showing {start}-{end} of {total} lines)"
    return result


def image_result(*, file_size: int) -> dict[str, Any]:
    """An image named to read_file: not inlined, said so."""
    return {"content": "", "total_lines": 0, "file_size": file_size, "truncated": False, "is_binary": True,
            "is_image": True, "hint": "Image file: read_file shows text only; look at it in the notebook."}


def listing_result(*, shown: str, entries: list[str], total: int) -> dict[str, Any]:
    """A folder named to read_file (Hermes v0.23.5 lists it): its entries, folders ending in ``/``."""
    result: dict[str, Any] = {"path": shown, "is_directory": True, "entries": entries, "total_entries": total,
                              "truncated": len(entries) < total}
    if result["truncated"]:
        result["hint"] = f"Showing {len(entries)} of {total} entries; use search_files with target='files'."
    return result


def looks_line_numbered(content: str) -> bool:
    """True when ``content`` is read_file's display pasted back (``1|x``, ``2|y``, ...), not a file's text.

    The rule: at least two non-blank lines, at least 60% of them start with a number and ``|``, and those
    numbers run consecutively. A lone literal ``1|value`` line, or a table of pipes, is left alone.
    """
    lines = [line.lstrip() for line in content.splitlines() if line.strip()]
    numbers = []
    for line in lines:
        head, bar, _ = line.partition("|")
        if bar and head.isdigit():
            numbers.append(int(head))
    if len(numbers) < 2 or len(numbers) < 0.6 * len(lines):
        return False
    return all(b == a + 1 for a, b in zip(numbers, numbers[1:], strict=False))


@dataclass(frozen=True, slots=True, kw_only=True)
class Match:
    """One matching (or, with ``context``, surrounding) line of a content search."""

    path: str
    line: int
    content: str


def search_result(*, output_mode: str, matches: list[Match], files: list[str], counts: dict[str, int],
                  total: int, offset: int, limit: int, capped: bool) -> dict[str, Any]:
    """A search in Hermes's shape: ``total_count`` and one of ``matches`` / ``files`` / ``counts``.

    ``complete`` (Hermes v0.23.5's signal) is true when this page plus the pages before it are the whole
    answer: nothing was cut by ``limit`` and the walk was not capped, so the model need not search again.
    """
    result: dict[str, Any] = {"total_count": total}
    if output_mode == "count":
        if counts:
            result["counts"] = counts
        truncated = capped
    elif output_mode == "files_only":
        if files:
            result["files"] = files
        truncated = capped or total > offset + limit
    else:
        if matches:
            result["matches"] = [{"path": m.path, "line": m.line, "content": m.content} for m in matches]
        truncated = capped or total > offset + limit
    if truncated:
        result["truncated"] = True
        result["hint"] = (f"Results truncated. Use offset={offset + limit} to see more, or narrow with a more "
                          f"specific pattern, path or file_glob." if not capped else
                          "The search stopped at its size cap; narrow the pattern, path or file_glob.")
    result["complete"] = not truncated
    return result
