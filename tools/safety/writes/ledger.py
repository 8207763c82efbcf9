"""The ledger of files the model wrote: what the kernel's import guard refuses until a person trusts it.

Every created or modified path a tool call lands (``checkpoints.record``) is entered with what the model made it
— a file's sha256, a link's target, or "a folder" — the call that wrote it, and when. One JSON file in the
hermes_nb home, ``ledger.json``, grouped by workspace, so it outlives the kernel: a ``storemagic.py`` written
today is still the model's at tomorrow's ``import``. A path leaves the ledger when a person trusts it
(``trust``, ``%trust``), when the model deletes it, or when a rollback puts back what was there before.

Writes are read-modify-write under an ``flock`` (several kernels share the home) and land through
``safe_write`` (a link planted at ``ledger.json`` is replaced, never followed). ``lookup`` is what the guard
calls on imports: one ``stat`` of the file when nothing changed, never an import (it runs inside the import
system). Paths are absolute as the import system sees them; ``lookup`` also tries the real path.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = ["Entry", "entries", "lookup", "model_written", "trust", "update"]

_NAME = "ledger.json"
_VERSION = 1
_lock = threading.Lock()
#: (ledger file, its stat key) -> path index; re-read only when the file changed (another kernel wrote it)
_cache: tuple[str, tuple[int, int, int], dict[str, Entry]] | None = None


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


def _home() -> Path:
    from hermes_nb.tools.config import hermes_home

    return Path(os.path.realpath(hermes_home()))


def _key(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _parse(data: bytes) -> dict[str, Entry]:
    raw = json.loads(data or b"{}")
    out: dict[str, Entry] = {}
    for workspace, files in (raw.get("workspaces") or {}).items():
        for path, fields in files.items():
            out[path] = Entry(path=path, workspace=workspace, **fields)
    return out


def _index() -> dict[str, Entry]:
    """The whole ledger (path -> entry), re-read when the file changed since the last read."""
    global _cache
    file = str(_home() / _NAME)
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        _cache = (file, (0, 0, 0), {})
        return {}
    try:
        key = _key(os.fstat(fd))
        if _cache is not None and _cache[0] == file and _cache[1] == key:
            return _cache[2]
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    index = _parse(b"".join(chunks))
    _cache = (file, key, index)
    return index


def lookup(path: str) -> Entry | None:
    """The ledger's entry for ``path`` (as given, else its real path), whether or not it still holds."""
    index = _index()
    if not index:
        return None
    return index.get(path) or index.get(os.path.realpath(path))


def model_written(path: str) -> Entry | None:
    """The entry for ``path`` when it still holds what the model wrote; None when trusted or edited since."""
    entry = lookup(path)
    return entry if entry is not None and entry.still_written() else None


def entries() -> list[Entry]:
    return sorted(_index().values(), key=lambda e: (e.workspace, e.path))


@contextmanager
def _locked() -> Iterator[Path]:
    """The home, held for a read-modify-write of the ledger (this thread and every other kernel)."""
    home = _home()
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
        fields = {k: v for k, v in asdict(entry).items() if k not in ("path", "workspace") and v is not None}
        grouped.setdefault(entry.workspace, {})[path] = fields
    write_atomic(home, _NAME, json.dumps({"version": _VERSION, "workspaces": grouped}, indent=1).encode())


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
        if any(prior[p] != index.get(p) for p in prior):
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
