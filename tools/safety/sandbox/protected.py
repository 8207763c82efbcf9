"""A path bubblewrap keeps read-only (or pinned in place) inside a writable folder: ``bwrap.argv``'s
``protected`` argument.

The write-deny list that lived here (and its depth-2 scan of the workspace) is gone: a sandboxed command now
writes an overlay, and every path it or ``write_file`` / ``patch`` changes is judged by the one landing policy,
``tools.safety.landing``. Nothing passes ``protected`` today; the record stays for ``bwrap.argv``'s signature
until the safety folder is regrouped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Candidate"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One protected path inside the workspace and why it is protected."""

    path: Path
    reason: str
    read_only: bool = True  # False: a folder the sandbox pins in place (no rename) but leaves writable
