"""Built-in toolset ``file``: read, write, patch and search files in the workspace.

Paths resolve against the workspace root (``tools.workspace``); writes outside it are refused, and so are
reads when ``workspace_strict_reads`` is on. Every file is opened through ``open_confined`` (inside the root or
the spill folder), so a folder swapped for a symlink after the check cannot redirect the open; ``search_files``
skips symlinks that lead out of the workspace under strict reads. Handlers raise with messages the model can
act on; the registry turns them into JSON error results.
"""

from __future__ import annotations

import collections
import fnmatch
import io
import os
import re
from pathlib import Path
from typing import Any

from hermes_nb.tools import hermes_shapes
from hermes_nb.tools.file_writes import (  # the write side, by its old names too
    _existing_file,
    _gate_said_yes,
    _is_binary,
    _open,
    _patch_call,
    _write_file_call,
    apply_patch,
    landing_ask,
    patch,
    write_file,
)
from hermes_nb.tools.registry import registry

__all__ = ["apply_patch", "patch", "read_file", "search_files", "write_file"]
from hermes_nb.tools.workspace import display_path, resolve_path, workspace_root

_MAX_READ_LINES = 2_000  # Hermes's cap on one read's limit
_MAX_LISTED = 500
_MAX_MATCHES = 10_000  # a content search stops here and says it was capped; pages come from offset/limit
_MAX_MATCH_LINE_CHARS = 300
_MAX_SEARCH_FILE_BYTES = 5_000_000
_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".ruff_cache",
                        ".pytest_cache", ".ipynb_checkpoints"})


def read_file(path: str, offset: int = 1, limit: int = 500) -> dict[str, Any]:
    """Lines ``offset``..``offset+limit-1`` in Hermes's shape (``tools.hermes_shapes``); a negative ``offset``
    reads the tail, a folder is listed."""
    real = resolve_path(path, for_write=False)
    if real.is_dir():
        return _listing(real, path)
    _existing_file(real, path)
    offset, limit = int(offset), min(int(limit), _MAX_READ_LINES)
    if real.suffix.lower() in hermes_shapes.IMAGE_SUFFIXES:
        return hermes_shapes.image_result(file_size=real.stat().st_size)
    hermes_shapes.page(offset, limit, 0)  # a bad offset or limit is refused before the file is read
    with _open(real, path) as raw:
        if _is_binary(raw.read(8192)):
            raise ValueError(f"{path} looks like a binary file; read_file shows text only")
        size = os.fstat(raw.fileno()).st_size
        raw.seek(0)
        fh = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline=None)
        total, kept = _lines_of(fh, offset, limit)
    if total == 0:
        return hermes_shapes.read_result(lines=[], start=1, total=0, file_size=size)
    chosen = hermes_shapes.page(offset, limit, total)
    if chosen.start > total:
        raise ValueError(f"offset {offset} is past the end of {path}, which has {total} lines; "
                         f"use an offset between 1 and {total}, or a negative one to read the tail")
    return hermes_shapes.read_result(lines=kept, start=chosen.start, total=total, file_size=size)


def _lines_of(fh: Any, offset: int, limit: int) -> tuple[int, list[str]]:
    """The line count and the lines the page selects, in one pass (a tail is kept in a bounded deque)."""
    total = 0
    if offset < 0:
        tail: collections.deque[str] = collections.deque(maxlen=-offset)
        for line in fh:
            total += 1
            tail.append(line.rstrip("\n"))
        return total, list(tail)[:limit]
    kept = []
    for total, line in enumerate(fh, start=1):  # total is the line count afterwards
        if offset <= total < offset + limit:
            kept.append(line.rstrip("\n"))
    return total, kept


def _listing(real: Path, shown: str) -> dict[str, Any]:
    """A folder's entries, each checked like a path the model named: what reads would refuse is not listed."""
    names = []
    with os.scandir(real) as found:
        for entry in sorted(found, key=lambda e: e.name):
            try:
                resolve_path(Path(real, entry.name), for_write=False)
            except (OSError, ValueError):  # WorkspaceError is one: a hidden or outside entry is left out
                continue
            names.append(entry.name + ("/" if entry.is_dir(follow_symlinks=False) else ""))
    return hermes_shapes.listing_result(shown=display_path(real), entries=names[:_MAX_LISTED], total=len(names))


def _walk(start: Path, file_glob: str | None) -> Any:
    if start.is_file():
        yield start
        return
    from hermes_nb.tools.safety.sandbox.hidden import view

    seen = view(workspace_root())
    for folder, dirs, files in os.walk(start):
        # a folder the model does not see is not walked (a home's ~/.cache can hold a million files)
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS
                         and seen.reason(Path(os.path.realpath(os.path.join(folder, d)))) is None)
        for name in sorted(files):
            if file_glob is None or fnmatch.fnmatch(name, file_glob) or (
                    "/" in file_glob and fnmatch.fnmatch(os.path.relpath(os.path.join(folder, name), start),
                                                         file_glob)):
                yield Path(folder, name)


def search_files(pattern: str, target: str = "content", path: str = ".", file_glob: str | None = None,
                 limit: int = 50, offset: int = 0, output_mode: str = "content", context: int = 0) -> dict[str, Any]:
    """Hermes's search: ``target="content"`` greps lines with a Python regex (``output_mode`` content,
    files_only or count; ``context`` lines around each match), ``target="files"`` finds files whose name
    matches a glob, newest first. ``offset``/``limit`` page the results (``tools.hermes_shapes``)."""
    offset, limit, context = max(0, int(offset)), max(1, int(limit)), max(0, int(context))
    start = resolve_path(path, for_write=False)
    if not start.exists():
        raise FileNotFoundError(f"path not found: {path} (paths are relative to the workspace root)")
    if target == "files":
        return _find_files(pattern, start, offset, limit)
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"pattern is not a valid Python regular expression: {exc}") from exc
    matches: list[hermes_shapes.Match] = []
    counts: dict[str, int] = {}
    capped = False
    for file, text in _searchable(start, file_glob):
        lines = text.splitlines()
        hit_lines = [n for n, line in enumerate(lines, start=1) if regex.search(line)]
        if not hit_lines:
            continue
        shown = display_path(file)
        counts[shown] = len(hit_lines)
        wanted = sorted({k for n in hit_lines for k in range(max(1, n - context), min(len(lines), n + context) + 1)})
        for number in wanted:
            text_line = lines[number - 1]
            if len(text_line) > _MAX_MATCH_LINE_CHARS:
                text_line = text_line[:_MAX_MATCH_LINE_CHARS] + "..."
            matches.append(hermes_shapes.Match(path=shown, line=number, content=text_line))
        if len(matches) >= _MAX_MATCHES:
            capped = True
            break
    files = list(counts)
    if output_mode == "count":
        return hermes_shapes.search_result(output_mode="count", matches=[], files=[], counts=counts,
                                           total=sum(counts.values()), offset=0, limit=len(counts), capped=capped)
    if output_mode == "files_only":
        return hermes_shapes.search_result(output_mode="files_only", matches=[], files=files[offset:offset + limit],
                                           counts={}, total=len(files), offset=offset, limit=limit, capped=capped)
    return hermes_shapes.search_result(output_mode="content", matches=matches[offset:offset + limit], files=[],
                                       counts={}, total=len(matches), offset=offset, limit=limit, capped=capped)


def _searchable(start: Path, file_glob: str | None) -> Any:
    """``(file, text)`` for each text file under ``start`` a read may see (links out and binaries skipped)."""
    for file in _walk(start, file_glob):
        try:
            # checked like a path the model named: a symlink may lead out, the hermes_nb home may lie inside
            real = resolve_path(file, for_write=False)
            if real.stat().st_size > _MAX_SEARCH_FILE_BYTES:
                continue
            with _open(real, str(file)) as fh:
                data = fh.read()
        except OSError:  # WorkspaceError is one too: a link out is skipped like an unreadable file
            continue
        if not _is_binary(data[:8192]):
            yield file, data.decode("utf-8", errors="replace")


def _find_files(pattern: str, start: Path, offset: int, limit: int) -> dict[str, Any]:
    """Files whose name (or, with a ``/`` in the glob, path under ``start``) matches, newest first."""
    glob = pattern if "/" in pattern or any(c in pattern for c in "*?[") else f"*{pattern}*"
    found = []
    for file in _walk(start, glob):
        try:
            real = resolve_path(file, for_write=False)
            found.append((real.stat().st_mtime, display_path(file)))
        except OSError:  # hidden, outside or gone: not listed
            continue
    found.sort(key=lambda item: (-item[0], item[1]))
    names = [name for _, name in found]
    return hermes_shapes.search_result(output_mode="files_only", matches=[], files=names[offset:offset + limit],
                                       counts={}, total=len(names), offset=offset, limit=limit, capped=False)


_PATH = {"type": "string", "description": "File path, relative to the workspace root (or absolute)."}


registry.register(
    name="read_file",
    toolset="file",
    schema={
        "description": (
            "Read a text file with line numbers and pagination. Returns JSON: content as 'LINE_NUM|CONTENT' "
            "lines, total_lines, file_size, truncated, and a hint with the next offset when there is more. "
            "offset is the first line (1-based); a negative offset reads the tail (-20: the last 20 lines). "
            "A folder is listed. Reads past ~100K characters stop on a line boundary with a next_offset."),
        "parameters": {
            "type": "object",
            "properties": {
                "path": _PATH,
                "offset": {"type": "integer", "default": 1,
                           "description": "Line number to start reading from (1-indexed, default: 1); "
                                          "negative counts from the end."},
                "limit": {"type": "integer", "default": 500, "maximum": 2000,
                          "description": "Maximum number of lines to read (default: 500, max: 2000)."},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    },
    handler=lambda args, **kw: read_file(args["path"], args.get("offset", 1), args.get("limit", 500)),
    emoji="📖",
    max_result_size_chars=float("inf"),  # reading a spilled result must never spill again
    read_only=True,
    path_params=("path",),
)

registry.register(
    name="write_file",
    toolset="file",
    schema={
        "description": ("Create a file or replace its whole content. Parent folders are created. Use patch to "
                        "change part of an existing file."),
        "parameters": {
            "type": "object",
            "properties": {
                "path": _PATH,
                "content": {"type": "string", "description": "The complete new content."},
                # Hermes's opt-out of its cross-profile guard; hermes_nb has no profiles, so it changes nothing
                "cross_profile": {"type": "boolean", "default": False,
                                  "description": "Accepted for Hermes compatibility; no effect here."},
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        },
    },
    handler=lambda args, **kw: _write_file_call(args["path"], args["content"], _gate_said_yes),
    emoji="✍️",
    path_params=("path",),
    metadata={"approval_judge": landing_ask("write_file")},
)

registry.register(
    name="patch",
    toolset="file",
    schema={
        "description": (
            "Edit files. mode 'replace': replace an exact piece of text in one file (path, old_string, "
            "new_string); old_string must match the file exactly (whitespace included) and be unique unless "
            "replace_all is true; read the file first. mode 'patch': apply a V4A patch that adds, updates, "
            "moves and deletes several files at once, all or nothing."),
        "parameters": {
            "type": "object",
            "properties": {
                # in the order of Hermes's execute_code helper: patch(path, old_string, new_string, replace_all,
                # mode, patch) (tools.code_execution.module keeps schema order for what has a default)
                "path": {**_PATH, "description": "mode 'replace': the file to edit, relative to the workspace root."},
                "old_string": {"type": "string", "description": "mode 'replace': the exact text to replace."},
                "new_string": {"type": "string", "description": "mode 'replace': the text to put in its place."},
                "replace_all": {"type": "boolean", "default": False,
                                "description": "Replace every occurrence instead of requiring exactly one."},
                "mode": {"type": "string", "enum": ["replace", "patch"], "default": "replace",
                         "description": "'replace': path + old_string + new_string. 'patch': patch only."},
                "patch": {"type": "string", "description": (
                    "mode 'patch': a V4A patch:\n*** Begin Patch\n*** Update File: path/to/file\n"
                    "@@ def enclosing():\n context line\n-removed line\n+added line\n*** Add File: new.txt\n"
                    "+its content\n*** Delete File: old.txt\n*** End Patch\n('*** Move to: new/path' after an "
                    "Update File line moves it.)")},
            },
            "required": ["mode"],
            "additionalProperties": False,
        },
    },
    handler=lambda args, **kw: _patch_call(args),
    emoji="🩹",
    path_params=("path",),
    metadata={"approval_judge": landing_ask("patch")},
)

registry.register(
    name="search_files",
    toolset="file",
    schema={
        "description": (
            "Search file contents or find files by name. Content search (target='content'): a Python regular "
            "expression matched in each line; output_mode 'content' gives matches with line numbers, "
            "'files_only' the file paths, 'count' the matches per file. File search (target='files'): files "
            "whose name matches a glob such as '*.py', newest first. Returns JSON with total_count; complete "
            "is true when the results shown (with earlier pages) are the whole answer. Binary files and .git, "
            "node_modules and .venv folders are skipped."),
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regex pattern for content search, or glob "
                                                             "pattern (e.g. '*.py') for file search."},
                "target": {"type": "string", "enum": ["content", "files"], "default": "content",
                           "description": "'content' searches inside files, 'files' searches file names."},
                "path": {"type": "string", "default": ".",
                         "description": "Folder (searched recursively) or file, relative to the workspace root."},
                "file_glob": {"type": "string", "description": "Only files whose name matches, e.g. '*.py' "
                                                               "(content search)."},
                "limit": {"type": "integer", "default": 50, "description": "Maximum number of results."},
                "offset": {"type": "integer", "default": 0, "description": "Skip the first N results."},
                "output_mode": {"type": "string", "enum": ["content", "files_only", "count"], "default": "content",
                                "description": "Content search output: matching lines, file paths, or counts."},
                "context": {"type": "integer", "default": 0,
                            "description": "Lines of context before and after each match (content search)."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
    },
    handler=lambda args, **kw: search_files(**args),
    emoji="🔎",
    read_only=True,
    path_params=("path",),
)
