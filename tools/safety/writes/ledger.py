"""The ledger of files the model wrote: what the kernel's import guard refuses until a person trusts it.

Every created or modified path a tool call lands (``checkpoints.record``) is entered with what the model made it
— a file's sha256, a link's target, or "a folder" — the call that wrote it, and when. One JSON file in the
hermes_nb home, ``ledger.json``, grouped by workspace, so it outlives the kernel: a ``storemagic.py`` written
today is still the model's at tomorrow's ``import``. A path leaves the ledger when a person trusts it
(``trust``, ``%trust``), when the model deletes it, when it is observably gone from the disk, or when a
rollback puts back what was there before. A file the person edited stays listed but no longer counts: the
guard compares its hash (``Entry.still_written``).

Writes are read-modify-write under an ``flock`` (several kernels share the home) and land through
``safe_write`` (a link planted at ``ledger.json`` is replaced, never followed). ``current`` is what the guard
reads on every import: one ``lstat`` of the file when nothing changed, never an import (it runs inside the
import system). It finds an entry by path, or by the file a path names (device and inode), so a module reached
through a linked folder on ``sys.path`` is still found, with no ``realpath``.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import hashlib
import importlib.machinery
import json
import os
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = ["Entry", "Index", "current", "entries", "lookup", "model_written", "trust", "update", "written_any"]

_NAME = "ledger.json"
_VERSION = 1
_lock = threading.Lock()
#: (ledger file, its stat key) -> path index; re-read only when the file changed (another kernel wrote it)
_cache: tuple[str, tuple[int, int, int], Index] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One model-written path: a file (``sha256``), a symbolic link (``target``) or a folder it created."""

    path: str
    kind: Literal["file", "link", "dir"]
    workspace: str
    call_id: str
    tool: str
    time: float
    sha256: str | None = None
    target: str | None = None

    def loadable(self) -> bool:
        """Whether the import system could load a module from it (an import suffix, an archive, a folder, a
        link); the rest is data, listed but never what an import opens."""
        return self.kind != "file" or self.path.endswith(_LOADABLE)

    def still_written(self) -> bool:
        """Whether the path still holds what the model made it (a hand edit since makes it the person's)."""
        try:
            if self.kind == "link":
                return os.path.islink(self.path) and os.readlink(self.path) == self.target
            if self.kind == "dir":
                return os.path.isdir(self.path) and not os.path.islink(self.path)
            if not os.path.isfile(self.path) or os.path.islink(self.path):
                return False
            digest = hashlib.sha256()
            with open(self.path, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
            return digest.hexdigest() == self.sha256
        except OSError:
            return False


def _home() -> str:
    return _home_for(os.environ.get("HERMES_NB_HOME"), os.environ.get("HOME"))


@functools.lru_cache(maxsize=8)
def _home_for(env: str | None, home: str | None) -> str:
    """``tools.config.hermes_home()``'s rule, as a real path, worked out once per value: the guard asks on
    every import, from inside the import system, and ``%load_ext`` must not import the config module
    (a test holds the two rules equal)."""
    return os.path.realpath(os.path.expanduser(env) if env else os.path.join(os.path.expanduser("~"), ".hermes_nb"))


def _key(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _parse(data: bytes) -> dict[str, Entry]:
    """The file's entries; ValueError for anything else (the guard then fails closed)."""
    try:
        raw = json.loads(data or b"{}")
        out: dict[str, Entry] = {}
        for workspace, files in (raw.get("workspaces") or {}).items():
            for path, fields in files.items():
                out[path] = Entry(path=path, workspace=workspace, **fields)
    except (AttributeError, TypeError) as exc:
        raise ValueError(f"{_NAME} is not a ledger: {exc}") from None
    return out


class Index:
    """The ledger as read once: by path, and by the file each path names now (device and inode), so a path
    spelled another way — through a link on ``sys.path``, or relative — finds its entry without a
    ``realpath`` (which costs a ``stat`` per component, on every import)."""

    __slots__ = ("by_file", "by_path")

    def __init__(self, by_path: dict[str, Entry]) -> None:
        self.by_path = by_path
        self.by_file: dict[tuple[int, int], Entry] = {}
        for entry in by_path.values():
            if not entry.loadable():
                continue  # data the model wrote: no loader opens it, and a stat each would slow every reload
            try:
                st = os.stat(entry.path)
            except OSError:
                continue
            self.by_file[(st.st_dev, st.st_ino)] = entry

    def __bool__(self) -> bool:
        return bool(self.by_path)

    def find(self, path: str) -> Entry | None:
        """The entry for ``path``, whether or not the file still holds what the model wrote."""
        entry = self.by_path.get(path)
        if entry is None and self.by_file:
            try:
                st = os.stat(path)
            except (OSError, ValueError):
                return None
            entry = self.by_file.get((st.st_dev, st.st_ino))
        return entry


_EMPTY = Index({})
#: What the import system can load a module from: its suffixes, and the archives zipimport reads
#: (an archive of another name is still found by its path).
_LOADABLE = (*importlib.machinery.all_suffixes(), ".zip", ".egg", ".whl", ".pyz")
_FIELDS = ("kind", "call_id", "tool", "time", "sha256", "target")


def current() -> Index:
    """The ledger, re-read only when its file changed since the last read (one ``lstat`` otherwise).
    OSError for a link at its name, ValueError for a file that is no ledger."""
    global _cache
    file = os.path.join(_home(), _NAME)
    if not os.access(file, os.F_OK, follow_symlinks=False):  # most kernels: no ledger (no exception raised)
        return _EMPTY
    try:
        st = os.lstat(file)
    except FileNotFoundError:
        return _EMPTY
    if stat.S_ISLNK(st.st_mode):
        raise OSError(errno.ELOOP, "a link stands where the ledger should be", file)
    if _cache is not None and _cache[0] == file and _cache[1] == _key(st):
        return _cache[2]
    fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        key = _key(os.fstat(fd))
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    index = Index(_parse(b"".join(chunks)))
    _cache = (file, key, index)
    return index


def _index() -> dict[str, Entry]:
    return current().by_path


def written_any() -> bool:
    """Whether the ledger holds anything (the guard's fast path: most kernels' ledger is empty)."""
    return bool(current())


def lookup(path: str) -> Entry | None:
    """The ledger's entry for ``path`` (or for the same file by another path), whether or not it still holds."""
    return current().find(path)


def model_written(path: str, index: Index | None = None) -> Entry | None:
    """The entry for ``path`` when it still holds what the model wrote; None when trusted or edited since."""
    entry = (index if index is not None else current()).find(path)
    return entry if entry is not None and entry.still_written() else None


def entries() -> list[Entry]:
    return sorted(_index().values(), key=lambda e: (e.workspace, e.path))


@contextmanager
def _locked() -> Iterator[Path]:
    """The home, held for a read-modify-write of the ledger (this thread and every other kernel)."""
    home = Path(_home())
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    with _lock:
        fd = os.open(home / ".ledger.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield home
        finally:
            os.close(fd)


def _save(home: Path, index: Mapping[str, Entry]) -> None:
    from hermes_nb.tools.safety.safe_write import write_atomic

    grouped: dict[str, dict[str, Any]] = {}
    for path, entry in sorted(index.items()):
        fields = {k: getattr(entry, k) for k in _FIELDS if getattr(entry, k) is not None}
        grouped.setdefault(entry.workspace, {})[path] = fields
    # compact: the C encoder (an indent makes json use its pure-Python one, 10x slower on a big ledger)
    write_atomic(home, _NAME, json.dumps({"version": _VERSION, "workspaces": grouped}).encode())


def update(*, enter: Iterable[Entry] = (), remove: Iterable[str] = (),
           restore: Mapping[str, Entry | None] | None = None) -> dict[str, Entry | None]:
    """Enter ``enter``, drop the paths in ``remove``, and set each path of ``restore`` to its entry (None:
    dropped); returns what each touched path held before, for a rollback to put back."""
    with _locked() as home:
        try:
            index = dict(_index())
        except OSError as exc:  # a link planted at the ledger (ELOOP): what it held is gone; write a fresh one
            if exc.errno != errno.ELOOP:
                raise
            index = {}
        prior: dict[str, Entry | None] = {}
        changes: list[tuple[str, Entry | None]] = [(e.path, e) for e in enter]
        changes += [(p, None) for p in remove]
        changes += list((restore or {}).items())
        for path, entry in changes:
            prior.setdefault(path, index.get(path))
            if entry is None:
                index.pop(path, None)
            else:
                index[path] = entry
        # deleted since (its folder is there, so not a drive that is away): nothing left to guard
        gone = [p for p in index if p not in prior and not os.path.lexists(p) and os.path.isdir(os.path.dirname(p))]
        for path in gone:
            del index[path]
        if gone or any(prior[p] != index.get(p) for p in prior):
            _save(home, index)
        return prior


def trust(path: str) -> list[Entry]:
    """Drop ``path`` (a file, or every entry below a folder) from the ledger: a person trusts it as it is now.
    Returns the entries dropped."""
    real = os.path.realpath(path)
    under = tuple(p.rstrip(os.sep) + os.sep for p in {os.path.abspath(path), real})
    gone = [e for e in _index().values() if e.path in (os.path.abspath(path), real) or e.path.startswith(under)]
    if gone:
        update(remove=[e.path for e in gone])
    return sorted(gone, key=lambda e: e.path)
