"""After a sandboxed command: set aside what it put where the write-deny list says nothing may change.

The sandbox binds existing protected paths read-only, but a path that does not exist yet cannot be bound
without creating it in the person's folder, and a folder holding bound paths can still be renamed and
replaced (``mv .git old && mkdir .git``). So before the command the protected paths are noted (``Watch``),
and when it has ended — every process of the call dead, so nothing races this — each one that is new or is
no longer the same file is renamed aside to ``NAME.blocked-by-hermes-nb`` (nothing is deleted) and named in
the result; so is a new top-level module that shadows one the kernel imports (``tools.safety.imports``).
Two things are new on purpose and are checked inside instead: a new virtualenv, and a new
repository (``git init``), whose sample hooks and plain ``config`` pass while a real hook or a config that
names a program is set aside.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from hermes_nb.tools.safety.protected import Candidate, candidates
from hermes_nb.tools.safety.regular import open_regular

__all__ = ["SUFFIX", "Watch"]

SUFFIX = ".blocked-by-hermes-nb"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
#: Keys a fresh repository's config may hold (what ``git init`` / ``git clone`` write); anything else may
#: name a program (diff.external, filter.*.clean, core.fsmonitor, alias.*, include.path, ...).
_PLAIN_GIT_KEYS = re.compile(
    r"(core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks)"
    r"|init\.defaultbranch|remote\.[^.]+\.(url|fetch)|branch\.[^.]+\.(remote|merge)|user\.(name|email)"
    r"|extensions\.objectformat)")

Signature = tuple[int, int, int, int, int] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Seen:
    signature: Signature
    reason: str


def _parent_fd(root: Path, path: Path) -> int | None:
    """A descriptor for ``path``'s folder, reached from ``root`` without following a link; None if not."""
    try:
        fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)
    except OSError:
        return None
    for name in path.relative_to(root).parts[:-1]:
        try:
            nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = nxt
    return fd


def _signature(path: Path) -> Signature:
    """What is at ``path`` as a later git or shell would find it (links in its folders followed: what the
    sandbox could not write stays what it was), or None when nothing is."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):  # a folder's own mtime moves with ordinary use (git's index.lock)
        return (st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode), 0, 0)
    return (st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns)


def _top_level(root: Path) -> dict[str, Signature]:
    """The root's entries that look like modules or packages, with their signatures."""
    try:
        names = [n for n in os.listdir(root) if n.endswith((".py", ".pyc", ".so")) or "." not in n]
    except OSError:
        return {}
    return {n: _signature(root / n) for n in names}


def _set_aside(root: Path, path: Path) -> str | None:
    """Rename ``path`` to a free ``NAME.blocked-by-hermes-nb[-N]`` beside it; the new name, or None when it is
    gone. OSError when it is there but cannot be renamed (a folder on the way became a link): said, not passed."""
    fd = _parent_fd(root, path)
    if fd is None:
        raise OSError(errno.ELOOP, "a folder on the way is a link or cannot be opened")
    try:
        for n in range(100):
            target = path.name + SUFFIX + (f"-{n}" if n else "")
            try:
                os.stat(target, dir_fd=fd, follow_symlinks=False)
                continue
            except FileNotFoundError:
                pass
            try:
                os.rename(path.name, target, src_dir_fd=fd, dst_dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ENOENT:
                    return None
                raise
            return target
    finally:
        os.close(fd)
    raise OSError(errno.EEXIST, f"every {path.name}{SUFFIX}-N name is taken")


def _new_repository_problems(git: Path) -> list[Path]:
    """The parts of a repository made during the call that would run a program later."""
    bad = []
    try:
        hooks = [e for e in os.scandir(git / "hooks") if not e.name.endswith(".sample")]
    except OSError:
        hooks = []
    bad += [Path(e.path) for e in hooks]
    config = git / "config"
    try:
        if config.is_symlink():
            raise OSError(errno.ELOOP, "a link", str(config))
        with open_regular(config) as fh:  # a pipe named config would hang the kernel here
            text = fh.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        text = ""
    except OSError:  # a link, a pipe, unreadable: not a plain config, so it is set aside
        text = "[x]\nlink=1"
    section, ok = "", True
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            head = re.match(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"(.*)")?\s*\]\s*$', line)
            if head is None:
                ok = False
                break
            section = head.group(1).lower() + (f".{head.group(2)}" if head.group(2) else "")
            continue
        key = line.split("=", 1)[0].strip().lower()
        if not _PLAIN_GIT_KEYS.fullmatch(f"{section}.{key}"):
            ok = False
            break
    if not ok:
        bad.append(config)
    for extra in ("info/attributes", "config.worktree"):
        if os.path.lexists(git / extra):
            bad.append(git / extra)
    return bad


class Watch:
    """The protected paths of ``root`` as they were before a command; ``settle`` after it has ended."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._aside_dirs: set[Path] = set()
        #: the protected paths as found before the command (what the sandbox binds read-only)
        self.protected: list[Candidate] = [c for c in candidates(root) if c.path.is_relative_to(root)]
        self._before = {c.path: _Seen(signature=_signature(c.path), reason=c.reason)
                        for c in self.protected if c.path != root}
        self._top = _top_level(root)

    def settle(self) -> list[str]:
        """Set aside what changed; one line per path for the result (empty when nothing did)."""
        notes: list[str] = []
        now = {c.path: c.reason for c in candidates(self.root) if c.path.is_relative_to(self.root)}
        for path in sorted(set(self._before) | set(now)):
            if path == self.root:
                continue
            seen = self._before.get(path)
            before = seen.signature if seen else None
            after = _signature(path)
            if after is None or after == before:
                continue
            if any(p in self._aside_dirs for p in path.parents):
                continue  # inside a folder already set aside or judged
            reason = seen.reason if seen else now.get(path, "protected")
            if before is None and (path / "pyvenv.cfg").is_file() and not path.is_symlink():
                self._aside_dirs.add(path)  # a new virtualenv: nothing runs it until the person chooses to
                continue
            if before is None and path.name == ".git" and not path.is_symlink() and path.is_dir():
                self._aside_dirs.add(path)  # judged as a whole, here
                for part in _new_repository_problems(path):
                    notes += self._aside(part, "a new repository's hook or config that runs a program")
                continue
            notes += self._aside(path, reason)
        return notes + self._shadowing()

    def _shadowing(self) -> list[str]:
        """New top-level modules of an import folder that shadow a module the kernel imports."""
        from hermes_nb.tools.safety.imports import shadowed_name

        notes: list[str] = []
        for name, signature in sorted(_top_level(self.root).items()):
            if self._top.get(name) == signature:
                continue
            path = self.root / name
            target = path / "__init__.py" if signature is not None and stat.S_ISDIR(signature[2]) else path
            module = shadowed_name(target)
            if module is not None:
                notes += self._aside(path, f"it would shadow the module {module!r} at the kernel's next import")
        return notes

    def _aside(self, path: Path, reason: str) -> list[str]:
        shown = path.relative_to(self.root)
        try:
            moved = _set_aside(self.root, path)
        except OSError as exc:
            return [f"{shown} was changed by the command and could not be set aside ({exc}): check it before use"]
        if moved is None:
            return []
        self._aside_dirs.add(path)
        return [f"{shown} was created or replaced by the command and renamed to {moved} ({reason}; "
                "the sandbox keeps it from running later)"]
