"""Landing a write-set: the one function every model write reaches the workspace through (``land``).

A sandboxed command's write-set (its overlay's upper folder, or a full-depth scan where there is no overlay)
and ``write_file`` / ``patch`` are lists of ``Change``. ``land`` judges every path with the one policy
(``tools.safety.writes.landing``), asks the person about the "asks" rows with the diff, keeps the refused and
declined ones aside under ``<hermes_nb home>/kept-aside/<call id>/`` (never in the workspace), writes the
rest to the workspace without following any link there, records what landed as the call's checkpoint
(``tools.safety.writes.checkpoints``) and keeps it for the call's record (``take_changes``: the card's diff).
"""

from __future__ import annotations

import collections
import errno
import os
import secrets
import stat
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hermes_nb.tools.safety.safe_write import replace_at
from hermes_nb.tools.safety.writes.changes import Change, ChangeKind
from hermes_nb.tools.safety.writes.landing import Landscape, Verdict, judge

__all__ = ["Asker", "ChangedFile", "Landing", "approver_asker", "kept_folder", "land", "take_changes"]

Asker = Callable[[Change, Verdict], bool]
"""``(change, verdict) -> yes`` for an "asks" row."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
_MODE_BITS = 0o777  # never set-uid, set-gid or sticky: the person's files are plain files
_KEPT_CALLS = 256  # calls whose changes wait for their record (a direct call has no record to take them)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangedFile:
    """One file a call changed, as ``ToolCallRecord.changes`` lists it."""

    path: str  # relative to the workspace
    kind: ChangeKind
    diff: str | None = None  # unified, for text


@dataclass(frozen=True, slots=True, kw_only=True)
class Landing:
    """What became of one write-set."""

    landed: tuple[Change, ...]
    trusted: tuple[str, ...]  # landed paths a person said yes to
    kept: tuple[tuple[Change, str, str], ...]  # (change, why, where it was kept; "" when nothing to keep)
    notes: tuple[str, ...]  # one line per path not landed, for the result and the card


_lock = threading.Lock()
_changes: collections.OrderedDict[str, tuple[ChangedFile, ...]] = collections.OrderedDict()


def take_changes(call_id: str) -> tuple[ChangedFile, ...]:
    """The files call ``call_id`` changed (once: the record takes them)."""
    with _lock:
        return _changes.pop(call_id, ())


def _keep_changes(call_id: str, files: tuple[ChangedFile, ...]) -> None:
    with _lock:
        _changes[call_id] = _changes.get(call_id, ()) + files
        while len(_changes) > _KEPT_CALLS:
            _changes.popitem(last=False)


def kept_folder(call_id: str) -> Path:
    """Where call ``call_id``'s refused and declined changes are kept (under the hermes_nb home)."""
    from hermes_nb.tools.config import hermes_home

    return Path(hermes_home()) / "kept-aside" / "".join(c if c.isalnum() or c in "-_" else "_" for c in call_id)


def current_call_id(tool: str) -> str:
    """The model's id for the call running here, else a fresh one (a call made from Python)."""
    from hermes_nb.tools.calls.call_hooks import call_fields

    found = str(call_fields().get("tool_call_id") or "")
    return found or f"{tool}-{secrets.token_hex(6)}"


def _merged(changes: Sequence[Change]) -> Callable[[Path], bool]:
    """``exists`` for the workspace before *or* after ``changes``: a path counts when either side has it, so
    deleting an environment's ``pyvenv.cfg`` in the same write-set does not make its folder ordinary (it would
    let the rest of the write-set into the environment), and likewise for a bare repository's parts."""
    touched = {c.path for c in changes}

    seen: dict[str, bool] = {}

    def exists(path: Path) -> bool:
        text = str(path)
        if text not in seen:
            seen[text] = text in touched or os.path.lexists(text)
        return seen[text]

    return exists


def land(changes: Sequence[Change], *, workspace: Path, tool: str, ask: Asker, call_id: str | None = None,
         in_place: bool = False, special: Iterable[str] = (), landscape: Landscape | None = None) -> Landing:
    """Judge, ask, keep aside, apply and record one write-set (see the module docstring).

    ``in_place``: the changes are already in the workspace (the full-depth scan, where there is no overlay),
    so the ones that do not land are moved out of it instead. ``special``: paths the command made that are
    no file, folder or link (always refused)."""
    call_id = call_id or current_call_id(tool)
    scene = landscape or Landscape.here(workspace, exists=_merged(changes))
    landing: list[Change] = []
    trusted: list[str] = []
    kept: list[tuple[Change, str, str]] = []
    refused: list[tuple[Change, str]] = []
    for change in changes:
        verdict = judge(Path(change.path), scene, is_dir=change.is_dir, link=change.link_after)
        if verdict.action == "refused":
            refused.append((change, verdict.reason))
        elif verdict.action == "asks" and change.kind != "deleted":
            if ask(change, verdict):
                landing.append(change)
                trusted.append(change.path)
            else:
                refused.append((change, f"{verdict.reason}; not approved"))
        else:
            landing.append(change)
    notes: list[str] = []
    for path in special:
        notes.append(f"{_shown(path, workspace)} was not landed: a fifo, socket or device, not a file, folder or link")
        if in_place:
            _move_out(Path(path), workspace, kept_folder(call_id))
    not_landed = {c.path for c, _ in refused}
    said: list[tuple[str, str]] = []
    inside: collections.Counter[str] = collections.Counter()  # refused paths under a refused folder, by folder
    for change, why in sorted(refused, key=lambda r: len(Path(r[0].path).parts)):
        where = _keep(change, workspace, kept_folder(call_id), in_place=in_place)
        kept.append((change, why, where))
        top = next((p for p in map(str, reversed(Path(change.path).parents)) if p in not_landed), None)
        if top is not None:  # said once, with its folder
            inside[top] += 1
            continue
        said.append((change.path, _note(change, why, where, workspace) if not (in_place and change.kind == "deleted")
                     else f"{_shown(change.path, workspace)} was deleted by the command ({why}) and cannot be "
                          "restored here: without an overlay there is no pre-image"))
    notes += [_with_count(path, note, inside[path], workspace) for path, note in said]
    landed: list[Change] = []
    if in_place:
        landed = landing
    else:
        with _Folders(workspace) as folders:
            for change in _apply_order(landing):
                failed: str | None
                if any(p in not_landed for p in map(str, Path(change.path).parents)):
                    failed = "its folder was not landed"
                elif (failed := _apply(change, workspace, folders)) is None:
                    landed.append(change)
                    continue
                kept.append((change, failed, _keep(change, workspace, kept_folder(call_id), in_place=False)))
                notes.append(_note(change, failed, kept[-1][2], workspace))
                not_landed.add(change.path)
            landed = _without_emptied(landed, not_landed, folders)
    if landed:
        _checkpoint(call_id=call_id, tool=tool, workspace=workspace, changes=landed,
                    trusted=[p for p in trusted if p not in not_landed])
        _keep_changes(call_id, tuple(
            ChangedFile(path=_shown(c.path, workspace), kind=c.kind, diff=c.diff(label=_shown(c.path, workspace)))
            for c in landed if not c.is_dir))
    return Landing(landed=tuple(landed), trusted=tuple(p for p in trusted if p not in not_landed),
                   kept=tuple(kept), notes=tuple(notes))


def _checkpoint(*, call_id: str, tool: str, workspace: Path, changes: Sequence[Change],
                trusted: Sequence[str]) -> None:
    """The seam to the checkpoint store and the ledger of model-written files."""
    from hermes_nb.tools.safety.writes import checkpoints

    checkpoints.record(call_id=call_id, tool=tool, workspace=workspace, changes=changes, trusted=trusted)


def _shown(path: str | Path, workspace: Path) -> str:
    text, top = str(path), str(workspace)
    return text[len(top) + 1:] if text.startswith(top + os.sep) else text


def _with_count(path: str, note: str, count: int, workspace: Path) -> str:
    """``note`` on ``path`` saying how many paths inside it went with it."""
    shown = _shown(path, workspace)
    return note.replace(shown, f"{shown} (and {count} path{'s' if count > 1 else ''} inside it)", 1) if count else note


def _note(change: Change, why: str, where: str, workspace: Path) -> str:
    shown = _shown(change.path, workspace)
    if change.kind == "deleted":
        return f"{shown} was not deleted: {why}"
    return f"{shown} was not landed: {why}" + (f"; kept at {where}" if where else "")


# -- applying --------------------------------------------------------------------------------------------

def _apply_order(changes: Sequence[Change]) -> list[Change]:
    """Deletions deepest first, then the rest shallowest first (a folder before what it holds)."""
    gone = sorted((c for c in changes if c.kind == "deleted"), key=lambda c: -len(Path(c.path).parts))
    rest = sorted((c for c in changes if c.kind != "deleted"), key=lambda c: len(Path(c.path).parts))
    return [*gone, *rest]


def _open_parent(path: Path, workspace: Path) -> int:
    """A descriptor for ``path``'s folder, reached from the workspace without following any link."""
    fd = os.open(workspace, _DIR_FLAGS & ~os.O_NOFOLLOW)
    try:
        for name in path.relative_to(workspace).parts[:-1]:
            nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


class _Folders:
    """Descriptors of the workspace's folders, each opened once per landing from its parent's without
    following a link (a folder that is a link, or not a folder, raises)."""

    def __init__(self, workspace: Path) -> None:
        self._root = str(workspace)
        self._fds: dict[str, int] = {}

    def __enter__(self) -> _Folders:
        self._fds[self._root] = os.open(self._root, _DIR_FLAGS & ~os.O_NOFOLLOW)
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def fd(self, folder: str) -> int:
        if folder not in self._fds:
            parent, name = os.path.split(folder)
            if not folder.startswith(self._root + os.sep):
                raise OSError(0, "not inside the workspace")
            self._fds[folder] = os.open(name, _DIR_FLAGS, dir_fd=self.fd(parent))
        return self._fds[folder]

    def forget(self, folder: str) -> None:
        """Drop ``folder`` and what lies in it (it is about to be removed or replaced)."""
        for key in [k for k in self._fds if k == folder or k.startswith(folder + os.sep)]:
            os.close(self._fds.pop(key))


def _apply(change: Change, workspace: Path, folders: _Folders) -> str | None:
    """Write one change; None when done, else why it could not be (nothing is followed through a link)."""
    try:
        parent, name = os.path.split(change.path)
        if change.path == str(workspace) or not change.path.startswith(str(workspace) + os.sep):
            raise OSError(0, "not inside the workspace")
        fd = folders.fd(parent)
        if change.kind == "deleted":
            folders.forget(change.path)
            _remove(name, fd)
        elif change.is_dir:
            _make_folder(name, fd, change)
        else:
            folders.forget(change.path)
            _replace(name, fd, change)
    except OSError as exc:  # a folder became a link or a file meanwhile: never followed, said
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return "a folder on its way is now a symbolic link or not a folder (never followed)"
        return f"it could not be written ({exc.strerror or exc})"
    return None


def _without_emptied(landed: list[Change], not_landed: set[str], folders: _Folders) -> list[Change]:
    """``landed`` without the folders it created that hold nothing now because what was to go in them did not
    land: an empty ``h2/`` would import as a namespace package, and a library's ``try: import h2`` would then
    take it for the real one."""
    gone: set[str] = set()
    made = [c for c in landed if c.is_dir and c.kind == "created"]
    for change in sorted(made, key=lambda c: -len(c.path)):  # the deepest first: a parent may empty in turn
        inside = change.path + os.sep
        if not any(p.startswith(inside) for p in not_landed | gone):
            continue
        parent, name = os.path.split(change.path)
        try:
            folders.forget(change.path)
            os.rmdir(name, dir_fd=folders.fd(parent))
        except OSError:
            continue  # something landed in it: it stays
        gone.add(change.path)
    return [c for c in landed if c.path not in gone]


def _make_folder(name: str, fd: int, change: Change) -> None:
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=fd)
        st = None
    mode = (change.mode_after if change.mode_after is not None else 0o755) & _MODE_BITS
    if st is None:
        os.mkdir(name, mode, dir_fd=fd)
    if st is None or change.mode_after is not None:
        sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
        try:
            os.fchmod(sub, mode)  # exactly, whatever the umask
        finally:
            os.close(sub)


def _remove(name: str, fd: int) -> None:
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        os.rmdir(name, dir_fd=fd)  # its entries were deleted first; what a person added since stays (ENOTEMPTY)
    else:
        os.unlink(name, dir_fd=fd)


def _write_new(name: str, fd: int, change: Change) -> None:
    """Create ``name`` (which must not exist: ``O_EXCL``, never through a link) with the change's content."""
    mode = change.mode_after if change.mode_after is not None else (change.mode_before or 0o644)
    out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd)
    try:
        view = memoryview(change.after or b"")
        while view:
            view = view[os.write(out, view):]
        os.fchmod(out, mode & _MODE_BITS)
    finally:
        os.close(out)


def _replace(name: str, fd: int, change: Change) -> None:
    """Put a file or link at ``name`` in folder ``fd``: created in place when nothing is there, else a fresh
    one renamed over it (a rename replaces a link instead of following it)."""
    if change.kind == "created" and change.link_after is None:
        try:
            _write_new(name, fd, change)
            return
        except FileExistsError:
            pass  # something is there after all: replace it as below
    link = change.link_after
    if link is not None:
        replace_at(fd, name, lambda tmp: os.symlink(link, tmp, dir_fd=fd), over_folder=True)
    else:  # over_folder: a folder the write-set replaced by a file (emptied by its deletions)
        replace_at(fd, name, lambda tmp: _write_new(tmp, fd, change), over_folder=True)


# -- keeping aside ---------------------------------------------------------------------------------------

def _keep(change: Change, workspace: Path, folder: Path, *, in_place: bool) -> str:
    """Keep what ``change`` would have written under ``folder`` (the same relative path); where, or "" for a
    deletion (nothing to keep: the file stays as it was)."""
    if change.kind == "deleted":
        return ""
    if in_place:
        return _move_out(Path(change.path), workspace, folder)
    target = folder / _shown(change.path, workspace)
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if change.is_dir:
            target.mkdir(exist_ok=True, mode=0o700)
        elif change.link_after is not None:
            (target.parent / (target.name + ".link")).write_text(change.link_after + "\n")
            target = target.parent / (target.name + ".link")
        else:
            if target.is_symlink() or target.is_dir():
                target = target.parent / (target.name + "." + secrets.token_hex(3))
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(change.after or b"")
    except OSError as exc:
        return f"(could not keep it: {exc.strerror or exc})"
    return str(target)


def _move_out(path: Path, workspace: Path, folder: Path) -> str:
    """Move ``path`` (already in the workspace: the scan) under ``folder``; where it went."""
    target = folder / _shown(path, workspace)
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = _open_parent(path, workspace)
        try:
            os.rename(path.name, target, src_dir_fd=fd)
        finally:
            os.close(fd)
    except FileNotFoundError:
        return ""  # moved with its folder already
    except OSError as exc:
        return f"(could not move it out: {exc.strerror or exc}; check it before use)"
    return str(target)


# -- asking ----------------------------------------------------------------------------------------------

def approver_asker(approver: Callable[[str, str, str], str] | None, *, how: str) -> Asker:
    """Ask about each "asks" row after the fact (a command's write-set), showing the diff, through the gate's
    own path (``decide_ask`` for the tool ``landing``: the person's rules, an earlier yes for this very content,
    then ``approver`` or the run's); ``how`` says what wrote it. No one to answer: no."""
    from hermes_nb.tools.safety.approvals.gate import Ask, decide_ask
    from hermes_nb.tools.safety.writes.changes import sha256

    def ask(change: Change, verdict: Verdict) -> bool:
        content = sha256(change.after or (change.link_after or "").encode())
        diff = change.diff(label=Path(change.path).name) or "(not text: no diff)"
        question = Ask(tool="landing", subject=f"land {change.path}", key="landing-module", bound=f"  [{content}]",
                       scopes=frozenset({f"landing:{change.path}:{content}"}),
                       description=(f"{how} {'created' if change.kind == 'created' else 'changed'} {change.path}: "
                                    f"{verdict.reason}. Land it in the workspace?\n{diff}"))
        return decide_ask("landing", question, approver).approved

    return ask
