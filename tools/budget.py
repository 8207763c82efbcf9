"""The result budget: per-tool thresholds, spill files for large results, and a per-turn budget.

1. Per tool: ``max_result_size_chars`` at registration (default ``DEFAULT_RESULT_SIZE_CHARS``);
   ``read_file`` is pinned to infinity so reading a spilled result back never spills again.
2. Per result (``maybe_persist_tool_result``): a result over its threshold is written whole to
   ``<hermes home>/cache/spillover/`` and the model receives a block naming the size, the path, how to
   read it with ``read_file`` offsets, and a preview cut at a line end. If the file cannot be written,
   the model receives the truncated text and a sentence saying the full output could not be saved.
3. Per turn (``enforce_turn_budget``): the largest tool messages of a turn are spilled first until the
   turn fits ``DEFAULT_TURN_BUDGET_CHARS``.

Config overrides (``config.yaml``): ``budget: {result_size_chars: N, turn_chars: N, tools: {NAME: N},
argument_chars: N}``, re-read whenever the file changes (``${VAR}`` values are expanded when it is read).
``argument_chars`` (default ``DEFAULT_ARGUMENT_CHARS``) caps a call's arguments the other way: larger
ones are refused before they are parsed (``tools.calls.results.parse_arguments``).

Spill files this process wrote are remembered (``spilled_this_session``): with ``workspace_strict_reads``
only those are readable, never an earlier session's.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

__all__ = ["DEFAULT_ARGUMENT_CHARS", "DEFAULT_PREVIEW_SIZE_CHARS", "DEFAULT_RESULT_SIZE_CHARS",
           "DEFAULT_TURN_BUDGET_CHARS", "SpillInfo", "argument_limit", "enforce_turn_budget",
           "maybe_persist_tool_result", "parse_spill_block", "result_threshold", "spill_dir", "spilled_this_session"]

from hermes_nb.tools.budget_config import (
    DEFAULT_ARGUMENT_CHARS,
    argument_limit,
    budget_config,
    number_or_none,
)
from hermes_nb.tools.safety.safe_write import write_atomic

log = logging.getLogger(__name__)

DEFAULT_RESULT_SIZE_CHARS = 100_000
DEFAULT_TURN_BUDGET_CHARS = 200_000
DEFAULT_PREVIEW_SIZE_CHARS = 1_500
READ_LIMIT_LINES = 500
#: Spill files kept: the newest ``KEEP_FILES``, plus any younger than ``KEEP_SECONDS``.
KEEP_FILES = 200
KEEP_SECONDS = 7 * 24 * 3600
#: Tools whose threshold is fixed whatever the config says (reading a spill file must not spill).
PINNED_THRESHOLDS: dict[str, float] = {"read_file": math.inf}

_WRITE_CHUNK = 1 << 20  # chars per write, so encoding never holds a second full copy of a huge result
_HEADER = "[Tool output too large: {size} chars, {lines} lines, from {tool}. The full output was saved to this file:]"
_HEADER_RE = re.compile(r"\A\[Tool output too large: (\d+) chars, (\d+) lines, from (.*?)\. The full output was saved "
                        r"to this file:\]\n(.+)\n")


class SpillInfo(TypedDict):
    """What a spill block says: the file and the original size."""

    path: str
    size: int
    lines: int
    tool: str


def spill_dir() -> Path:
    """``<hermes home>/cache/spillover`` (home read at call time)."""
    from hermes_nb.tools.config import hermes_home

    return hermes_home() / "cache" / "spillover"


def result_threshold(tool_name: str, threshold: float | None = None) -> float:
    """The threshold for one result: explicit, else the tool's registration, else config, else the default."""
    if threshold is not None:
        return threshold
    from hermes_nb.tools.registry import registry

    entry = registry.get_entry(tool_name)
    if entry is not None and entry.max_result_size_chars is not None:
        return entry.max_result_size_chars
    if tool_name in PINNED_THRESHOLDS:
        return PINNED_THRESHOLDS[tool_name]
    config = budget_config()
    per_tool = config.get("tools")
    if isinstance(per_tool, dict) and number_or_none(per_tool.get(tool_name)) is not None:
        return number_or_none(per_tool[tool_name]) or 0.0
    configured = number_or_none(config.get("result_size_chars"))
    return configured if configured is not None else DEFAULT_RESULT_SIZE_CHARS


_session_files: set[str] = set()
_session_lock = threading.Lock()


def spilled_this_session(path: Path | str) -> bool:
    """True when this process wrote the spill file at ``path`` (a real path)."""
    return os.path.realpath(path) in _session_files


def _file_name(tool_use_id: str) -> str:
    # Only [A-Za-z0-9_-] survive, and a hash of the raw id keeps distinct ids apart: no id leaves the folder.
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", tool_use_id)[:64].strip("_-") or "result"
    digest = hashlib.sha256(tool_use_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{safe}-{digest}.txt"


def _line_count(content: str) -> int:
    if not content:
        return 0
    return content.count("\n") + (0 if content.endswith("\n") else 1)


def _head(content: str, limit: int) -> str:
    """At most ``limit`` chars, cut after the last complete line when there is one."""
    if len(content) <= limit:
        return content
    cut = content.rfind("\n", 0, limit)
    return content[: cut + 1] if cut > 0 else content[:limit]


def _prune(folder: Path, keep: Path) -> None:
    try:
        files = [(p.stat().st_mtime, p) for p in folder.glob("*.txt") if p != keep]
    except OSError:
        return
    files.sort(reverse=True)
    cutoff = time.time() - KEEP_SECONDS
    for n, (mtime, path) in enumerate(files, start=2):  # the new file counts as the first kept
        if n > KEEP_FILES and mtime < cutoff:
            path.unlink(missing_ok=True)


def _chunks(content: str) -> Any:
    for start in range(0, len(content), _WRITE_CHUNK):
        yield content[start : start + _WRITE_CHUNK].encode("utf-8", "surrogatepass")


def _spill(content: str, tool_name: str, tool_use_id: str, *, keep_on_failure: int,
           preview_chars: int = DEFAULT_PREVIEW_SIZE_CHARS) -> str:
    size, lines = len(content), _line_count(content)
    folder = spill_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # the folder resolved, never the file's name: a link planted under the name is replaced, not followed
        path = write_atomic(Path(os.path.realpath(folder)), _file_name(str(tool_use_id)), _chunks(content))
        with _session_lock:
            _session_files.add(str(path))
    except OSError as exc:
        log.warning("budget: could not save the %s result %s: %s", tool_name, tool_use_id, exc)
        kept = _head(content, keep_on_failure)
        return (f"{kept}\n\n[Output truncated: the result of {tool_name} was {size:,} chars ({lines:,} lines) and "
                f"only the first {len(kept):,} are shown; the full output could not be saved ({exc}).]")
    _prune(folder, path)
    preview = _head(content, preview_chars)
    return "\n".join([
        _HEADER.format(size=size, lines=lines, tool=tool_name),
        str(path),
        f"Read it with read_file(path={str(path)!r}, offset=1, limit={READ_LIMIT_LINES}); offset is the first "
        f"line (1-based), so continue with offset={READ_LIMIT_LINES + 1}, {2 * READ_LIMIT_LINES + 1}, ... "
        f"up to line {lines:,}; pages come as JSON, lines as 'N|line'.",
        f"Preview (first {len(preview):,} of {size:,} chars):",
        preview,
    ])


def maybe_persist_tool_result(content: str, tool_name: str, tool_use_id: str,
                              threshold: float | None = None) -> str:
    """``content`` unchanged at or under the threshold; over it, a spill block pointing at the saved file."""
    limit = result_threshold(tool_name, threshold)
    if len(content) <= limit:
        return content
    return _spill(content, tool_name, tool_use_id, keep_on_failure=int(min(limit, len(content))))


def parse_spill_block(text: str) -> SpillInfo | None:
    """The path and original size named by a spill block, or None when ``text`` is not one."""
    if not isinstance(text, str):
        return None
    match = _HEADER_RE.match(text)
    if match is None:
        return None
    return {"path": match.group(4), "size": int(match.group(1)), "lines": int(match.group(2)),
            "tool": match.group(3)}


def _turn_budget(budget: int | None) -> float:
    if budget is not None:
        return budget
    configured = number_or_none(budget_config().get("turn_chars"))
    return configured if configured is not None else DEFAULT_TURN_BUDGET_CHARS


def enforce_turn_budget(tool_messages: Sequence[Mapping[str, Any]], budget: int | None = None) -> list[dict[str, Any]]:
    """New tool messages whose contents fit the turn budget: the largest spilled first, none dropped."""
    out = [dict(m) for m in tool_messages]
    limit = _turn_budget(budget)

    def size(m: Mapping[str, Any]) -> int:
        c = m.get("content")
        return len(c) if isinstance(c, str) else 0

    total = sum(size(m) for m in out)
    if total <= limit:
        return out
    order = sorted(range(len(out)), key=lambda i: size(out[i]), reverse=True)
    for i in order:
        if total <= limit:
            break
        content = out[i].get("content")
        if not isinstance(content, str) or len(content) <= DEFAULT_PREVIEW_SIZE_CHARS:
            continue  # spilling a small message would not make it smaller
        if parse_spill_block(content) is not None:
            continue
        spilled = _spill(content, str(out[i].get("name") or "tool"), str(out[i].get("tool_call_id") or f"turn_{i}"),
                         keep_on_failure=DEFAULT_PREVIEW_SIZE_CHARS)
        if len(spilled) >= len(content):
            continue
        total += len(spilled) - len(content)
        out[i]["content"] = spilled
    return out
