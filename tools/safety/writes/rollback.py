"""Undoing what tool calls landed: one call's changes, or everything since one call, from this kernel's
checkpoints (``tools.safety.writes.checkpoints``).

Each path goes back to what it was before the call: a created file or folder is removed, a deleted one comes
back, a modified one gets its old content; modes and link targets too. A path is **kept** — never
overwritten — when it no longer holds what the model left there: the person edited it by hand afterwards
(as Hermes's rollback keeps hand edits), or a later call changed it (undo that one first, or use ``since``).
The rest of the call is still undone; the result names every kept path and why.

Writes are link-safe: each path is reached from the workspace's descriptor one component at a time without
following a link, content goes to a fresh name (``O_EXCL | O_NOFOLLOW``) and is renamed into place, so a
link planted at the path (or at a folder above it) can neither redirect the restore nor be followed.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from hermes_nb.tools.errors import HermesNbError
from hermes_nb.tools.safety.writes import checkpoints, ledger
from hermes_nb.tools.safety.writes.checkpoints import Checkpoint, Saved

__all__ = ["RollbackError", "RollbackResult", "find", "rollback"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_lock = threading.Lock()  # one rollback at a time: each plans from the state the last one left


class RollbackError(HermesNbError, ValueError):
    """A rollback that cannot start: no such call in this kernel's checkpoints."""


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class RollbackResult:
    """What a rollback did: the calls it undid, each path put back, and each path kept with why."""

    calls: tuple[str, ...]
    restored: tuple[str, ...]
    kept: tuple[tuple[str, str], ...]

    def __str__(self) -> str:
        n = len(self.restored)
        head = (f"rolled back {', '.join(self.calls)}: {n} path{'' if n == 1 else 's'} restored" if n else
                f"nothing of {', '.join(self.calls)} was rolled back")
        return "\n".join([head, *(f"  {p}" for p in self.restored), *(f"kept {p}: {why}" for p, why in self.kept)])

    __repr__ = __str__  # a notebook shows the lines, not the fields


def find(call_id: str) -> Checkpoint:
    """This kernel's checkpoint for ``call_id`` (a unique prefix will do)."""
    if not call_id.strip():
        raise RollbackError("give a call id (%rollback lists this kernel's checkpoints)")
    mine = [cp for cp in checkpoints.checkpoints() if cp.call_id == call_id]
    mine = mine or [cp for cp in checkpoints.checkpoints() if cp.call_id.startswith(call_id)]
    ids = {cp.call_id for cp in mine}
    if not ids:
        raise RollbackError(f"no checkpoint for call {call_id!r} in this kernel (%rollback lists them)")
    if len(ids) > 1:
        raise RollbackError(f"{call_id!r} starts several call ids ({', '.join(sorted(ids))}); give more of it")
    return mine[-1]


def rollback(call_id: str | None = None, *, since: str | None = None) -> RollbackResult | list[Checkpoint]:
    """Undo ``call_id``'s changes, or (``since``) every call from that one to the latest, newest first; with
    neither, this kernel's checkpoints (oldest first), as ``%rollback`` lists them.

    Example: ``hermes_nb.rollback()``, ``hermes_nb.rollback("call_8f2c1a")``,
    ``hermes_nb.rollback(since="call_8f2c1a")``.
    """
    if call_id is None and since is None:
        return checkpoints.checkpoints()
    if call_id is not None and since is not None:
        raise RollbackError("give a call id, or since=CALL_ID (not both)")
    with _lock:
        return _undo(call_id, since)


def _undo(call_id: str | None, since: str | None) -> RollbackResult:
    """Plan every path (kept, with why, or put back), apply the plan, then the ledger and the marks."""
    every = checkpoints.checkpoints()
    first = find(since if since is not None else call_id or "")
    calls = every[every.index(first):] if since is not None else [first]
    calls = [cp for cp in calls if not cp.undone]
    if not calls:
        raise RollbackError(f"call {first.call_id} was rolled back already")
    # one plan per path: the newest change says what the model left, the oldest what was there before
    chains: dict[str, list[tuple[Checkpoint, int, Saved]]] = {}
    for cp in calls:
        for i, saved in enumerate(cp.files):
            if i not in cp.undone_files:
                chains.setdefault(saved.path, []).append((cp, i, saved))
    later = _later_writers(every, calls)
    kept: list[tuple[str, str]] = []
    plan: list[tuple[str, Saved, str]] = []  # (path, its oldest change, that call's workspace)
    for path, chain in chains.items():
        try:
            why = _why_kept(path, chain, later)
        except OSError as exc:
            why = f"could not be read ({exc.strerror or exc})"
        if why:
            kept.append((path, why))
        else:
            plan.append((path, chain[0][2], chain[0][0].workspace))
    done = set(_apply(plan, kept))
    ledger.update(restore={p: oldest.ledger_before for p, oldest, _ in plan if p in done})
    for cp in calls:
        checkpoints.mark_undone(cp, [i for i, saved in enumerate(cp.files) if saved.path in done])
    return RollbackResult(calls=tuple(cp.call_id for cp in calls), restored=tuple(sorted(done)),
                          kept=tuple(sorted(kept)))


def _later_writers(every: Sequence[Checkpoint], calls: Sequence[Checkpoint]) -> dict[str, str]:
    """Path -> the newest call after ``calls`` (not undone) that changed it."""
    after = every[every.index(calls[-1]) + 1:]
    out: dict[str, str] = {}
    for cp in after:
        for i, saved in enumerate(cp.files):
            if i not in cp.undone_files:
                out[saved.path] = cp.call_id
    return out


def _why_kept(path: str, chain: list[tuple[Checkpoint, int, Saved]], later: dict[str, str]) -> str | None:
    first_cp, _, first = chain[0]
    if first.kind != "created" and not first.is_dir and first.link_before is None and first.before_blob is None:
        return (f"what it held before call {first_cp.call_id} was not kept (the command ran without an overlay, "
                "so only a scan saw it change); kept as it is")
    if path in later:
        return f"call {later[path]} changed it later (roll that back first, or use --since)"
    for (older_cp, _, older), (cp, _, newer) in zip(chain, chain[1:], strict=False):
        if _after_state(older) != _before_state(newer):
            return f"edited by hand between calls {older_cp.call_id} and {cp.call_id}; kept as it is"
    if _state_now(path) != _after_state(chain[-1][2]):
        return f"edited by hand after call {chain[-1][0].call_id} wrote it; kept as it is"
    return None


# --- states: what a path holds, compared by kind and content hash (a hand edit is a different hash) --------

State = tuple[str, str | None]  # ("absent" | "file" | "link" | "dir", sha256 or link target)


def _after_state(s: Saved) -> State:
    if s.kind == "deleted":
        return ("absent", None)
    if s.link_after is not None:
        return ("link", s.link_after)
    return ("dir", None) if s.is_dir else ("file", s.after_sha256)


def _before_state(s: Saved) -> State:
    if s.kind == "created":
        return ("absent", None)
    if s.link_before is not None:
        return ("link", s.link_before)
    return ("dir", None) if s.is_dir else ("file", os.path.basename(s.before_blob or ""))  # blobs are named by hash


def _state_now(path: str) -> State:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return ("absent", None)
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISDIR(st.st_mode):
        return ("dir", None)
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return ("file", digest.hexdigest())


# --- applying: link-safe, removals deepest first, then restorations shallowest first ------------------------


def _apply(plan: list[tuple[str, Saved, str]], kept: list[tuple[str, str]]) -> list[str]:
    done: list[str] = []
    removals = sorted((p for p in plan if p[1].kind == "created"), key=lambda p: -p[0].count(os.sep))
    restores = sorted((p for p in plan if p[1].kind != "created"), key=lambda p: p[0].count(os.sep))
    for path, oldest, workspace in [*removals, *restores]:
        rel = os.path.relpath(path, workspace)
        try:
            with _parent(workspace, rel) as (fd, name):
                _put_back(fd, name, oldest)
        except OSError as exc:
            kept.append((path, f"could not be restored ({exc.strerror or exc})"))
        else:
            done.append(path)
    return done


@contextmanager
def _parent(workspace: str, rel: str) -> Iterator[tuple[int, str]]:
    """A descriptor of ``rel``'s folder, reached without following links (missing folders are made)."""
    parts = rel.split(os.sep)
    if rel.startswith("..") or os.path.isabs(rel) or any(p in ("", ".", "..") for p in parts):
        raise OSError(f"{rel} is not inside the workspace")
    fd = os.open(workspace, _DIR)
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, _DIR, dir_fd=fd)
            except FileNotFoundError:
                os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
        yield fd, parts[-1]
    finally:
        os.close(fd)


def _put_back(fd: int, name: str, s: Saved) -> None:
    """Make ``name`` (in the folder ``fd``) what it was before ``s``'s call."""
    if s.kind == "created":
        if s.is_dir:
            os.rmdir(name, dir_fd=fd)  # a folder the person has filled since stays (ENOTEMPTY)
        else:
            os.unlink(name, dir_fd=fd)  # removes a link itself, never what it points to
        return
    if s.is_dir:
        try:
            os.mkdir(name, 0o700, dir_fd=fd)
        except FileExistsError:
            pass
        sub = os.open(name, _DIR, dir_fd=fd)
        try:
            if s.mode_before is not None:
                os.fchmod(sub, s.mode_before)
        finally:
            os.close(sub)
        return
    tmp = f".{name}.{secrets.token_hex(6)}.rollback"
    if s.link_before is not None:
        os.symlink(s.link_before, tmp, dir_fd=fd)
    else:
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd)
        try:
            with os.fdopen(out, "wb", closefd=False) as fh:
                fh.write(checkpoints.blob(s.before_blob) if s.before_blob else b"")
            os.fchmod(out, s.mode_before if s.mode_before is not None else 0o644)
        finally:
            os.close(out)
    try:
        _replace(fd, tmp, name)
    except BaseException:
        os.unlink(tmp, dir_fd=fd)
        raise


def _replace(fd: int, tmp: str, name: str) -> None:
    """Rename ``tmp`` onto ``name``; a folder the model left at ``name`` (an empty one) goes first."""
    try:
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except IsADirectoryError:
        os.rmdir(name, dir_fd=fd)
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
