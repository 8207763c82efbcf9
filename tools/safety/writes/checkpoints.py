"""Checkpoints: every change a tool call lands, kept with its pre-image, so ``%rollback`` can undo it.

``record`` is the one door: the overlay's landing, ``write_file`` and ``patch`` call it with the call's
write-set (``changes.Change``) after the changes landed. It does two things:

- keeps the call's checkpoint: for each path, what it was before (content, mode, link target, or absent) and
  what the model made it (its hash, mode, target), so a rollback can put the first back and can tell a later
  hand edit from the model's own content. Pre-images live on disk under
  ``<hermes home>/checkpoints/<this kernel>/`` (content-addressed, mode 0600), not in memory: a rollback of a
  deleted data folder must not need the folder in RAM. This kernel's checkpoints are listed by ``%rollback``;
  the folder goes at the kernel's exit.
- enters each created or modified path in the ledger of model-written files (``tools.safety.ledger``), except
  those a person approved (``trusted``), which leave it. Deleted paths leave it too.
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

__all__ = ["Checkpoint", "Saved", "blob", "checkpoints", "record"]

_lock = threading.Lock()
_checkpoints: list[Checkpoint] = []
_folders: dict[Path, Path] = {}  # home -> this kernel's folder in it


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
    """One tool call's landed changes, in the order they landed. ``undone`` is set by a rollback."""

    call_id: str
    tool: str
    time: float
    workspace: str
    files: list[Saved] = field(default_factory=list)
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
        return _folders[home]


def _keep(data: bytes) -> str:
    """Save ``data`` (once per content) and return where."""
    from hermes_nb.tools.safety.safe_write import write_atomic

    name = sha256(data)
    folder = _blob_folder()
    if not (folder / name).is_file():
        write_atomic(folder, name, data)
    return str(folder / name)


def blob(where: str) -> bytes:
    """A saved pre-image's content."""
    with open(where, "rb") as fh:
        return fh.read()


def _saved(change: Change) -> Saved:
    kept = change.before is not None and change.link_before is None and not change.is_dir
    return Saved(path=change.path, kind=change.kind, is_dir=change.is_dir,
                 before_blob=_keep(change.before) if kept and change.before is not None else None,
                 mode_before=change.mode_before, link_before=change.link_before,
                 after_sha256=sha256(change.after) if change.after is not None else None,
                 mode_after=change.mode_after, link_after=change.link_after)


def _entry(change: Change, *, call_id: str, tool: str, workspace: str, when: float) -> ledger.Entry:
    kind: Literal["file", "link", "dir"]
    if change.link_after is not None:
        kind, digest, target = "link", None, change.link_after
    elif change.is_dir:
        kind, digest, target = "dir", None, None
    else:
        kind, digest, target = "file", sha256(change.after or b""), None
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
    saved = [_saved(c) for c in changes]
    enter = [_entry(c, call_id=call_id, tool=tool, workspace=ws, when=when)
             for c in changes if c.kind != "deleted" and c.path not in ok]
    entered = {e.path for e in enter}
    prior = ledger.update(enter=enter, remove=[c.path for c in changes if c.path not in entered])
    saved = [replace(s, ledger_before=prior.get(s.path)) for s in saved]
    with _lock:
        same = next((cp for cp in reversed(_checkpoints) if cp.call_id == call_id and not cp.undone), None)
        if same is not None:  # one call landing in parts (several files of one patch) stays one checkpoint
            same.files.extend(saved)
        else:
            _checkpoints.append(Checkpoint(call_id=call_id, tool=tool, time=when, workspace=ws, files=saved))


def checkpoints() -> list[Checkpoint]:
    """This kernel's checkpoints, oldest first (undone ones included, marked)."""
    with _lock:
        return list(_checkpoints)
