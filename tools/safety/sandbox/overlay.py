"""The overlay a sandboxed command writes instead of the workspace, and its exact write-set afterwards.

Debian 12's bubblewrap (0.8.0) has no ``--overlay``, so the command starts as ``unshare -Urm sh -c 'mount -t
overlay …; exec bwrap …'``: in a user and mount namespace of its own, the workspace is the lower layer of an
overlay whose upper and work folders lie in a private temporary folder outside it, mounted over the
workspace's own path, which bubblewrap then binds as usual. The real workspace is never written.

When the command has ended (every process of it dead: nothing races this), its write-set is read from the
upper folder alone (``write_set``), without scanning the workspace: a regular file, link or folder there is
created or changed; a character device 0/0 is a whiteout (deleted); a folder marked opaque
(``user.overlay.opaque``, or ``trusted.`` when mounted by real root) replaced the one below, whose entries are
deleted. ``redirect_dir`` and ``metacopy`` stay off (the default here), so a renamed folder is a copy and a
whiteout, and every changed file's content is in the upper folder; finding either mark fails closed.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hermes_nb.tools.safety.writes.changes import Change

__all__ = ["Layers", "WriteSet", "layers", "probe", "wrap", "write_set"]

_OPAQUE = ("user.overlay.opaque", "trusted.overlay.opaque")
_UNSUPPORTED = ("overlay.redirect", "overlay.metacopy")
# The mount, then bubblewrap in its place. The paths arrive as arguments, never inside the script's text.
# ``volatile``: no sync of the upper folder's file system when the namespace ends (a throw-away upper folder
# needs none, and a syncfs of a busy /tmp cost tens of milliseconds per call). Mounted over the workspace's
# own path (the lower layer is opened first), so bubblewrap binds the workspace as it always did.
# Folders the person made writable (``sandbox.writable``) that lie inside the workspace are written directly,
# as their name says, not through the overlay: each real folder is bound to a staging name outside the
# workspace first (the overlay then hides it), and bound back on its own path inside the overlay.
# Arguments: WORKSPACE UPPER WORK STAGE DIRECT... -- ARGV...
_MOUNT = ('ws=$1 up=$2 wk=$3 st=$4; shift 4; i=0; '
          'for d do [ "$d" = -- ] && break; i=$((i+1)); '
          'mkdir "$st/$i" && mount --bind "$d" "$st/$i" || exit 125; done; '
          'mount -t overlay overlay -o "lowerdir=$ws,upperdir=$up,workdir=$wk,userxattr,volatile" "$ws" || exit 125; '
          'i=0; while [ "$1" != -- ]; do i=$((i+1)); mount --bind "$st/$i" "$1" || exit 125; shift; done; '
          'shift; exec "$@"')
_BAD_IN_OPTIONS = frozenset(",:\\\n")  # mount options cannot carry these in a path


@dataclass(frozen=True, slots=True, kw_only=True)
class Layers:
    """One call's overlay folders (outside the workspace; removed by ``remove``)."""

    root: Path
    upper: Path
    work: Path

    def remove(self) -> None:
        for folder, dirs, _ in os.walk(self.root):  # overlay's work/work is mode 000: open it first
            for name in dirs:
                path = os.path.join(folder, name)
                if not os.path.islink(path):
                    try:
                        os.chmod(path, 0o700)
                    except OSError:
                        pass
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteSet:
    changes: tuple[Change, ...]
    special: tuple[str, ...] = field(default=())  # fifos, sockets, devices the command made


def _candidate_bases() -> list[str]:
    """Where the layers may go: ``/dev/shm`` first, where an overlay mounts in ~0 ms against 8-14 ms with its
    upper folder on ext4 here (the sandbox has its own empty ``/dev/shm``, so the layers are out of its sight
    either way), then the temporary folders."""
    out: list[str] = []
    for base in ("/dev/shm", tempfile.gettempdir(), "/tmp", "/var/tmp"):
        real = os.path.realpath(base)
        if os.path.isdir(real) and os.access(real, os.W_OK | os.X_OK) and real not in out:
            out.append(real)
    return out


def _temp_base(workspace: Path) -> str:
    """A folder for one call's layers, outside the workspace (an upper folder inside its own lower layer cannot
    mount), among those the probe found to work."""
    for base in _bases()[0]:
        if Path(base) != workspace and not Path(base).is_relative_to(workspace):
            return base
    raise OSError("no folder outside the workspace where the overlay's layers can go")


def _new_layers(base: str) -> Layers:
    root = Path(tempfile.mkdtemp(prefix="hermes-nb-overlay-", dir=base))
    made = Layers(root=root, upper=root / "upper", work=root / "work")
    for folder in (made.upper, made.work):
        folder.mkdir(mode=0o700)
    return made


def layers(workspace: Path) -> Layers:
    """Fresh, private overlay folders for one call."""
    return _new_layers(_temp_base(workspace))


def wrap(argv: Sequence[str], workspace: Path, made: Layers, *, direct: Iterable[str] = ()) -> list[str]:
    """``argv`` (bubblewrap's, binding the workspace) run after mounting the overlay over the workspace.

    ``direct``: folders inside the workspace the command writes in place, not through the overlay (the
    person's ``sandbox.writable``); their writes are not part of the write-set."""
    inside = [str(p) for p in dict.fromkeys(Path(os.path.realpath(d)) for d in direct)
              if p != workspace and p.is_relative_to(workspace) and p.is_dir()]
    stage = made.root / "direct"
    stage.mkdir(mode=0o700, exist_ok=True)
    return ["unshare", "-Urm", "sh", "-c", _MOUNT, "sh", str(workspace), str(made.upper), str(made.work),
            str(stage), *inside, "--", *argv]


def _probe_at(base: str) -> str:
    """"" when an overlay with its layers in ``base`` mounts and records a deletion (a whiteout) and a folder
    made anew (opaque), else why not."""
    try:
        made = _new_layers(base)
    except OSError as exc:
        return f"no layers in {base}: {exc.strerror or exc}"
    try:
        lower = made.root / "lower"
        (lower / "d").mkdir(parents=True)
        (lower / "probe").write_text("x")
        (lower / "d" / "old").write_text("x")
        try:
            run = subprocess.run(wrap(["sh", "-c", 'rm "$0/probe" && rm -r "$0/d" && mkdir "$0/d"', str(lower)],
                                      lower, made), capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"an overlay could not be mounted: {exc}"
        if run.returncode != 0:
            last = (run.stderr.strip().splitlines() or [f"exit status {run.returncode}"])[-1]
            return f"an unprivileged overlay cannot be mounted here ({last})"
        try:
            st = os.lstat(made.upper / "probe")
        except OSError:
            return "the overlay left no whiteout for a deletion (an unsupported overlay)"
        if not (stat.S_ISCHR(st.st_mode) and st.st_rdev == 0):
            return "the overlay's whiteouts are not 0/0 devices (an unsupported overlay)"
        if not _opaque(str(made.upper / "d")):
            return f"the overlay cannot mark a folder made anew as opaque in {base} (no user xattrs there)"
        return ""
    finally:
        made.remove()


@functools.cache
def _bases() -> tuple[tuple[str, ...], str]:
    """The layer folders an overlay works with here (probed once per process), and why not when none."""
    works, why = [], "no writable temporary folder"
    for base in _candidate_bases():
        if not (why := _probe_at(base)):
            works.append(base)
    return tuple(works), why


@functools.cache
def probe() -> str:
    """"" when a sandboxed command can run on an overlay here, else why not (one line)."""
    if sys.platform != "linux":
        return f"overlays need Linux (this is {sys.platform})"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    works, why = _bases()
    return "" if works else why


def usable_for(workspace: Path) -> str:
    """"" when ``workspace`` can be an overlay's lower layer, else why not."""
    if why := probe():
        return why
    if set(str(workspace)) & _BAD_IN_OPTIONS:
        return f"the workspace path {workspace} holds a character a mount option cannot carry (, : \\)"
    return ""


# -- reading the write-set -------------------------------------------------------------------------------

def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def _opaque(path: str) -> bool:
    for name in _OPAQUE:
        try:
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def _check_marks(path: str) -> None:
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return
    if any(n.endswith(_UNSUPPORTED) for n in names):
        raise OSError(f"{path}: an overlay redirect or metacopy mark, which this reader does not follow")


def _lower(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _pre_image(path: str, st: os.stat_result) -> dict[str, object]:
    """What was at ``path`` in the workspace (``st`` its lstat), as the ``before`` side of a change."""
    if stat.S_ISLNK(st.st_mode):
        return {"link_before": os.readlink(path), "mode_before": stat.S_IMODE(st.st_mode)}
    if stat.S_ISREG(st.st_mode):
        return {"before": _read(path), "mode_before": stat.S_IMODE(st.st_mode)}
    return {"mode_before": stat.S_IMODE(st.st_mode)}


def _deleted_tree(path: str, out: list[Change]) -> None:
    """A deletion for ``path`` in the workspace and, for a folder, everything in it (``lander`` orders them)."""
    st = _lower(path)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        try:
            names = os.listdir(path)
        except OSError as exc:
            raise OSError(f"{path}: cannot list what the command deleted ({exc.strerror})") from exc
        for name in names:
            _deleted_tree(os.path.join(path, name), out)
        out.append(Change(path=path, kind="deleted", is_dir=True, mode_before=stat.S_IMODE(st.st_mode)))
        return
    if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
        out.append(Change(path=path, kind="deleted", **_pre_image(path, st)))  # type: ignore[arg-type]
    else:
        out.append(Change(path=path, kind="deleted"))


def write_set(upper: Path, workspace: Path) -> WriteSet:
    """Every change the command made, from the overlay's upper folder (see the module docstring)."""
    changes: list[Change] = []
    special: list[str] = []
    pending: list[tuple[str, bool]] = [("", False)]  # (folder below upper, inside an opaque folder)
    while pending:
        rel, hidden = pending.pop()
        folder = os.path.join(upper, rel) if rel else str(upper)
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            sub = os.path.join(rel, entry.name) if rel else entry.name
            real = os.path.join(workspace, sub)
            st = entry.stat(follow_symlinks=False)
            _check_marks(entry.path)
            lower = None if hidden else _lower(real)  # an opaque folder hides everything below it
            if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:  # a whiteout: the lower entry is gone
                if not hidden:
                    _deleted_tree(real, changes)
                continue
            if stat.S_ISDIR(st.st_mode):
                mode = stat.S_IMODE(st.st_mode)
                opaque = False
                if lower is not None and stat.S_ISDIR(lower.st_mode):
                    if _opaque(entry.path):  # replaced: all that was below is gone; the upper holds the rest
                        opaque = True
                        for name in sorted(os.listdir(real)):
                            _deleted_tree(os.path.join(real, name), changes)
                    if stat.S_IMODE(lower.st_mode) != mode:
                        changes.append(Change(path=real, kind="modified", is_dir=True,
                                              mode_before=stat.S_IMODE(lower.st_mode), mode_after=mode))
                else:
                    if lower is not None:
                        _deleted_tree(real, changes)
                    changes.append(Change(path=real, kind="created", is_dir=True, mode_after=mode))
                    opaque = True  # a new folder: nothing below it in the workspace
                pending.append((sub, hidden or opaque))
                continue
            if stat.S_ISREG(st.st_mode):
                after: dict[str, object] = {"after": _read(entry.path), "mode_after": stat.S_IMODE(st.st_mode)}
            elif stat.S_ISLNK(st.st_mode):
                after = {"link_after": os.readlink(entry.path), "mode_after": stat.S_IMODE(st.st_mode)}
            else:
                special.append(real)
                continue
            if lower is None:
                changes.append(Change(path=real, kind="created", **after))  # type: ignore[arg-type]
            elif stat.S_ISDIR(lower.st_mode) or not (stat.S_ISREG(lower.st_mode) or stat.S_ISLNK(lower.st_mode)):
                _deleted_tree(real, changes)
                changes.append(Change(path=real, kind="created", **after))  # type: ignore[arg-type]
            else:
                before = _pre_image(real, lower)
                if all(before.get(k.replace("after", "before")) == v for k, v in after.items()) and \
                        set(before) == {k.replace("after", "before") for k in after}:
                    continue  # copied up for a time stamp or an open for writing: nothing changed
                changes.append(Change(path=real, kind="modified", **before, **after))  # type: ignore[arg-type]
    return WriteSet(changes=tuple(changes), special=tuple(special))
