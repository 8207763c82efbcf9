"""What the model can see: one rule, decided by what a path is, for the sandbox (what it mounts) and the file
tools (what they read).

Seen: the workspace, the system's folders, and the kernel's interpreter with its prefixes (``sys.prefix``,
``sys.base_prefix``, ``sys.exec_prefix``, the real ``sys.executable``: read-only, wherever they live, ``/tmp`` or a
home folder included). Not seen:

- **the person's home folder outside the workspace** (``$HOME`` and the account's home): all of it;
- **when the workspace holds the home** (``jupyter lab`` started in ``~``): every top-level dot-entry of the home,
  and whatever a dot-entry that is a link leads to, unless ``sandbox: {visible: [...]}`` in ``config.yaml`` names
  it (``.kaggle``, ``~/.config/git``: shown read-only);
- **whatever the choice** (``always``): the hermes_nb home (config, approvals, the serving token, other sessions'
  spills), Hermes's home, Jupyter's runtime folder and this kernel's connection file (its key signs messages that
  run code in the kernel), the session's runtime folder (``$XDG_RUNTIME_DIR``).

A credential file is hidden because of where it is, not because of its name: there is no list of them.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["View", "hidden_paths", "hidden_reason", "view", "within"]


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(os.path.expanduser(os.fspath(path))))


def within(path: Path, folder: Path) -> bool:
    """``path`` is ``folder`` or inside it, compared without case: on a case-insensitive file system (macOS,
    Windows) ``~/.SSH`` is ``~/.ssh``, and hiding a differently-cased twin on Linux costs nothing."""
    p, f = str(path).casefold(), str(folder).casefold()
    return p == f or p.startswith(f.rstrip(os.sep) + os.sep)


@dataclass(frozen=True, slots=True, kw_only=True)
class View:
    """What the model sees from ``workspace`` (every path a real path)."""

    workspace: Path
    homes: tuple[Path, ...]  # the person's home folders
    emptied: tuple[Path, ...]  # homes outside the workspace: nothing of them is seen
    dots: tuple[Path, ...]  # existing home dot-entries inside the workspace, hidden (what a link leads to, for a link)
    shown: tuple[Path, ...]  # what ``sandbox.visible`` (and ``sandbox.writable``) names inside a home
    interpreter: tuple[Path, ...]  # the kernel's prefixes and executable, read-only
    links: tuple[tuple[Path, str], ...]  # symlinks met on the way to the interpreter: (link, its text)
    always: tuple[Path, ...]  # hidden whatever the choice

    def reason(self, real: Path) -> str | None:
        """Why ``real`` (a resolved path) is not seen, or None. The first rule that matches decides."""
        for path in self.always:
            if within(real, path):
                return f"{path} holds the kernel's keys or hermes_nb's settings, which the model never reads"
        if any(within(real, p) for p in (*self.interpreter, *self.shown)):
            return None
        for home in self.homes:
            if home in self.emptied or not within(real, home) or within(home, real):
                continue
            first = Path(str(real)[len(str(home)):].lstrip(os.sep)).parts[0]
            if first.startswith("."):
                return (f"~/{first} is a dot-entry of your home folder, hidden from the model (to show it: "
                        f"sandbox: {{visible: [{first!r}]}} in config.yaml)")
        for dot in self.dots:
            if within(real, dot):
                return (f"{dot} is what a dot-entry of your home folder leads to, hidden from the model (to show "
                        "it: name that entry in sandbox: {visible: [...]} in config.yaml)")
        for home in self.emptied:
            if within(real, home) and not within(real, self.workspace):
                return (f"it is in your home folder {home}, outside the workspace {self.workspace}, which the "
                        "model does not see")
        return None

    def readable(self, back: Iterable[Path] = ()) -> list[Path]:
        """Folders and files whose union is everything this view sees, for a sandbox that can only allow
        (Landlock): the root carved around what is hidden, with ``back`` (the writable folders), the interpreter
        and what ``sandbox.visible`` names allowed again. A file made later in a carved folder is not in it."""
        hidden = [*self.emptied, *(d for d in self.dots if not any(within(d, s) for s in self.shown)),
                  *(a for a in self.always if not within(self.workspace, a))]
        shown = [self.workspace, *back, *self.interpreter, *self.shown]
        return _carve(Path("/"), hidden, shown)


def _seen(path: Path, hidden: list[Path], shown: list[Path]) -> bool:
    """Whether ``path`` is seen: the deepest of ``hidden`` and ``shown`` holding it decides (none: seen)."""
    deepest = max(((len(str(f)), g) for fs, g in ((hidden, False), (shown, True)) for f in fs if within(path, f)),
                  default=(0, True))
    return deepest[1]


def _carve(folder: Path, hidden: list[Path], shown: list[Path]) -> list[Path]:
    seen = _seen(folder, hidden, shown)
    if not any(within(p, folder) and p != folder for p in (shown if not seen else hidden)):
        return [folder] if seen else []  # nothing inside turns the other way: the folder is one piece
    out: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return out
    for entry in entries:
        child = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            out += _carve(child, hidden, shown)
        elif not entry.is_symlink() and _seen(child, hidden, shown):
            out.append(child)  # a link is reached through where it leads, allowed (or not) there
    return out


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


def _always(homes: tuple[Path, ...]) -> list[Path]:
    from hermes_nb.tools.config import hermes_home

    found = [_real(hermes_home()), _jupyter_runtime(), _real(os.environ.get("HERMES_HOME") or "~/.hermes")]
    if os.environ.get("XDG_RUNTIME_DIR"):
        found.append(_real(os.environ["XDG_RUNTIME_DIR"]))
    if (conn := _connection_file()) is not None:
        found += [conn, conn.parent] if conn.parent.name == "runtime" else [conn]
    return [p for p in dict.fromkeys(found) if p != Path("/") and p not in homes]


def _homes() -> tuple[Path, ...]:
    """``$HOME`` and the account's home (they differ when ``HOME`` is overridden): both are the person's."""
    return _homes_of(os.environ.get("HOME", ""), os.getuid())


@functools.lru_cache(maxsize=8)
def _homes_of(env: str, uid: int) -> tuple[Path, ...]:
    found = [_real(env or "~")]
    try:
        import pwd

        found.append(_real(pwd.getpwuid(uid).pw_dir))
    except (ImportError, KeyError):
        pass
    return tuple(p for p in dict.fromkeys(found) if p != Path("/") and p.is_dir())


def _interpreter(workspace: Path, homes: tuple[Path, ...]) -> tuple[tuple[Path, ...], tuple[tuple[Path, str], ...]]:
    """The kernel's prefixes and real executable (one that holds the workspace or a home is left out: bound
    read-only it would show the home again, or make the workspace read-only), and the symlinks on the way."""
    named = (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, sys.executable)
    return _interpreter_of(named, workspace, homes)


@functools.lru_cache(maxsize=32)
def _interpreter_of(named: tuple[str, ...], workspace: Path,
                    homes: tuple[Path, ...]) -> tuple[tuple[Path, ...], tuple[tuple[Path, str], ...]]:
    reals, links = [], []
    for text in dict.fromkeys(t for t in named if t):
        real = _real(text)
        if any(within(h, real) for h in (*homes, workspace)):
            continue
        reals.append(real)
        links += _links_to(Path(os.path.abspath(text)))
    return tuple(dict.fromkeys(reals)), tuple(dict.fromkeys(links))


def _links_to(path: Path) -> list[tuple[Path, str]]:
    """Every symlink met while resolving ``path`` component by component, as (the link, its text)."""
    out: list[tuple[Path, str]] = []
    pending, done = list(path.parts[1:]), Path("/")
    hops = 0
    while pending and hops < 40:  # a loop of links ends here; realpath gives up the same way
        part = pending.pop(0)
        step = done.parent if part == ".." else done / part
        if part in ("..", ".") or not step.is_symlink():
            done = step if part != "." else done
            continue
        hops += 1
        text = os.readlink(step)
        out.append((step, text))
        target = Path(text)
        pending = [*(target.parts[1:] if target.is_absolute() else target.parts), *pending]
        done = Path("/") if target.is_absolute() else done
    return out


@functools.lru_cache(maxsize=32)
def _dot_entries(home: Path, stamp: int) -> tuple[Path, ...]:
    """The real paths of ``home``'s top-level dot-entries (a link's target, where it leads elsewhere);
    ``stamp`` is the folder's mtime, so an entry made or removed is seen at the next look."""
    try:
        names = [e.name for e in os.scandir(home) if e.name.startswith(".")]
    except OSError:
        return ()
    return tuple(dict.fromkeys(_real(home / n) for n in sorted(names) if os.path.lexists(_real(home / n))))


def _shown(homes: Iterable[Path]) -> list[Path]:
    """What ``sandbox: {visible: [...], writable: [...]}`` names, inside a home (a bare name is under ``~``);
    anything else in it is ignored, and a malformed list shows nothing (fail closed)."""
    from hermes_nb.tools.config import config_path

    path = config_path()
    try:
        st = os.stat(path)
        stamp = (str(path), st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        return []
    out = []
    for name in _visible_names(stamp):
        real = _real(Path(os.path.expanduser("~"), os.path.expanduser(name)))
        if any(within(real, h) and real != h for h in homes):
            out.append(real)
    return out


@functools.lru_cache(maxsize=8)
def _visible_names(stamp: tuple[str, int, int, int]) -> tuple[str, ...]:
    """The names in ``sandbox.visible`` and ``sandbox.writable``; ``stamp`` (the config file's path, mtime, size, inode) re-reads it
    when it changes, so that a search over many files parses it once."""
    from hermes_nb.tools.config import load_config
    from hermes_nb.tools.errors import ConfigError

    try:
        section = load_config().get("sandbox")
    except ConfigError:
        return ()
    if not isinstance(section, dict):
        return ()
    # the folders a command may write are shown to it too (``sandbox.writable``), so the file tools read them
    names = [n for key in ("visible", "writable") if isinstance(section.get(key), list) for n in section[key]]
    return tuple(n.strip() for n in names if isinstance(n, str) and n.strip())


def view(workspace: Path) -> View:
    """What the model sees from ``workspace`` (the workspace root), as of now."""
    workspace = _real(workspace)
    homes = _homes()
    emptied = tuple(h for h in homes if not within(h, workspace))
    dots: list[Path] = []
    for home in homes:
        if home not in emptied:  # a link to a folder holding the workspace cannot be hidden without it
            dots += [d for d in _dot_entries(home, os.stat(home).st_mtime_ns)
                     if not any(within(h, d) for h in (*homes, workspace))]
    interpreter, links = _interpreter(workspace, homes)
    return View(workspace=workspace, homes=homes, emptied=emptied, dots=tuple(dict.fromkeys(dots)),
                shown=tuple(_shown(homes)), interpreter=interpreter, links=links,
                always=tuple(_always(homes)))


def hidden_paths() -> list[Path]:
    """The existing paths hidden whatever the choice (real paths, de-duplicated, parents before children)."""
    return sorted(p for p in _always(_homes()) if os.path.lexists(p))


def hidden_reason(real: Path, workspace: Path) -> str | None:
    """Why the file tools may not read ``real`` (a resolved path), or None."""
    return view(workspace).reason(real)
