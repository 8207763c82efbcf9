"""Bubblewrap: the namespace sandbox every terminal command runs in on Linux.

What a command sees (``argv``): the whole root read-only; ``/dev``, ``/proc`` of its own pid namespace, an
empty ``/run``, ``/dev/shm`` and ``/tmp``; an empty folder over each home folder outside the workspace
(``emptied_mounts``); a private ``$TMPDIR`` (removed after the call); the workspace and the ``sandbox.writable``
folders writable. On top of those, **what the model sees** (``view_mounts``, from
``tools.safety.sandbox.hidden.view``): the home's dot-entries hidden when the workspace holds the home, those
``sandbox.visible`` names shown read-only, the kernel's interpreter and its prefixes read-only wherever they live
(so a clone under ``/tmp`` runs its own ``.venv/bin/python``), and last what is hidden whatever the choice (the
hermes_nb home, Jupyter's runtime folder and this kernel's connection file) — even where it lies inside the
workspace or a read-only bind. Hidden means an empty tmpfs over a folder, ``/dev/null`` over a file.

Nothing else inside the workspace is made read-only here (no list of dangerous names): the workspace is
an overlay when ``tools.safety.sandbox.overlay`` wraps this argv, else written directly and scanned
(``tools.safety.sandbox.scan``); either way what the command wrote goes through the one landing policy
(``tools.safety.writes.landing``).

Namespaces: a new user namespace that may not make another (``--disable-userns``), no capabilities, its own
network namespace (only its own loopback: the kernel's ports and everything on 127.0.0.1 are out of reach;
an opted-in network is a proxy, ``tools.safety.sandbox.netproxy``),
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

from hermes_nb.tools.safety.sandbox.hidden import View, view, within

__all__ = ["argv", "emptied_mounts", "probe", "scrub_env", "version", "view_mounts"]

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
         info_fd: int | None = None) -> list[str]:
    """The full argv running ``command`` in the sandbox, in ``workspace``."""
    exe = shutil.which("bwrap") or "bwrap"
    seen = view(workspace)
    args = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/dev/shm",
            "--tmpfs", "/run", "--tmpfs", "/tmp", *emptied_mounts(seen), "--bind", tmp, tmp]
    binds = [workspace, *(_real(p) for p in writable)]
    for folder in dict.fromkeys(binds):
        if folder.is_dir():
            args += ["--bind", str(folder), str(folder)]
    args += view_mounts(seen, writable=binds[1:])
    if info_fd is not None:  # bwrap reports the namespace's init there (tools.safety.sandbox.box waits on it)
        args += ["--info-fd", str(info_fd)]
    return [*args, *_NAMESPACES, "--setenv", "TMPDIR", tmp, "--chdir", str(workspace), "--", *command]


_EMPTIED = (Path("/tmp"), Path("/run"), Path("/dev/shm"))  # emptied by the base mounts of ``argv``


def emptied_mounts(seen: View) -> list[str]:
    """Before any bind: an empty folder over each home folder outside the workspace (what is shown of it
    again, the workspace, a ``sandbox.writable`` folder, the interpreter, is bound back on top)."""
    return [a for home in seen.emptied for a in ("--tmpfs", str(home))]


def _gone(path: Path, gone: Iterable[Path], back: Iterable[Path]) -> bool:
    """Whether ``path`` is out of sight: the deepest folder holding it is one emptied or masked, not one bound back."""
    deepest = max(((len(str(f)), g) for fs, g in ((gone, True), (back, False)) for f in fs if within(path, f)),
                  default=(0, False))
    return deepest[1]


def view_mounts(seen: View, *, writable: Iterable[Path] = ()) -> list[str]:
    """After the workspace's and the ``sandbox.writable`` binds, in this order: the home's dot-entries hidden
    (when the workspace holds the home) and the ``writable`` folders inside them bound back; what
    ``sandbox.visible`` names, read-only; the interpreter read-only, with the links on the way to it; last,
    what is hidden whatever the choice (so that no bind above shows it again)."""
    args: list[str] = []
    masks = [d for d in seen.dots if not any(within(d, s) for s in seen.shown)]
    for path in masks:
        args += _mask(path)
    gone, back = [*seen.emptied, *masks, *_EMPTIED], [seen.workspace, *writable]
    for folder in writable:
        if folder.is_dir() and any(within(folder, m) for m in masks):
            args += ["--bind", str(folder), str(folder)]
    for path in seen.shown:
        if os.path.exists(path) and _gone(path, gone, back):
            args += ["--ro-bind", str(path), str(path)]
    for path in seen.interpreter:  # wherever it lives: an emptied /tmp, a hidden ~/.pyenv, a venv in the workspace
        if os.path.exists(path) and not any(within(path, p) and path != p for p in seen.interpreter):
            args += ["--ro-bind", str(path), str(path)]
    for link, text in seen.links:  # a link in an emptied folder is gone: made again, unless bound back whole
        if _gone(link, gone, [*back, *seen.shown, *seen.interpreter]):
            args += ["--symlink", text, str(link)]
    for path in seen.always:  # last, so that no bind above (a read-only ~/.local) shows them again
        if not os.path.lexists(path) or within(seen.workspace, path):
            continue  # a workspace inside a hidden folder: that folder stays visible (the workspace with it)
        args += _mask(path)
    return args
