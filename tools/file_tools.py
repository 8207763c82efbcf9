"""Built-in toolset ``file``: read, write, patch and search files in the workspace.

Paths resolve against the workspace root (``tools.workspace``); writes outside it are refused, and so are
reads when ``workspace_strict_reads`` is on. Every file is opened through ``open_confined`` (inside the root or
the spill folder), so a folder swapped for a symlink after the check cannot redirect the open; ``search_files``
skips symlinks that lead out of the workspace under strict reads. Handlers raise with messages the model can
act on; the registry turns them into JSON error results.
"""

from __future__ import annotations

import fnmatch
import io
import os
import re
import stat
from pathlib import Path
from typing import Any

from hermes_nb.tools.registry import registry
from hermes_nb.tools.safety.regular import open_regular
from hermes_nb.tools.workspace import confined_base, display_path, open_confined, resolve_path

_MAX_LINE_CHARS = 2_000
_MAX_MATCHES = 200
_MAX_MATCH_LINE_CHARS = 300
_MAX_SEARCH_FILE_BYTES = 5_000_000
_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".ruff_cache",
                        ".pytest_cache", ".ipynb_checkpoints"})


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head


def _existing_file(path: Path, shown: str) -> None:
    if not path.exists():
        raise FileNotFoundError(f"file not found: {shown} (paths are relative to the workspace root; "
                                f"use search_files to find it)")
    if path.is_dir():
        raise IsADirectoryError(f"{shown} is a directory, not a file; use search_files or the terminal to list it")


def _open(real: Path, shown: str, *, write: bool = False) -> Any:
    """A binary file object for a checked path; inside the root or the spill folder no symlink is followed."""
    base = confined_base(real)
    if base is None:  # a read outside, allowed (not strict): nothing to confine it to
        return open_regular(real)
    return os.fdopen(open_confined(real, base, write=write, shown=shown), "wb" if write else "rb")


def read_file(path: str, offset: int = 1, limit: int = 500) -> str:
    """Numbered lines ``offset``..``offset+limit-1`` with a header and a footer saying how to read more."""
    real = resolve_path(path, for_write=False)
    _existing_file(real, path)
    offset, limit = max(1, int(offset)), max(1, int(limit))
    shown: list[str] = []
    total = 0
    with _open(real, path) as raw:
        if _is_binary(raw.read(8192)):
            raise ValueError(f"{path} looks like a binary file; read_file shows text only")
        raw.seek(0)
        fh = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline=None)
        for total, line in enumerate(fh, start=1):  # total is the line count afterwards
            if offset <= total < offset + limit:
                text = line.rstrip("\n")
                if len(text) > _MAX_LINE_CHARS:
                    text = text[:_MAX_LINE_CHARS] + f"... [line cut: {len(text)} chars]"
                shown.append(f"{total:6d}\t{text}")
    name = display_path(real)
    if total == 0:
        return f"File: {name} (empty: 0 lines)"
    if offset > total:
        raise ValueError(f"offset {offset} is past the end of {path}, which has {total} lines; "
                         f"use an offset between 1 and {total}")
    last = offset + len(shown) - 1
    header = f"File: {name} ({total} lines total; showing lines {offset}-{last})"
    if last < total:
        footer = f"[{total - last} more lines. To read more, call read_file with offset={last + 1}]"
    else:
        footer = f"[end of file: {total} lines]"
    return "\n".join([header, *shown, footer])


def write_file(path: str, content: str, *, ask: Any = None) -> dict[str, Any]:
    """Create or replace a file (parent folders are created), through the landing policy.

    ``ask``: who answers an "asks" row (``(change, verdict) -> bool``); the registered tool passes a yes,
    because the gate asked before the call (``landing_ask``); None asks the current approver."""
    real = resolve_path(path, for_write=True)
    if real.is_dir():
        raise IsADirectoryError(f"{path} is a directory; give a file path")
    data = content.encode("utf-8")
    _land_write("write_file", real, path, data, ask)
    return {"path": display_path(real), "bytes_written": len(data), "lines": content.count("\n") + (
        1 if content and not content.endswith("\n") else 0)}


def _patched(real: Path, path: str, old_string: str, new_string: str, replace_all: bool) -> tuple[bytes, int]:
    """The file's new content after the replacement, and how many places it replaced."""
    _existing_file(real, path)
    if old_string == "":
        raise ValueError("old_string is empty; give the exact text to replace (use write_file to create a file)")
    if old_string == new_string:
        raise ValueError("old_string and new_string are the same; nothing would change")
    with _open(real, path) as fh:
        text = fh.read().decode("utf-8")  # exact bytes: keep the file's own line endings
    count = text.count(old_string)
    if count == 0:
        raise ValueError(f"old_string was not found in {path}; read the file again with read_file and copy "
                         f"the exact text, including whitespace and indentation")
    if count > 1 and not replace_all:
        raise ValueError(f"old_string matches {count} places in {path}; include more surrounding lines to make "
                         f"it unique, or pass replace_all=true to replace all {count}")
    text = text.replace(old_string, new_string) if replace_all else text.replace(old_string, new_string, 1)
    return text.encode("utf-8"), count if replace_all else 1


def patch(path: str, old_string: str, new_string: str, replace_all: bool = False, *,
          ask: Any = None) -> dict[str, Any]:
    """Replace ``old_string`` with ``new_string``; it must occur exactly once unless ``replace_all``."""
    real = resolve_path(path, for_write=True)
    data, count = _patched(real, path, old_string, new_string, replace_all)
    _land_write("patch", real, path, data, ask)
    return {"path": display_path(real), "replacements": count}


def _planned(real: Path, path: str, data: bytes) -> list[Any]:
    """The write-set of writing ``data`` to ``real``: its missing folders, then the file."""
    from hermes_nb.tools.safety.changes import Change
    from hermes_nb.tools.workspace import workspace_root

    root = workspace_root()
    folders = [p for p in reversed(real.parents) if p.is_relative_to(root) and p != root and not os.path.lexists(p)]
    changes: list[Any] = [Change(path=str(p), kind="created", is_dir=True, mode_after=0o755) for p in folders]
    before, mode = None, None
    if os.path.lexists(real):
        with _open(real, path) as fh:  # never through a link: the same open the read tools use
            before, mode = fh.read(), stat.S_IMODE(os.fstat(fh.fileno()).st_mode)
    changes.append(Change(path=str(real), kind="created" if before is None else "modified", before=before,
                          after=data, mode_before=mode, mode_after=mode))
    return changes


def _land_write(tool: str, real: Path, path: str, data: bytes, ask: Any) -> None:
    """Land one file write through the one landing function; refused or declined raises, naming where the
    content was kept."""
    from hermes_nb.tools.safety.gate import current_approver
    from hermes_nb.tools.safety.lander import approver_asker, land
    from hermes_nb.tools.workspace import WorkspaceError, workspace_root

    asker = ask if ask is not None else approver_asker(current_approver(), how=f"{tool}")
    result = land(_planned(real, path, data), workspace=workspace_root(), tool=tool, ask=asker)
    if not any(c.path == str(real) for c in result.landed):
        raise WorkspaceError(f"refusing to write {path}: " + " ".join(result.notes)
                             + ". Ask the person to make this change.")


def _gate_said_yes(change: Any, verdict: Any) -> bool:
    return True  # the registered tools run only after the gate asked about the "asks" row (``landing_ask``)


def _walk(start: Path, file_glob: str | None) -> Any:
    if start.is_file():
        yield start
        return
    for folder, dirs, files in os.walk(start):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(files):
            if file_glob is None or fnmatch.fnmatch(name, file_glob) or (
                    "/" in file_glob and fnmatch.fnmatch(os.path.relpath(os.path.join(folder, name), start),
                                                         file_glob)):
                yield Path(folder, name)


def search_files(pattern: str, path: str = ".", file_glob: str | None = None) -> str:
    """Lines matching a Python regex under ``path``, as ``file:line: text`` (like ``grep -rn``)."""
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"pattern is not a valid Python regular expression: {exc}") from exc
    start = resolve_path(path, for_write=False)
    if not start.exists():
        raise FileNotFoundError(f"path not found: {path} (paths are relative to the workspace root)")
    hits: list[str] = []
    capped = False
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
        if _is_binary(data[:8192]):
            continue
        shown = display_path(file)
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if regex.search(line):
                if len(hits) >= _MAX_MATCHES:
                    capped = True
                    break
                text = line if len(line) <= _MAX_MATCH_LINE_CHARS else line[:_MAX_MATCH_LINE_CHARS] + "..."
                hits.append(f"{shown}:{number}: {text}")
        if capped:
            break
    where = f" in files matching {file_glob!r}" if file_glob else ""
    if not hits:
        return f"No matches for {pattern!r} under {path}{where}."
    if capped:
        hits.append(f"[results capped at {_MAX_MATCHES} matches; narrow the pattern, the path or file_glob]")
    return "\n".join(hits)


_PATH = {"type": "string", "description": "File path, relative to the workspace root (or absolute)."}


def landing_ask(tool: str) -> Any:
    """The judge of ``write_file`` / ``patch``: the landing policy's "asks" rows (a module the kernel could
    import, ...) ask before the call, showing the diff; a yes for the session holds for this content only."""

    def judge(args: dict[str, Any]) -> Any:
        from hermes_nb.tools import workspace
        from hermes_nb.tools.safety.changes import sha256
        from hermes_nb.tools.safety.gate import Ask
        from hermes_nb.tools.safety.landing import Landscape
        from hermes_nb.tools.safety.landing import judge as verdict_of
        from hermes_nb.tools.workspace import workspace_root

        path = str(args.get("path", ""))
        try:
            real = workspace.resolve_path(path, for_write=True)
            if tool == "write_file":
                data = str(args.get("content", "")).encode("utf-8")
            else:
                data, _ = _patched(real, path, str(args.get("old_string", "")), str(args.get("new_string", "")),
                                   bool(args.get("replace_all", False)))
            change = _planned(real, path, data)[-1]
        except (OSError, ValueError, UnicodeDecodeError):
            return None  # refused by the handler itself, with its own message
        verdict = verdict_of(real, Landscape.here(workspace_root()))
        if verdict.action != "asks":
            return None  # lands, or refused and kept aside by the handler (which says where)
        shown = display_path(real)
        return Ask(tool="file", subject=f"{tool} {shown}", key="landing-module", bound=f"  [{sha256(data)}]",
                   scopes=frozenset({f"landing:{real}:{sha256(data)}"}),
                   description=f"{shown}: {verdict.reason}.\n{change.diff(label=shown) or '(not text: no diff)'}")

    return judge


registry.register(
    name="read_file",
    toolset="file",
    schema={
        "description": (
            "Read a text file. Returns numbered lines ('     1\\tline') with a header giving the total line "
            "count; long files are shown a page at a time: call again with a larger offset to read more."),
        "parameters": {
            "type": "object",
            "properties": {
                "path": _PATH,
                "offset": {"type": "integer", "minimum": 1, "default": 1,
                           "description": "First line to show (1-based)."},
                "limit": {"type": "integer", "minimum": 1, "default": 500,
                          "description": "How many lines to show at most."},
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
            "properties": {"path": _PATH, "content": {"type": "string", "description": "The complete new content."}},
            "required": ["path", "content"],
            "additionalProperties": False,
        },
    },
    handler=lambda args, **kw: write_file(args["path"], args["content"], ask=_gate_said_yes),
    emoji="✍️",
    path_params=("path",),
    metadata={"approval_judge": landing_ask("write_file")},
)

registry.register(
    name="patch",
    toolset="file",
    schema={
        "description": ("Edit a file by replacing an exact piece of text. old_string must match the file exactly "
                        "(whitespace included) and be unique unless replace_all is true; read the file first."),
        "parameters": {
            "type": "object",
            "properties": {
                "path": _PATH,
                "old_string": {"type": "string", "description": "The exact text to replace."},
                "new_string": {"type": "string", "description": "The text to put in its place."},
                "replace_all": {"type": "boolean", "default": False,
                                "description": "Replace every occurrence instead of requiring exactly one."},
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": False,
        },
    },
    handler=lambda args, **kw: patch(args["path"], args["old_string"], args["new_string"],
                                     bool(args.get("replace_all", False)), ask=_gate_said_yes),
    emoji="🩹",
    path_params=("path",),
    metadata={"approval_judge": landing_ask("patch")},
)

registry.register(
    name="search_files",
    toolset="file",
    schema={
        "description": ("Search file contents with a Python regular expression, like grep -rn. Returns "
                        "'file:line: text' lines (at most 200). Binary files and .git, node_modules and .venv "
                        "folders are skipped."),
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Python regular expression searched in each line."},
                "path": {"type": "string", "default": ".",
                         "description": "Folder (searched recursively) or file, relative to the workspace root."},
                "file_glob": {"type": "string", "description": "Only files whose name matches, e.g. '*.py'."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
    },
    handler=lambda args, **kw: search_files(args["pattern"], args.get("path", "."), args.get("file_glob")),
    emoji="🔎",
    read_only=True,
    path_params=("path",),
)
