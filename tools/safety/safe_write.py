"""Link-safe writes for the kernel's own files (spill files, ``always_approved.json``, ``config.yaml``).

A name planted in the target folder (a symlink ``config.yaml -> ~/.bashrc``, or under the name the next spill
will take) must never redirect a write. So the folder is opened once (its last component not a symlink), the
content goes to a fresh temporary name created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` relative to that folder's
descriptor, and ``rename`` relative to the same descriptor puts it in place: a rename replaces a symlink at the
destination instead of following it, and the descriptor pins the folder even if its path is swapped meanwhile.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["open_folder", "replace_at", "write_at", "write_atomic"]

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def open_folder(folder: Path, *, create: bool = True, mode: int = 0o700) -> int:
    """A descriptor for ``folder`` (created with ``mode`` when missing); OSError when its last component
    is a symlink or not a folder. The caller closes it."""
    if create:
        os.makedirs(folder, mode=mode, exist_ok=True)
    return os.open(folder, _DIR_FLAGS | _NOFOLLOW)


def write_atomic(folder: Path, name: str, chunks: bytes | Iterable[bytes], *, mode: int = 0o600,
                 create: bool = True) -> Path:
    """Write ``chunks`` to ``folder/name`` without following any link there; returns the path.

    Readers see the old content or the new, never half of it. ``name`` must be a plain file name.
    """
    _plain(name)  # before the folder is made
    fd = open_folder(folder, create=create)
    try:
        write_at(fd, name, chunks, mode=mode)
    finally:
        os.close(fd)
    return Path(folder, name)


def write_at(fd: int, name: str, chunks: bytes | Iterable[bytes], *, mode: int = 0o600) -> None:
    """``write_atomic`` in the folder open at ``fd`` (for many files in one folder: it is opened once)."""
    data = [chunks] if isinstance(chunks, bytes | bytearray) else chunks

    def make(tmp: str) -> None:
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)
        with os.fdopen(out, "wb", closefd=True) as fh:
            for chunk in data:
                fh.write(chunk)

    replace_at(fd, name, make)


def replace_at(fd: int, name: str, make: Callable[[str], None], *, over_folder: bool = False) -> None:
    """The one temp-then-rename: ``make(tmp)`` creates a fresh entry (a file or a link) under a temporary name
    in the folder open at ``fd``, and a rename puts it at ``name``; on any failure the temporary entry goes.

    ``over_folder``: an empty folder at ``name`` is removed first (a rename cannot put a file over a folder);
    a folder with anything in it stays, and the write fails.
    """
    _plain(name)
    tmp = f".{name[:100]}.{secrets.token_hex(6)}.tmp"  # [:100]: a long name's temporary one fits NAME_MAX
    try:
        make(tmp)
        if over_folder:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None and stat.S_ISDIR(st.st_mode):
                os.rmdir(name, dir_fd=fd)
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=fd)
        except OSError:
            pass
        raise


def _plain(name: str) -> None:
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"not a plain file name: {name!r}")
