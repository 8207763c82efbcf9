"""The workspace root the file and terminal tools work in, and path resolution against it.

The root is ``$HERMES_NB_WORKSPACE``, else ``workspace:`` in ``config.yaml``, else the working directory
when the tools were loaded (captured at import, so a later ``%cd`` does not move where the model writes).
Writes outside the root are refused, symlinks included (paths are compared after ``realpath``). Some
places inside the root are refused too, because writing there would let the model run programs or
approve its own commands without asking: the hermes_nb home folder (the approval allowlist and config),
any ``.git`` folder (hooks, ``core.fsmonitor`` and diff drivers run programs on ``git status``/``git diff``,
which need no approval), and dot-files and dot-folders directly in the person's home folder (shell
start-up files, ``~/.gitconfig``, ``~/.ssh``, ``~/.config``, ``~/.local/bin``). Reads
outside are allowed unless the config says ``workspace_strict_reads: true`` (spilled tool results under
``<hermes home>/cache/spillover`` stay readable even then).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from hermes_nb.tools.errors import ConfigError, HermesNbError

__all__ = ["WorkspaceError", "resolve_path", "workspace_root"]

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
    if real == root or real.is_relative_to(root):
        if for_write and (why := _protected(real)):
            raise WorkspaceError(f"refusing to write {text}: {why}. Ask the person to make this change.")
        return real
    if for_write:
        raise WorkspaceError(f"refusing to write outside the workspace root {root}: {text}"
                             + (f" (resolves to {real})" if str(real) != text else ""))
    if _config().get("workspace_strict_reads") is True and not _is_spill_file(real):
        raise WorkspaceError(f"refusing to read outside the workspace root {root}: {text}"
                             " (workspace_strict_reads is on)")
    return real


def _protected(real: Path) -> str | None:
    """Why a write to ``real`` (inside the root) is refused, or None."""
    from hermes_nb.tools.config import hermes_home

    home = Path(os.path.realpath(hermes_home()))
    if real == home or real.is_relative_to(home):
        return "it is inside the hermes_nb home folder, which holds the approval allowlist and the config"
    if ".git" in real.parts:
        return "it is inside a .git folder, whose hooks and config run programs"
    user_home = Path(os.path.realpath(os.path.expanduser("~")))
    if real.is_relative_to(user_home) and real != user_home:
        first = real.relative_to(user_home).parts[0]
        if first.startswith("."):
            return f"~/{first} is a dot-file or dot-folder of your home folder (start-up files and settings run programs)"
    return None


def _is_spill_file(path: Path) -> bool:
    """Spilled tool results live under the home folder; the model must always be able to read them back."""
    from hermes_nb.tools.config import hermes_home

    spill = Path(os.path.realpath(hermes_home() / "cache" / "spillover"))
    return path.is_relative_to(spill)


def display_path(path: Path) -> str:
    """``path`` relative to the workspace root when inside it (shorter for the model), else absolute."""
    root = workspace_root()
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
