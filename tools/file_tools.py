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
import stat
from pathlib import Path
from typing import Any

from hermes_nb.tools import hermes_shapes
from hermes_nb.tools.registry import registry
from hermes_nb.tools.safety.regular import open_regular
from hermes_nb.tools.workspace import confined_base, display_path, open_confined, resolve_path, workspace_root

_MAX_READ_LINES = 2_000  # Hermes's cap on one read's limit
_MAX_LISTED = 500
_MAX_MATCHES = 10_000  # a content search stops here and says it was capped; pages come from offset/limit
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


def _refuse_read_display(content: str) -> str:
    """Hermes's guard: read_file's ``N|line`` display pasted back as a file's text would corrupt the file."""
    if hermes_shapes.looks_line_numbered(content):
        raise ValueError("refusing to write read_file's line-numbered display as file content: strip the "
                         "'N|' prefixes (or rebuild the intended text) and write again")
    return content


def _write_file_call(path: str, content: str, ask: Any) -> dict[str, Any]:
    """The model's write_file: the pasted-display guard, then ``write_file``, answered in Hermes's shape
    (``bytes_written``, ``dirs_created``, ``resolved_path``, ``files_modified``) beside ours."""
    _refuse_read_display(content)
    # the path as named, made absolute without following links: only write_file's own checks resolve it
    named = Path(os.path.abspath(workspace_root() / Path(path).expanduser()))
    parent_existed = named.parent.is_dir()
    result = write_file(path, content, ask=ask)
    return {**result, "dirs_created": not parent_existed, "resolved_path": str(named),
            "files_modified": [str(named)]}


def _patched(real: Path, path: str, old_string: str, new_string: str, replace_all: bool) -> tuple[bytes, int]:
    """The file's new content after the replacement, and how many places it replaced."""
    _existing_file(real, path)
    _seen(str(real))  # a match count (or its error) would tell what a hidden file holds
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


def _v4a_changes(text: str) -> tuple[list[Any], dict[str, str]]:
    """The write-set of a V4A patch (``tools.v4a``): every file's change and the folders its new files need,
    and its moves (from, to); a one-line error and nothing else when any part does not apply."""
    from hermes_nb.tools import v4a
    from hermes_nb.tools.safety.changes import Change

    root = workspace_root()

    def where(path: str) -> str:
        return str(resolve_path(path, for_write=True))

    def read(real: str) -> tuple[bytes, int] | None:
        if not os.path.lexists(real):
            return None
        _seen(real)
        shown = display_path(Path(real))
        if os.path.isdir(real):
            raise v4a.PatchError(f"{shown} is a folder; a V4A section names a file")
        with _open(Path(real), shown) as fh:  # never through a link: the same open the read tools use
            return fh.read(), stat.S_IMODE(os.fstat(fh.fileno()).st_mode)

    changes = v4a.changes(text, where=where, read=read)
    folders: dict[str, Any] = {}
    for change in changes:
        if change.kind == "created":
            for parent in reversed(Path(change.path).parents):
                if parent.is_relative_to(root) and parent != root and not os.path.lexists(parent):
                    folders.setdefault(str(parent), Change(path=str(parent), kind="created", is_dir=True,
                                                           mode_after=0o755))
    moves = {where(op.path): where(op.move_to) for op in v4a.parse(text) if op.move_to is not None}
    return [*folders.values(), *changes], moves


def _seen(real: str) -> None:
    """A file a patch reads must be one the model may read: its content comes back in the diff (a hidden file
    inside the workspace, reached through what a home dot-entry leads to, would be read through ``patch``).
    ``real`` is resolved already: it is judged as it is, not resolved again."""
    from hermes_nb.tools.safety.hidden import hidden_reason
    from hermes_nb.tools.workspace import WorkspaceError

    if why := hidden_reason(Path(real), workspace_root()):
        raise WorkspaceError(f"refusing to read {display_path(Path(real))}: {why}")


def apply_patch(text: str, *, ask: Any = None) -> dict[str, Any]:
    """Apply a V4A patch (``mode: "patch"``): every file or none, through the landing policy; Hermes's result
    (``success``, ``diff``, ``files_modified`` / ``files_created`` / ``files_deleted``).

    The whole patch is judged before anything lands: one refused path, or one "asks" row declined, refuses
    it all. ``ask`` as for ``write_file``."""
    from hermes_nb.tools.safety.gate import current_approver
    from hermes_nb.tools.safety.lander import approver_asker, land
    from hermes_nb.tools.safety.landing import Landscape
    from hermes_nb.tools.workspace import WorkspaceError

    root = workspace_root()
    changes, moves = _v4a_changes(text)
    asker = ask if ask is not None else approver_asker(current_approver(), how="patch")
    touched = {c.path for c in changes}
    scene = Landscape.here(root, exists=lambda p: str(p) in touched or os.path.lexists(p))
    _judged(changes, scene, asker)
    result = land(changes, workspace=root, tool="patch", ask=asker, landscape=scene)
    if len(result.landed) != len(changes):  # the files changed under the patch after it was judged
        raise WorkspaceError("the patch landed in part: " + " ".join(result.notes))
    files = [c for c in changes if not c.is_dir]
    shown = {c.path: display_path(Path(c.path)) for c in files}
    out: dict[str, Any] = {"success": True, "diff": "".join(
        c.diff(label=shown[c.path]) or f"Binary file {shown[c.path]} {c.kind}\n" for c in files)}
    moved = {*moves, *moves.values()}
    listed = {
        "files_modified": [shown[c.path] for c in files if c.kind == "modified"]
        + [f"{shown[a]} -> {shown[b]}" for a, b in moves.items()],  # Hermes lists a move as modified
        "files_created": [shown[c.path] for c in files if c.kind == "created" and c.path not in moved],
        "files_deleted": [shown[c.path] for c in files if c.kind == "deleted" and c.path not in moved]}
    out.update((key, names) for key, names in listed.items() if names)
    return out


def _judged(changes: list[Any], scene: Any, asker: Any) -> None:
    """Every change of a patch judged before any lands: one refused, or one "asks" row not approved, refuses
    the whole patch (``land`` alone would keep that one aside and land the rest: half a patch)."""
    from hermes_nb.tools.safety.landing import judge
    from hermes_nb.tools.workspace import WorkspaceError

    for change in sorted(changes, key=lambda c: c.is_dir):  # a file first: the refusal names what was meant
        verdict = judge(Path(change.path), scene, is_dir=change.is_dir)
        if verdict.action == "refused" or (verdict.action == "asks" and change.kind != "deleted"
                                           and not asker(change, verdict)):
            raise WorkspaceError(f"refusing the patch: {display_path(Path(change.path))}: {verdict.reason}"
                                 + ("" if verdict.action == "refused" else "; not approved")
                                 + ". Nothing was changed; ask the person to make this change.")


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
    from hermes_nb.tools.safety.hidden import view

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

        if tool == "patch" and args.get("mode") == "patch":
            return _v4a_ask(str(args.get("patch") or ""))
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


def _v4a_ask(text: str) -> Any:
    """``landing_ask`` for a V4A patch: one question for all its "asks" rows, each with its diff; a yes for the
    session holds for these contents of these paths only."""
    from hermes_nb.tools.safety.changes import sha256
    from hermes_nb.tools.safety.gate import Ask
    from hermes_nb.tools.safety.landing import Landscape
    from hermes_nb.tools.safety.landing import judge as verdict_of

    try:
        changes, _ = _v4a_changes(text)
    except (OSError, ValueError, UnicodeDecodeError):
        return None  # refused by the handler itself, with its own message
    touched = {c.path for c in changes}
    scene = Landscape.here(workspace_root(), exists=lambda p: str(p) in touched or os.path.lexists(p))
    rows = [(c, v) for c in changes if c.kind != "deleted"
            and (v := verdict_of(Path(c.path), scene, is_dir=c.is_dir)).action == "asks"]
    if not rows or any(verdict_of(Path(c.path), scene, is_dir=c.is_dir).action == "refused" for c in changes):
        return None  # lands, or refused whole by the handler (which says why)
    shown = [display_path(Path(c.path)) for c, _ in rows]
    return Ask(tool="file", subject=f"patch {', '.join(shown)}", key="landing-module",
               bound=f"  [{sha256(text.encode('utf-8'))}]",
               scopes=frozenset(f"landing:{c.path}:{sha256(c.after or b'')}" for c, _ in rows),
               description="\n".join(f"{name}: {v.reason}.\n{c.diff(label=name) or '(not text: no diff)'}"
                                     for name, (c, v) in zip(shown, rows, strict=True)))


def _patch_call(args: dict[str, Any]) -> dict[str, Any]:
    """``patch``'s two modes, as Hermes 0.19.0 takes them: ``replace`` (path, old_string, new_string) or
    ``patch`` (a V4A patch)."""
    if args["mode"] == "patch":
        text = args.get("patch")
        if not isinstance(text, str) or not text.strip():
            raise ValueError("mode 'patch' needs patch: the V4A text from '*** Begin Patch' to '*** End Patch'")
        return apply_patch(text, ask=_gate_said_yes)
    missing = [k for k in ("path", "old_string", "new_string") if k not in args]
    if missing:
        raise ValueError(f"mode 'replace' needs {', '.join(missing)} (or use mode 'patch' with a V4A patch)")
    return patch(args["path"], args["old_string"], args["new_string"], bool(args.get("replace_all", False)),
                 ask=_gate_said_yes)


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
                # as write_file's: Hermes's opt-out of its cross-profile guard; no profiles here, no effect
                "cross_profile": {"type": "boolean", "default": False,
                                  "description": "Accepted for Hermes compatibility; no effect here."},
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
