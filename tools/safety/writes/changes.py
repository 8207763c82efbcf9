"""One change a tool call made to one path: what the landing policy judges, checkpoints keep, and cards show.

A sandboxed command's overlay, ``write_file`` and ``patch`` all produce a list of these (a write-set); nothing
downstream asks which tool made it. ``before`` is the pre-image (``None`` for a created path), ``after`` the new
content (``None`` for a deleted one). A symbolic link carries its target in ``link_before`` / ``link_after``
instead of content; a folder carries neither.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from typing import Literal

__all__ = ["Change", "ChangeKind", "sha256"]

ChangeKind = Literal["created", "modified", "deleted"]
#: A text diff longer than this is cut in the card (the checkpoint keeps the whole pre-image).
_DIFF_LINES = 400


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """``path`` is absolute, inside the workspace, with no symlink above its last component."""

    path: str
    kind: ChangeKind
    before: bytes | None = None
    after: bytes | None = None
    mode_before: int | None = None
    mode_after: int | None = None
    link_before: str | None = None
    link_after: str | None = None
    is_dir: bool = False

    def diff(self, *, label: str | None = None) -> str | None:
        """A unified diff when both sides are text (or absent), else ``None``."""
        if self.is_dir or self.link_before is not None or self.link_after is not None:
            return None
        try:
            old = (self.before or b"").decode("utf-8").splitlines(keepends=True)
            new = (self.after or b"").decode("utf-8").splitlines(keepends=True)
        except UnicodeDecodeError:
            return None
        name = label or self.path
        lines = list(difflib.unified_diff(old, new, "/dev/null" if self.before is None else f"a/{name}",
                                          "/dev/null" if self.after is None else f"b/{name}"))
        if len(lines) > _DIFF_LINES:
            lines = [*lines[:_DIFF_LINES], f"… {len(lines) - _DIFF_LINES} more diff lines\n"]
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                       for line in lines)
