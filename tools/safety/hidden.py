"""What the model never reads: one list for the sandbox (hidden under bubblewrap) and the file tools (refused).

The hermes_nb home (config, approvals, the serving token, other sessions' spills), Jupyter's runtime folder and
this kernel's connection file (its key signs messages that run code in the kernel), Hermes's home, and the
person's credential stores (``HIDDEN_IN_HOME``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["HIDDEN_IN_HOME", "hidden_paths", "hidden_reason"]

#: Credential stores and settings under the person's home folder that the model never reads.
HIDDEN_IN_HOME = (
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".config/gh", ".config/hub",
    ".git-credentials", ".netrc", ".pypirc", ".npmrc", ".yarnrc", ".cargo/credentials", ".cargo/credentials.toml",
    ".password-store", ".local/share/keyrings", ".config/hermes", ".hermes", ".jupyter",
    ".local/share/jupyter/runtime", ".ipython/profile_default/security", ".cache/huggingface/token",
    ".huggingface", ".config/openai", ".config/anthropic",
)


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(os.path.expanduser(os.fspath(path))))


def _connection_file() -> Path | None:
    """This kernel's connection file (ipykernel passes it as ``-f PATH``), when the process is a kernel."""
    args = sys.argv
    for i, arg in enumerate(args):
        if arg == "-f" and i + 1 < len(args):
            return _real(args[i + 1])
        if arg.startswith("--f="):
            return _real(arg[4:])
    return None


def _jupyter_runtime() -> Path:
    env = os.environ.get("JUPYTER_RUNTIME_DIR")
    if env:
        return _real(env)
    data = os.environ.get("JUPYTER_DATA_DIR")
    if data:
        return _real(data) / "runtime"
    return _real("~/.local/share/jupyter/runtime")


def _candidates() -> list[Path]:
    from hermes_nb.tools.config import hermes_home

    user_home = _real("~")
    found = [_real(hermes_home()), _jupyter_runtime(), *(user_home / p for p in HIDDEN_IN_HOME)]
    for env in ("HERMES_HOME", "XDG_RUNTIME_DIR"):
        if os.environ.get(env):
            found.append(_real(os.environ[env]))
    if (conn := _connection_file()) is not None:
        found += [conn, conn.parent] if conn.parent.name == "runtime" else [conn]
    return [p for p in dict.fromkeys(found) if p != Path("/") and p != user_home]


def hidden_paths() -> list[Path]:
    """The existing hidden paths (real paths, de-duplicated, parents before children)."""
    return sorted(p for p in _candidates() if os.path.lexists(p))


def hidden_reason(real: Path) -> str | None:
    """Why the file tools may not read ``real`` (a resolved path), or None. Compared without case: on a
    case-insensitive file system (macOS, Windows) ``~/.SSH/id_ed25519`` is ``~/.ssh/id_ed25519``."""
    text = str(real).casefold()
    for path in _candidates():
        base = str(path).casefold()
        if text == base or text.startswith(base + os.sep):
            return f"{path} holds credentials or the kernel's keys, which the model never reads"
    return None
