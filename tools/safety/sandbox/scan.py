"""The write-set of a command that could not run on an overlay: the whole workspace tree, before and after.

Where overlays are unavailable (no user namespaces, Landlock only, not Linux) the command writes the
workspace itself. ``Snapshot`` notes every entry of the tree, at any depth, without following links (type,
mode, size, modification time, inode, link target); ``changes`` compares it with the tree after the command
(every process of it dead) and reads what was created or changed. What the scan cannot give is a pre-image:
a changed file's old content is gone, so ``before`` is None and the landing moves refused paths out instead
of restoring them (said in the prompt and in ``%tools doctor``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from hermes_nb.tools.safety.writes.changes import Change

__all__ = ["Snapshot"]

Entry = tuple[int, int, int, int, int, str | None]  # (type, mode, size, mtime_ns, inode, link target)


def _tree(root: Path) -> dict[str, Entry]:
    out: dict[str, Entry] = {}
    pending = [str(root)]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            kind = stat.S_IFMT(st.st_mode)
            link = os.readlink(entry.path) if stat.S_ISLNK(st.st_mode) else None
            out[entry.path] = (kind, stat.S_IMODE(st.st_mode), st.st_size if kind != stat.S_IFDIR else 0,
                               st.st_mtime_ns if kind != stat.S_IFDIR else 0, st.st_ino, link)
            if kind == stat.S_IFDIR:
                pending.append(entry.path)
    return out


class Snapshot:
    """The workspace tree as it was before a command."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._before = _tree(root)

    def changes(self) -> tuple[list[Change], list[str]]:
        """What the command created, changed or deleted (no pre-images), and the special files it made."""
        after = _tree(self.root)
        out: list[Change] = []
        special: list[str] = []
        for path in sorted(set(self._before) - set(after)):
            kind, mode, *_ = self._before[path]
            out.append(Change(path=path, kind="deleted", is_dir=kind == stat.S_IFDIR, mode_before=mode))
        for path, now in sorted(after.items()):
            was = self._before.get(path)
            if was == now:
                continue
            kind, mode, _, _, _, link = now
            if kind not in (stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK):
                special.append(path)
                continue
            if kind == stat.S_IFDIR:
                if was is None or was[0] != kind or was[1] != mode:
                    out.append(Change(path=path, kind="created" if was is None else "modified", is_dir=True,
                                      mode_after=mode, mode_before=None if was is None else was[1]))
                continue
            content = None
            if kind == stat.S_IFREG:
                try:
                    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
                    with os.fdopen(fd, "rb") as fh:
                        content = fh.read()
                except OSError:
                    content = b""
            out.append(Change(path=path, kind="created" if was is None else "modified", after=content,
                              link_after=link, mode_after=mode, mode_before=None if was is None else was[1]))
        return out, special
