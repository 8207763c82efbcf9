"""Checkpoints: every change a tool call lands, kept with its pre-image, so ``%rollback`` can undo it.

``record`` is the one door: the overlay's landing, ``write_file`` and ``patch`` call it with the call's
write-set (``changes.Change``) after the changes landed. It does two things:

- keeps the call's checkpoint: for each path, what it was before (content, mode, link target, or absent) and
  what the model made it (its hash, mode, target), so a rollback can put the first back and can tell a later
  hand edit from the model's own content. Pre-images live on disk under
  ``<hermes home>/checkpoints/<this kernel>/`` (content-addressed, mode 0600), not in memory: a rollback of a
  deleted data folder must not need the folder in RAM. This kernel's checkpoints are listed by ``%rollback``;
  the folder goes at the kernel's exit (a killed kernel's, a day later, at another kernel's first record).
  A change the full-depth scan found (no overlay) has no pre-image: a rollback keeps it and says so.
- enters each created or modified path in the ledger of model-written files (``tools.safety.writes.ledger``),
  except those a person approved (``trusted``), which leave it. Deleted paths leave it too.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import threading
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from hermes_nb.tools.safety.writes import ledger
from hermes_nb.tools.safety.writes.changes import Change, ChangeKind, sha256

__all__ = ["Checkpoint", "Saved", "blob", "checkpoints", "mark_undone", "record"]

_lock = threading.Lock()
_checkpoints: list[Checkpoint] = []
_folders: dict[Path, Path] = {}  # home -> this kernel's folder in it
_ORPHAN_AGE = 86_400  # seconds: a dead kernel's pre-images are removed by the next kernel a day later


@dataclass(frozen=True, slots=True, kw_only=True)
class Saved:
    """One path of a checkpoint: its state before the call (``before_blob`` names the saved content) and the
    state the call left (``after_sha256`` / ``mode_after`` / ``link_after``)."""

    path: str
    kind: ChangeKind
    is_dir: bool = False
    before_blob: str | None = None
    mode_before: int | None = None
    link_before: str | None = None
    after_sha256: str | None = None
    mode_after: int | None = None
    link_after: str | None = None
    #: what the ledger held for the path before this call entered it (a rollback puts it back)
    ledger_before: ledger.Entry | None = None


@dataclass(kw_only=True, slots=True)
class Checkpoint:
    """One tool call's landed changes, in the order they landed. A rollback marks the files it put back
    (``undone_files``, indexes into ``files``) and, once all are, the call (``undone``)."""

    call_id: str
    tool: str
    time: float
    workspace: str
    files: list[Saved] = field(default_factory=list)
    undone_files: set[int] = field(default_factory=set)
    undone: bool = False


def _blob_folder() -> Path:
    from hermes_nb.tools.config import hermes_home

    home = Path(os.path.realpath(hermes_home()))
    with _lock:
        if home not in _folders:
            folder = home / "checkpoints" / f"{os.getpid()}-{secrets.token_hex(4)}"
            folder.mkdir(parents=True, mode=0o700)
            atexit.register(shutil.rmtree, folder, True)
            _folders[home] = folder
            _sweep(folder.parent)
        return _folders[home]


def _sweep(base: Path) -> None:
    """Remove the folders of kernels that ended without their exit handler (killed), a day on."""
    with os.scandir(base) as found:
        folders = list(found)
    for old in folders:
        pid, _, _ = old.name.partition("-")
        try:
            if not pid.isdigit() or time.time() - old.stat(follow_symlinks=False).st_mtime < _ORPHAN_AGE:
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(old.path, ignore_errors=True)
        except OSError:
            continue  # alive (another user's, EPERM) or gone meanwhile


def _keep(fd: int, folder: Path, data: bytes) -> str:
    """Save ``data`` in ``folder`` (open at ``fd``), once per content, and return where."""
    from hermes_nb.tools.safety.safe_write import write_at

    name = sha256(data)
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        write_at(fd, name, data)
    return str(folder / name)


def blob(where: str) -> bytes:
    """A saved pre-image's content."""
    with open(where, "rb") as fh:
        return fh.read()


def _saved_all(changes: Sequence[Change]) -> list[Saved]:
    """The checkpoint's record of ``changes``: pre-images saved (the folder opened once), hashes taken."""
    from hermes_nb.tools.safety.safe_write import open_folder

    folder = _blob_folder()
    fd = open_folder(folder, create=False)
    try:
        return [Saved(path=c.path, kind=c.kind, is_dir=c.is_dir,
                      before_blob=_keep(fd, folder, c.before) if c.before is not None and _has_content(c.before, c)
                      else None,
                      mode_before=c.mode_before, link_before=c.link_before,
                      after_sha256=sha256(c.after) if c.after is not None else None,
                      mode_after=c.mode_after, link_after=c.link_after) for c in changes]
    finally:
        os.close(fd)


def _has_content(data: bytes | None, change: Change) -> bool:
    return data is not None and change.link_before is None and not change.is_dir


def _entry(change: Change, saved: Saved, *, call_id: str, tool: str, workspace: str, when: float) -> ledger.Entry:
    kind: Literal["file", "link", "dir"]
    if change.link_after is not None:
        kind, digest, target = "link", None, change.link_after
    elif change.is_dir:
        kind, digest, target = "dir", None, None
    else:
        kind, digest, target = "file", saved.after_sha256 or sha256(b""), None
    return ledger.Entry(path=change.path, kind=kind, workspace=workspace, call_id=call_id, tool=tool, time=when,
                        sha256=digest, target=target)


def record(*, call_id: str, tool: str, workspace: Path, changes: Sequence[Change],
           trusted: Collection[str] = ()) -> None:
    """Keep ``changes`` (already landed) as ``call_id``'s checkpoint and enter what the model wrote in the
    ledger; a path in ``trusted`` (a person approved it as written) is not entered, and leaves it."""
    if not changes:
        return
    ws = os.path.realpath(workspace)
    ok = {os.path.normpath(os.path.join(ws, p)) for p in trusted}  # absolute entries stay as they are (join keeps them)
    when = time.time()
    saved = _saved_all(changes)
    enter = [_entry(c, s, call_id=call_id, tool=tool, workspace=ws, when=when)
             for c, s in zip(changes, saved, strict=True) if c.kind != "deleted" and c.path not in ok]
    entered = {e.path for e in enter}
    prior: dict[str, ledger.Entry | None] = {}
    try:
        prior = ledger.update(enter=enter, remove=[c.path for c in changes if c.path not in entered])
    finally:  # the changes landed: they can be rolled back even when the ledger could not be written
        files = [replace(s, ledger_before=prior.get(s.path)) for s in saved]
        _keep_checkpoint(Checkpoint(call_id=call_id, tool=tool, time=when, workspace=ws, files=files))


def _keep_checkpoint(new: Checkpoint) -> None:
    with _lock:
        same = next((cp for cp in reversed(_checkpoints) if cp.call_id == new.call_id and not cp.undone), None)
        if same is not None:  # one call landing in parts (several files of one patch) stays one checkpoint
            same.files.extend(new.files)
        else:
            _checkpoints.append(new)


def mark_undone(cp: Checkpoint, indexes: Collection[int]) -> None:
    """Note that a rollback put back ``cp``'s files at ``indexes`` (the call is undone once all are)."""
    with _lock:
        cp.undone_files.update(indexes)
        cp.undone = len(cp.undone_files) == len(cp.files)


def checkpoints() -> list[Checkpoint]:
    """This kernel's checkpoints, oldest first (undone ones included, marked)."""
    with _lock:
        return list(_checkpoints)
