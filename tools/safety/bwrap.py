"""Bubblewrap: the namespace sandbox every terminal command runs in on Linux.

What a command sees (``argv``): the whole root read-only; ``/dev``, ``/proc`` of its own pid namespace, an
empty ``/run``, ``/dev/shm`` and ``/tmp``; a private ``$TMPDIR`` (removed after the call); the workspace
and the ``sandbox.writable`` folders writable. On top of those, in this order:

1. **read-only inside the writable workspace**: every existing path of ``tools.safety.protected``'s list;
2. **hidden** (an empty tmpfs over a folder, ``/dev/null`` over a file): ``tools.safety.hidden``'s list (the
   hermes_nb home, Jupyter's runtime folder and this kernel's connection file, credentials) — even where
   they lie inside the workspace or a read-only bind.

Namespaces: a new user namespace that may not make another (``--disable-userns``), no capabilities, its own
network namespace (only its own loopback: the kernel's ports and everything on 127.0.0.1 are out of reach;
an opted-in network is a proxy, ``tools.safety.netproxy``),
pid namespace (when the command ends, everything it started dies), IPC, UTS (not cgroup) and session (``--new-session``:
no typing into the person's terminal), and ``--die-with-parent``. The environment is scrubbed of secrets
(``scrub_env``).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from hermes_nb.tools.safety.hidden import hidden_paths
from hermes_nb.tools.safety.protected import Candidate

__all__ = ["argv", "probe", "scrub_env", "version"]

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|COOKIE|AUTH", re.IGNORECASE)
_SECRET_PREFIXES = ("JPY_", "OPENAI_", "ANTHROPIC_", "JUPYTER_", "AWS_", "AZURE_", "GOOGLE_", "HF_", "GH_",
                    "GITHUB_", "HERMES_", "KERNEL_", "DBUS_", "SSH_", "GPG_")


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the variables a sandboxed command must not read (keys, tokens, Jupyter's, ...)."""
    return {k: v for k, v in env.items() if k.startswith("GIT_CONFIG_")  # the terminal's own git guard
            or (not _SECRET_NAME.search(k) and not k.upper().startswith(_SECRET_PREFIXES))}


@functools.cache
def version() -> str:
    """``bwrap --version``'s number, or "" when bubblewrap is not installed."""
    exe = shutil.which("bwrap")
    if exe is None:
        return ""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.split()[-1] if out.returncode == 0 and out.stdout.split() else ""


# No cgroup namespace: it only renames the cgroup paths a command sees (the cgroup file system is read-only
# under the read-only root anyway), and costs ~6 ms per call here, a third of bubblewrap's whole start.
_NAMESPACES = ("--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-net", "--unshare-ipc",
               "--unshare-uts", "--new-session", "--die-with-parent", "--cap-drop", "ALL")


@functools.cache
def probe() -> str:
    """"" when bubblewrap can sandbox here, else why not (one line): installed, and the namespaces allowed."""
    if sys.platform != "linux":
        return f"bubblewrap exists only on Linux (this is {sys.platform})"
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    try:
        run = subprocess.run([exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *_NAMESPACES, "true"],
                             capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not start: {exc}"
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["exit status " + str(run.returncode)])[-1]
        return f"bubblewrap cannot make namespaces here ({last})"
    return ""


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(os.path.expanduser(os.fspath(path))))


def _mask(path: Path) -> list[str]:
    return ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]


def argv(command: Sequence[str], *, workspace: Path, tmp: str, writable: Iterable[str] = (),
         protected: Iterable[Candidate] = (), info_fd: int | None = None) -> list[str]:
    """The full argv running ``command`` in the sandbox, in ``workspace``.

    ``protected``: paths inside the writable ones (``tools.safety.protected``); the existing ones stay
    read-only, or pinned in place (a bind on itself cannot be renamed away) when not ``read_only``.
    """
    exe = shutil.which("bwrap") or "bwrap"
    args = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/dev/shm",
            "--tmpfs", "/run", "--tmpfs", "/tmp", "--bind", tmp, tmp]
    binds = [workspace, *(_real(p) for p in writable)]
    for folder in dict.fromkeys(binds):
        if folder.is_dir():
            args += ["--bind", str(folder), str(folder)]
    hidden = hidden_paths()
    for item in protected:
        if os.path.lexists(item.path) and not any(item.path.is_relative_to(h) for h in hidden):
            real = str(_real(item.path))
            args += ["--ro-bind" if item.read_only else "--bind", real, real]
    for path in hidden:  # last, so that no bind above (a read-only ~/.local) shows them again
        if path == workspace or workspace.is_relative_to(path):
            continue  # a workspace inside a hidden folder: that folder stays visible (the workspace with it)
        args += _mask(path)
    if info_fd is not None:  # bwrap reports the namespace's init there (tools.safety.sandbox waits on it)
        args += ["--info-fd", str(info_fd)]
    return [*args, *_NAMESPACES, "--setenv", "TMPDIR", tmp, "--chdir", str(workspace), "--", *command]
