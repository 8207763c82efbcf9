"""The workspace root the file and terminal tools work in, and path resolution against it.

The root is ``$HERMES_NB_WORKSPACE``, else ``workspace:`` in ``config.yaml``, else the working directory
when the tools were loaded (captured at import, so a later ``%cd`` does not move where the model writes).
Writes outside the root are refused, symlinks included (paths are compared after ``realpath``); inside it,
what a write may change is the one landing policy's to say (``tools.safety.writes.landing``: the hermes_nb home,
``.git``, bytecode, environments, installer configuration... are refused there, importable modules ask).
Reads outside are allowed unless the config says ``workspace_strict_reads: true``. The hermes_nb home is never
read (the serving token, the approvals, earlier sessions' spills), except the tool results this
session spilled under ``<hermes home>/cache/spillover``, which stay readable even under strict reads; nor is
the rest of what the sandbox hides (``tools.safety.sandbox.hidden``: the home outside the workspace, the home's
dot-entries when the workspace holds it, the kernel's connection file).

Checking a path and then opening it by name is a race: a folder swapped for a symlink in between would
redirect the open. ``open_confined`` therefore opens the checked path one component at a time from the
root's file descriptor, refusing to follow any symlink (``O_NOFOLLOW``), so what is opened is what was
checked.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from pathlib import Path
from typing import Any

from hermes_nb.tools.errors import ConfigError, HermesNbError
from hermes_nb.tools.safety.regular import regular_fd

__all__ = ["WorkspaceError", "confined_base", "open_confined", "resolve_path", "workspace_root"]

log = logging.getLogger(__name__)

_START_CWD = os.getcwd()


class WorkspaceError(HermesNbError, PermissionError):
    """A path the tools may not use (outside the workspace root)."""


def _config() -> dict[str, Any]:
    from hermes_nb.tools.config import load_config

    try:
        return load_config()
    except ConfigError as exc:
        log.warning("workspace: cannot read the config, using defaults: %s", exc)
        return {}


def workspace_root() -> Path:
    """The folder tools resolve relative paths against (a real path, symlinks resolved)."""
    env = os.environ.get("HERMES_NB_WORKSPACE")
    if env:
        return Path(os.path.realpath(os.path.expanduser(env)))
    configured = _config().get("workspace")
    if isinstance(configured, str) and configured.strip():
        return Path(os.path.realpath(os.path.join(_START_CWD, os.path.expanduser(configured.strip()))))
    return Path(os.path.realpath(_START_CWD))


def resolve_path(p: str | os.PathLike[str], *, for_write: bool) -> Path:
    """``p`` made absolute against the workspace root and ``realpath``-ed; WorkspaceError if not allowed.

    A path that does not exist yet still resolves (its existing parents' symlinks are followed).
    """
    text = os.fspath(p)
    if not text.strip():
        raise ValueError("path is empty; pass a file path relative to the workspace root or absolute")
    root = workspace_root()
    joined = Path(root, os.path.expanduser(text))  # an absolute p replaces root
    real = Path(os.path.realpath(joined))
    if not for_write and _in_home(real) and not _is_spill_file(real):
        raise WorkspaceError(f"refusing to read {text}: it is inside the hermes_nb home folder (the serving "
                             "token, approvals and other sessions' results); only this session's spilled "
                             "results are readable there")
    if not for_write and not _in_home(real) and (why := _hidden(real)):
        raise WorkspaceError(f"refusing to read {text}: {why}")
    if real == root or real.is_relative_to(root):
        return real  # what a write may change inside is the landing policy's to say (tools.safety.writes.landing)
    if for_write:
        raise WorkspaceError(f"refusing to write outside the workspace root {root}: {text}"
                             + (f" (resolves to {real})" if str(real) != text else ""))
    if _config().get("workspace_strict_reads") is True and not _is_spill_file(real):
        raise WorkspaceError(f"refusing to read outside the workspace root {root}: {text}"
                             " (workspace_strict_reads is on)")
    return real


def _hidden(real: Path) -> str | None:
    from hermes_nb.tools.safety.sandbox.hidden import hidden_reason

    return hidden_reason(real, workspace_root())


def _in_home(real: Path) -> bool:
    from hermes_nb.tools.config import hermes_home

    home = Path(os.path.realpath(hermes_home()))
    return real == home or real.is_relative_to(home)


def _is_spill_file(path: Path) -> bool:
    """A result this session spilled: the model must always be able to read it back (strict reads)."""
    from hermes_nb.tools.budget import spilled_this_session

    return spilled_this_session(path)


def confined_base(real: Path) -> Path | None:
    """The folder ``open_confined`` opens ``real`` from: the workspace root, or the spill folder for a
    spilled result outside it; None when ``real`` is in neither (a non-strict read outside)."""
    root = workspace_root()
    if real == root or real.is_relative_to(root):
        return root
    from hermes_nb.tools.budget import spill_dir

    spill = Path(os.path.realpath(spill_dir()))
    if real.is_relative_to(spill):
        return spill
    return None


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def open_confined(real: Path, base: Path, *, write: bool = False, shown: str | None = None) -> int:
    """A file descriptor for ``real`` (inside ``base``), reached without following any symlink.

    ``write`` creates missing folders and the file, and truncates it. A component that became a
    symlink after the path was checked raises ``WorkspaceError``; anything but a regular file (a named pipe,
    a device) raises ``OSError`` without blocking. The caller closes the descriptor.
    """
    shown = shown or str(real)
    parts = real.relative_to(base).parts
    if not parts:
        raise IsADirectoryError(f"{shown} is a directory, not a file")
    if not _NOFOLLOW or os.open not in os.supports_dir_fd:  # no race-free open here (not Linux/macOS)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC if write else os.O_RDONLY
        if write:
            real.parent.mkdir(parents=True, exist_ok=True)
        return regular_fd(os.open(real, flags | os.O_NONBLOCK, 0o666), shown)
    fd = os.open(base, _DIR_FLAGS)
    try:
        for name in parts[:-1]:
            if write:
                try:
                    os.mkdir(name, dir_fd=fd)
                except FileExistsError:
                    pass
            nxt = _open_at(name, fd, _DIR_FLAGS | _NOFOLLOW, shown, write)
            os.close(fd)
            fd = nxt
        flags = (os.O_WRONLY | os.O_CREAT | os.O_TRUNC if write else os.O_RDONLY) | _NOFOLLOW | os.O_CLOEXEC
        # never blocks: a named pipe would hold the kernel in open() until someone wrote to it
        return regular_fd(_open_at(parts[-1], fd, flags | os.O_NONBLOCK, shown, write), shown)
    finally:
        os.close(fd)


def _open_at(name: str, dir_fd: int, flags: int, shown: str, write: bool) -> int:
    try:
        return os.open(name, flags, 0o666, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise
        try:
            is_link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        except OSError:
            raise exc from None
        if not is_link:
            raise
        raise WorkspaceError(f"refusing to {'write' if write else 'read'} {shown}: {name} became a symbolic link "
                             f"after the path was checked; nothing was {'written' if write else 'read'}") from None


def display_path(path: Path) -> str:
    """``path`` relative to the workspace root when inside it (shorter for the model), else absolute."""
    root = workspace_root()
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
