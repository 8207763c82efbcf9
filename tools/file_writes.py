"""The write side of the file tools: ``write_file`` and ``patch`` (a string replaced, or a V4A patch), each
change judged by the one landing policy and landed by ``tools.safety.writes.lander`` (the same path a sandboxed
command's write-set takes), and the approval judge that shows the diff of an "asks" row."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from hermes_nb.tools import hermes_shapes
from hermes_nb.tools.safety.regular import open_regular
from hermes_nb.tools.workspace import confined_base, display_path, open_confined, resolve_path, workspace_root


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
    named = _absolute(path)  # only write_file's own checks resolve the path
    parent_existed = os.path.isdir(os.path.dirname(named))
    result = write_file(path, content, ask=ask)
    return {**result, "dirs_created": not parent_existed, "resolved_path": named, "files_modified": [named]}


class _NotApplied(ValueError):
    """The replacement's text does not apply to the file as it is (not there, not unique, nothing to change)."""


def _patched(real: Path, path: str, old_string: str, new_string: str, replace_all: bool) -> tuple[bytes, int]:
    """The file's new content after the replacement, and how many places it replaced."""
    _existing_file(real, path)
    _seen(str(real))  # a match count (or its error) would tell what a hidden file holds
    if old_string == "":
        raise _NotApplied("old_string is empty; give the exact text to replace (use write_file to create a file)")
    if old_string == new_string:
        raise _NotApplied("old_string and new_string are the same; nothing would change")
    with _open(real, path) as fh:
        text = fh.read().decode("utf-8")  # exact bytes: keep the file's own line endings
    count = text.count(old_string)
    if count == 0:
        raise _NotApplied(f"old_string was not found in {path}; read the file again with read_file and copy "
                         f"the exact text, including whitespace and indentation")
    if count > 1 and not replace_all:
        raise _NotApplied(f"old_string matches {count} places in {path}; include more surrounding lines to make "
                         f"it unique, or pass replace_all=true to replace all {count}")
    text = text.replace(old_string, new_string) if replace_all else text.replace(old_string, new_string, 1)
    return text.encode("utf-8"), count if replace_all else 1


def patch(path: str, old_string: str, new_string: str, replace_all: bool = False, *,
          ask: Any = None) -> dict[str, Any]:
    """Replace ``old_string`` with ``new_string``; it must occur exactly once unless ``replace_all``."""
    real = resolve_path(path, for_write=True)
    data, count = _patched(real, path, old_string, new_string, replace_all)
    landed = _land_write("patch", real, path, data, ask)
    return {"path": display_path(real), "replacements": count, "diff": landed.diff(label=display_path(real)) or ""}


def _v4a_changes(text: str) -> tuple[list[Any], set[str], list[str]]:
    """The write-set of a V4A patch (``tools.v4a``): every file's change and the folders its new files need;
    the paths a move touches (both ends, resolved); every path the patch names, absolute as named. A one-line
    error and nothing else when any part does not apply."""
    from hermes_nb.tools import v4a
    from hermes_nb.tools.safety.writes.changes import Change

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
    ops = v4a.parse(text)
    moved = {where(p) for op in ops if op.move_to is not None for p in (op.path, op.move_to)}
    named = list(dict.fromkeys(_absolute(p) for op in ops for p in (op.path, op.move_to) if p is not None))
    return [*folders.values(), *changes], moved, named


def _seen(real: str) -> None:
    """A file a patch reads must be one the model may read: its content comes back in the diff (a hidden file
    inside the workspace, reached through what a home dot-entry leads to, would be read through ``patch``).
    ``real`` is resolved already: it is judged as it is, not resolved again."""
    from hermes_nb.tools.safety.sandbox.hidden import hidden_reason
    from hermes_nb.tools.workspace import WorkspaceError

    if why := hidden_reason(Path(real), workspace_root()):
        raise WorkspaceError(f"refusing to read {display_path(Path(real))}: {why}")


def apply_patch(text: str, *, ask: Any = None) -> dict[str, Any]:
    """Apply a V4A patch (``mode: "patch"``): every file or none, through the landing policy; Hermes's result
    (``success``, ``diff``, ``files_modified`` / ``files_created`` / ``files_deleted``).

    The whole patch is judged before anything lands: one refused path, or one "asks" row declined, refuses
    it all. ``ask`` as for ``write_file``."""
    from hermes_nb.tools.safety.approvals.gate import current_approver
    from hermes_nb.tools.safety.writes.lander import approver_asker, land
    from hermes_nb.tools.safety.writes.landing import Landscape
    from hermes_nb.tools.workspace import WorkspaceError

    root = workspace_root()
    changes, moved, named = _v4a_changes(text)
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
    listed = {
        "files_created": [shown[c.path] for c in files if c.kind == "created" and c.path not in moved],
        "files_deleted": [shown[c.path] for c in files if c.kind == "deleted" and c.path not in moved]}
    out.update((key, names) for key, names in listed.items() if names)
    out["files_modified"] = named  # as Hermes 0.19.0 answers: every named path (created, deleted as written)
    if len(named) == 1:
        out["resolved_path"] = named[0]
    return out


def _absolute(path: str) -> str:
    """``path`` made absolute in the workspace as named, links not followed (how Hermes names a changed file)."""
    return os.path.abspath(workspace_root() / Path(path).expanduser())


def _judged(changes: list[Any], scene: Any, asker: Any) -> None:
    """Every change of a patch judged before any lands: one refused, or one "asks" row not approved, refuses
    the whole patch (``land`` alone would keep that one aside and land the rest: half a patch)."""
    from hermes_nb.tools.safety.writes.landing import judge
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
    from hermes_nb.tools.safety.writes.changes import Change
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


def _land_write(tool: str, real: Path, path: str, data: bytes, ask: Any) -> Any:
    """Land one file write through the one landing function; the file's landed ``Change``. Refused or declined
    raises, naming where the content was kept."""
    from hermes_nb.tools.safety.approvals.gate import current_approver
    from hermes_nb.tools.safety.writes.lander import approver_asker, land
    from hermes_nb.tools.workspace import WorkspaceError, workspace_root

    asker = ask if ask is not None else approver_asker(current_approver(), how=f"{tool}")
    result = land(_planned(real, path, data), workspace=workspace_root(), tool=tool, ask=asker)
    for change in result.landed:
        if change.path == str(real):
            return change
    raise WorkspaceError(f"refusing to write {path}: " + " ".join(result.notes) + ". Ask the person to make this change.")


def _gate_said_yes(change: Any, verdict: Any) -> bool:
    return True  # the registered tools run only after the gate asked about the "asks" row (``landing_ask``)


def landing_ask(tool: str) -> Any:
    """The judge of ``write_file`` / ``patch``: the landing policy's "asks" rows (a module the kernel could
    import, ...) ask before the call, showing the diff; a yes for the session holds for this content only."""

    def judge(args: dict[str, Any]) -> Any:
        from hermes_nb.tools import workspace
        from hermes_nb.tools.safety.approvals.gate import Ask
        from hermes_nb.tools.safety.writes.changes import sha256
        from hermes_nb.tools.safety.writes.landing import Landscape
        from hermes_nb.tools.safety.writes.landing import judge as verdict_of
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
    from hermes_nb.tools.safety.approvals.gate import Ask
    from hermes_nb.tools.safety.writes.changes import sha256
    from hermes_nb.tools.safety.writes.landing import Landscape
    from hermes_nb.tools.safety.writes.landing import judge as verdict_of

    try:
        changes, *_ = _v4a_changes(text)
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
    """``patch``'s two modes, as Hermes 0.19.0 takes them and answers: ``replace`` (path, old_string, new_string)
    or ``patch`` (a V4A patch); ``{success, diff, files_modified, ...}``, and ``{success: false, error}`` when the
    text does not apply (not found, not unique, a hunk not in the file). A refusal (hidden, outside the
    workspace, declined) stays the call's error."""
    from hermes_nb.tools.v4a import PatchError

    if args["mode"] == "patch":
        text = args.get("patch")
        if not isinstance(text, str) or not text.strip():
            raise ValueError("mode 'patch' needs patch: the V4A text from '*** Begin Patch' to '*** End Patch'")
        try:
            return apply_patch(text, ask=_gate_said_yes)
        except PatchError as exc:
            return {"success": False, "error": str(exc)}
    missing = [k for k in ("path", "old_string", "new_string") if k not in args]
    if missing:
        raise ValueError(f"mode 'replace' needs {', '.join(missing)} (or use mode 'patch' with a V4A patch)")
    path = args["path"]
    named = _absolute(path)
    try:
        result = patch(path, args["old_string"], args["new_string"], bool(args.get("replace_all", False)),
                       ask=_gate_said_yes)
    except _NotApplied as exc:
        return {"success": False, "error": str(exc)}
    return {"success": True, "diff": result["diff"], "files_modified": [named], "resolved_path": named,
            "path": result["path"], "replacements": result["replacements"]}
