"""The one write-deny list: places inside the workspace whose content runs later, outside any sandbox.

A file the model writes there is not code it runs now (the sandbox bounds that) but code that runs at the
person's next login, commit, ``git diff``, ``pip list``, kernel start or plugin load. Two users, one list:

- ``write_refusal`` — why ``write_file`` / ``patch`` refuse a path (``tools.workspace.resolve_path``);
- ``candidates`` — the concrete paths the sandbox keeps read-only inside the writable workspace
  (``tools.safety.bwrap``), and checks after each command for anything new or swapped in.

The list: shell rc / profile files (and direnv's ``.envrc``), anything in a ``.git`` folder for the file tools
(its ``hooks/`` and ``config`` for the sandbox, where ``git add`` must still write objects), ``.gitmodules``,
``.gitattributes``, ``.githooks/`` / ``.husky/`` (``core.hooksPath``), ``.pre-commit-config.yaml``, ``.vscode/``,
``.idea/``, ``.hermes/`` (project plugins), ``*.pth``, ``sitecustomize.py`` / ``usercustomize.py``,
any virtual environment (a folder holding ``pyvenv.cfg``) as a whole — only its ``bin/``, ``lib/``, ``pyvenv.cfg`` and
``pip.conf`` where the workspace root is one —, a new ``pyvenv.cfg``, the hermes_nb home when it lies inside, and the dot
entries of the person's home folder when the workspace holds it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RC_FILES", "Candidate", "candidates", "write_refusal"]

#: Start-up files a shell (or direnv) runs; they matter in the person's home, and anywhere for direnv.
RC_FILES = frozenset({
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile",
    ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".login", ".logout", ".kshrc", ".mkshrc", ".inputrc",
    ".envrc", ".xprofile", ".xsessionrc", ".xinitrc", ".pythonrc", ".pythonstartup",
})
_GIT_ANYWHERE = frozenset({".gitmodules", ".gitattributes"})
#: Folders and files whose content other tools run later: hook folders that ``core.hooksPath`` commonly names,
#: pre-commit's config (its local hooks run at the next commit), editors' workspace tasks and settings.
_RUN_LATER = {".githooks": "a git hooks folder (core.hooksPath)", ".husky": "a git hooks folder (core.hooksPath)",
              ".pre-commit-config.yaml": "pre-commit runs its hooks at the next commit",
              ".vscode": "the editor runs its tasks and settings", ".idea": "the editor runs its run configurations"}
_STARTUP_MODULES = frozenset({"sitecustomize.py", "usercustomize.py"})
_VENV_PARTS = ("bin", "Scripts", "lib", "lib64", "Lib", "include", "pyvenv.cfg", "pip.conf", "pip.ini")
_VENV_FOLDED = frozenset(p.casefold() for p in _VENV_PARTS)
_SCAN_DEPTH = 2  # folders below the workspace root searched for .git, virtualenvs and .gitattributes
_SCAN_SKIP = frozenset({"node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache",
                        ".ipynb_checkpoints", ".tox"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One protected path inside the workspace (it may not exist yet) and why it is protected."""

    path: Path
    reason: str
    read_only: bool = True  # False: a folder the sandbox pins in place (no rename) but leaves writable (.git)


def _user_home() -> Path:
    return Path(os.path.realpath(os.path.expanduser("~")))


def _hermes_home() -> Path:
    from hermes_nb.tools.config import hermes_home

    return Path(os.path.realpath(hermes_home()))


def _venv_root(real: Path, root: Path) -> Path | None:
    """The virtualenv (a folder holding ``pyvenv.cfg``) that ``real`` lies in, below ``root``."""
    for folder in [real, *real.parents]:
        if folder == root.parent or not folder.is_relative_to(root):
            return None
        if (folder / "pyvenv.cfg").is_file():
            return folder
    return None


def _within(path: Path, folder: Path) -> bool:
    """``path`` is ``folder`` or inside it, compared without case (see ``write_refusal``)."""
    p, f = str(path).casefold(), str(folder).casefold()
    return p == f or p.startswith(f.rstrip(os.sep) + os.sep)


def write_refusal(real: Path, *, root: Path) -> str | None:
    """Why the file tools may not write ``real`` (a resolved path inside ``root``), or None.

    Names are compared without case: on a case-insensitive file system (macOS, Windows) ``.GIT/hooks`` is
    ``.git/hooks``, and refusing ``.GIT`` where it is another folder costs nothing."""
    if _within(real, _hermes_home()):
        return "it is inside the hermes_nb home folder, which holds the approval allowlist and the config"
    parts = [p.casefold() for p in (real.relative_to(root).parts if real.is_relative_to(root) else real.parts)]
    shown, name = real.name, real.name.casefold()
    if ".git" in parts:
        return "it is inside a .git folder, whose hooks and config run programs"
    if name in _GIT_ANYWHERE:
        return f"{shown} names the programs git runs on diff, status and checkout"
    if ".hermes" in parts:
        return ".hermes/ holds project plugins, which run in the next kernel"
    if hooks := next((p for p in parts if p in _RUN_LATER), None):
        return f"{hooks}: {_RUN_LATER[hooks]}"
    if name.endswith(".pth"):
        return ".pth files run code at every Python start"
    if name in _STARTUP_MODULES:
        return f"{shown} runs at every Python start"
    if name == "pyvenv.cfg":
        return "pyvenv.cfg makes its folder a virtualenv, whose programs and packages run later"
    venv = _venv_root(real if real.is_dir() else real.parent, root)
    if venv is not None and venv != root:  # an environment is read-only as a whole: pip.conf, bin/, lib/, ...
        return (f"it is inside the virtualenv {venv.name} (a folder holding pyvenv.cfg), read-only to the model as a "
                "whole: its programs and packages run later, and pip reads its pip.conf")
    if venv is not None and real != venv:  # the workspace root is itself an environment: its parts
        first = real.relative_to(venv).parts[0]
        if first.casefold() in _VENV_FOLDED:
            return f"it is inside the virtualenv {venv.name}'s {first} (its programs and packages run later)"
    user_home = _user_home()
    if _within(real, user_home) and str(real).casefold() != str(user_home).casefold():
        first = Path(str(real)[len(str(user_home)):].lstrip(os.sep)).parts[0]
        if first.startswith("."):
            return f"~/{first} is a dot-file or dot-folder of your home folder (start-up files and settings run programs)"
    if name in RC_FILES:
        return f"{shown} is a shell start-up file"
    return None


def _walk(root: str) -> Iterator[tuple[str, set[str], list[os.DirEntry[str]]]]:
    """(folder, its names, its entries) for the root and folders down to ``_SCAN_DEPTH``, never following
    links, never into a repository's ``.git`` or a virtualenv (both are protected whole or by part)."""
    pending = [(root, 0)]
    while pending:
        folder, depth = pending.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        names = {e.name for e in entries}
        yield folder, names, entries
        if depth >= _SCAN_DEPTH or "pyvenv.cfg" in names:
            continue
        for entry in entries:
            if entry.name in _SCAN_SKIP or entry.name == ".git":
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, depth + 1))
            except OSError:
                continue


_EVERY_FOLDER = (*_GIT_ANYWHERE, ".hermes", *_STARTUP_MODULES, *_RUN_LATER, ".git")


def candidates(root: Path) -> list[Candidate]:
    """The protected paths the sandbox must keep as they are: the existing ones (bound read-only) and the
    missing ones of the root; a scan after the command finds what it created deeper down."""
    out: dict[str, str] = {}
    pinned: set[str] = set()
    home, user_home, top = _hermes_home(), _user_home(), str(root)
    if home.is_relative_to(root) and home != root:
        out[str(home)] = "the hermes_nb home folder"
    if user_home.is_relative_to(root):
        try:
            dots = [e.name for e in os.scandir(user_home) if e.name.startswith(".")]
        except OSError:
            dots = []
        for name in (*RC_FILES, *dots):
            out.setdefault(os.path.join(user_home, name), "a shell start-up file or dot-file of your home folder")
    for name in RC_FILES:
        out.setdefault(os.path.join(top, name), "a shell start-up file")
    for folder, names, entries in _walk(top):
        for name in _EVERY_FOLDER:
            if name in names or folder == top:  # a missing one elsewhere is found by the next scan
                out.setdefault(os.path.join(folder, name), f"{name} runs programs later")
        if ".git" in names:
            git = os.path.join(folder, ".git")
            if os.path.isdir(git) and not os.path.islink(git):
                pinned.add(git)  # a folder stays writable (objects, index) but cannot be renamed away
            # else a file ("gitdir: PATH") or a link: read-only, or the model could point git anywhere
            out[os.path.join(git, "hooks")] = "git hooks run at the next commit"
            out[os.path.join(git, "config")] = "git's config names programs git diff and status run"
            out[os.path.join(git, "info", "attributes")] = "git attributes name programs"
        if "pyvenv.cfg" in names and folder != top:
            out[folder] = f"the virtualenv {os.path.basename(folder)} (its programs and packages run later)"
        elif "pyvenv.cfg" in names:
            for part in _VENV_PARTS:
                out.setdefault(os.path.join(folder, part), "the workspace's virtualenv")
        for entry in entries:
            if entry.name.endswith(".pth"):
                out.setdefault(entry.path, ".pth files run at every Python start")
    return [Candidate(path=Path(p), reason=r, read_only=p not in pinned) for p, r in sorted(out.items())]
