"""The one landing policy: for every path the model changes, whether the change lands, asks, or is refused.

Every write the model makes reaches the workspace through here: a sandboxed command's write-set (read from
its overlay, ``tools.safety.sandbox.overlay``, or from a full-depth scan where there is none) and
``write_file`` / ``patch``. A path is judged by *what it is*, never by whether its name matches something
installed; the rows below are tried in order and the first that holds decides. For what no row names the
question is one: **can an unsandboxed program run or trust this later** (the person's git, shell, pip, uv, npx,
editor, the kernel's next import)? If so it is refused or asks; if not it lands.

- **refused**: the change is kept aside (``tools.safety.writes.lander``) under the hermes_nb home, never in the
  workspace, and the card names where;
- **asks**: the person sees the diff and says yes or no (yes trusts the file as written);
- **lands**: it is written to the workspace, with its pre-image kept as the call's checkpoint.

Names are compared case-folded: on a case-insensitive file system ``.GIT/Hooks`` is ``.git/hooks``, and
refusing ``.GIT`` where it is another folder costs nothing.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Literal

__all__ = ["Landscape", "Verdict", "judge"]

Action = Literal["lands", "asks", "refused"]

#: Start-up files a shell, direnv or the Python REPL runs or reads (anywhere: direnv reads ``.envrc`` in any
#: folder, and a workspace may be the home).
_SHELL_STARTUP = frozenset({
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile",
    ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".login", ".logout", ".kshrc", ".mkshrc", ".inputrc",
    ".envrc", ".xprofile", ".xsessionrc", ".xinitrc", ".pythonrc", ".pythonstartup",
})
#: Configuration installers and runners read from the working folder or its parents: where packages come from
#: and what runs while installing (the ``uvx`` / ``npx`` / ``pip`` that start MCP servers and environments).
_INSTALLER_CONFIG = frozenset({"pip.conf", "pip.ini", "uv.toml", ".npmrc", ".pypirc", ".condarc", ".yarnrc",
                               ".yarnrc.yml", "bunfig.toml", ".bunfig.toml", ".pnpmfile.cjs"})
#: Files git reads from the worktree itself to pick which of the person's programs run (filters, diff
#: drivers) and where submodules come from.
_GIT_WORKTREE = frozenset({".gitattributes", ".gitmodules"})
#: Folders whose content another program runs without being told to: hook folders that ``core.hooksPath``
#: commonly names, pre-commit's local hooks, editors' tasks and launch settings, cargo's build wrappers.
_RUN_LATER = {".githooks": "a git hooks folder (core.hooksPath names it; git runs it at the next commit)",
              ".husky": "a git hooks folder (core.hooksPath names it; git runs it at the next commit)",
              ".vscode": "the editor runs its tasks and trusts its settings",
              ".idea": "the editor runs its run configurations",
              ".cargo": "cargo's config names wrapper programs every build runs",
              ".hermes": "project plugins, which load in the next kernel"}
_RUN_LATER_FILES = {".pre-commit-config.yaml": "pre-commit runs its local hooks at the next commit",
                    "sitecustomize.py": "site imports it at every Python start whose path holds its folder",
                    "usercustomize.py": "site imports it at every Python start whose path holds its folder"}
#: Bytecode and import hooks: what Python runs in place of, or before, any source.
_BYTECODE_SUFFIXES = (".pyc", ".pyo")
_IMPORT_SUFFIXES = tuple(sorted((s for s in importlib.machinery.all_suffixes() if s not in _BYTECODE_SUFFIXES),
                                key=len, reverse=True))
_ENV_TEMPLATES = frozenset({"example", "sample", "template", "dist"})  # copied by hand, never loaded
_IPYTHON_CONFIG_PREFIXES = ("ipython_config", "ipython_kernel_config", "jupyter_")


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    action: Action
    reason: str  # one clause, for the card and the prompt


@dataclass(frozen=True, slots=True, kw_only=True)
class Landscape:
    """What the policy needs to know about the place a write-set lands in, gathered once per write-set.

    ``exists(path)`` answers for the workspace *as it would be* with the write-set applied (so a virtualenv
    the same command made counts as one); ``import_folders`` are the kernel's ``sys.path`` folders (``''`` as
    the working folder) and the notebook folder."""

    workspace: Path
    hermes_home: Path
    user_home: Path
    import_folders: tuple[Path, ...]
    exists: Callable[[Path], bool]
    memo: dict[tuple[str, str], bool] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def here(cls, workspace: Path, *, exists: Callable[[Path], bool] | None = None,
             extra_folders: Iterable[Path] = ()) -> Landscape:
        """The landscape of this kernel for ``workspace``."""
        from hermes_nb.tools.config import hermes_home

        folders = {_real(entry or os.getcwd()) for entry in sys.path if isinstance(entry, str)}
        folders |= {_real(os.getcwd()), *(_real(f) for f in extra_folders)}
        return cls(workspace=workspace, hermes_home=_real(hermes_home()), user_home=_real(os.path.expanduser("~")),
                   import_folders=tuple(sorted(folders)), exists=exists or os.path.lexists)


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(os.fspath(path)))


def _within(path: Path, folder: Path) -> bool:
    p, f = str(path).casefold(), str(folder).casefold()
    return p == f or p.startswith(f.rstrip(os.sep) + os.sep)


def _folders_up(path: Path, land: Landscape, *, self_too: bool) -> list[str]:
    """``path``'s folders inside the workspace, innermost first, as strings (``path`` too with ``self_too``)."""
    top, text = str(land.workspace), str(path)
    out = [text] if self_too else []
    while True:
        text = os.path.dirname(text)
        if len(text) <= len(top) or not text.startswith(top + os.sep):
            return out if text != top else [*out, text]
        out.append(text)


def _folder_is(folder: str, kind: str, land: Landscape) -> bool:
    """Whether ``folder`` is an environment (``kind`` "env") or a bare repository ("bare"), asked once per
    folder and write-set."""
    key = (kind, folder)
    if key not in land.memo:
        if kind == "env":
            found = land.exists(Path(folder, "pyvenv.cfg")) or land.exists(Path(folder, "conda-meta"))
        else:
            found = all(land.exists(Path(folder, part)) for part in ("HEAD", "objects", "refs"))
        land.memo[key] = found
    return land.memo[key]


def _environment(path: Path, land: Landscape) -> str | None:
    """The virtual environment (``pyvenv.cfg``) or conda environment (``conda-meta/``) ``path`` is or lies in,
    below the workspace."""
    return next((f for f in _folders_up(path, land, self_too=True) if _folder_is(f, "env", land)), None)


def _bare_repository(path: Path, land: Landscape) -> str | None:
    """A folder ``path`` lies in that git would take for a bare repository when run inside it."""
    return next((f for f in _folders_up(path, land, self_too=False) if _folder_is(f, "bare", land)), None)


def _module(path: Path, land: Landscape, *, is_dir: bool) -> str | None:
    """The dotted name the kernel's import system would find ``path`` under, or None: a file with an import
    suffix (``.py``, ``.so``, ``.cpython-311-x86_64-linux-gnu.so``, ...) or a package's ``__init__``, below
    an import folder through folders whose names are identifiers (any such folder is a namespace package)."""
    if is_dir:
        return None  # an empty folder imports as a namespace package that runs nothing; its modules ask
    text = str(path)
    parent, name = os.path.split(text)
    stem = next((name[: -len(s)] for s in _IMPORT_SUFFIXES if name.endswith(s) and len(name) > len(s)), None)
    if stem is None or not stem.isidentifier():
        return None
    names = []
    for folder in land.import_folders:
        top = str(folder)
        if parent == top or parent.startswith(top.rstrip(os.sep) + os.sep):
            parts = [p for p in parent[len(top):].split(os.sep) if p]
            if all(p.isidentifier() for p in parts):
                dotted = [*parts] if stem == "__init__" else [*parts, stem]
                names.append(".".join(dotted or [stem]))
    return min(names, key=lambda n: (n.count("."), n)) if names else None


def judge(path: Path, land: Landscape, *, is_dir: bool = False, special: bool = False,
          link: str | None = None) -> Verdict:
    """The verdict on one changed ``path`` (absolute, inside the workspace, not resolved through links).

    ``special``: a fifo, socket or device; ``link``: a symbolic link's target."""
    text, top = str(path), str(land.workspace)
    rel = PurePath(text[len(top) + 1:] if text.startswith(top + os.sep) else path.name)
    parts = [p.casefold() for p in rel.parts]
    name = parts[-1] if parts else ""
    # 1. Where hermes_nb keeps the person's approvals, rules, checkpoints and the ledger of model-written files.
    if _within(path, land.hermes_home):
        return Verdict(action="refused", reason="inside the hermes_nb home (approvals, rules, checkpoints)")
    # 2. git runs programs its config, hooks, commondir, gitdir files and attributes name, at the person's next
    #    plain `git status` or commit: all of .git, at any depth, a file or a folder.
    if ".git" in parts:
        return Verdict(action="refused", reason="inside a .git file or folder (git runs the programs it names)")
    if name in _GIT_WORKTREE:
        return Verdict(action="refused", reason=f"{rel.name} tells git which filters and drivers to run")
    if (bare := _bare_repository(path, land)) is not None:
        return Verdict(action="refused", reason=f"inside {os.path.basename(bare)}, laid out as a bare git repository that git "
                                                "would use when run inside it")
    # 3. Bytecode runs in place of its source when its stamp matches; .pth lines run at every Python start.
    if "__pycache__" in parts or name.endswith(_BYTECODE_SUFFIXES):
        return Verdict(action="refused", reason="Python bytecode, which the next import runs instead of its source")
    if name.endswith(".pth"):
        return Verdict(action="refused", reason=".pth files run code at every Python start")
    # 4. Environments: their programs and packages run whenever the person activates or imports from them.
    if (env := _environment(path, land)) is not None:
        return Verdict(action="refused", reason=f"inside the environment {os.path.basename(env)} (its programs and packages "
                                                "run later; environments are read-only to the model)")
    # 5. Installers' and runners' configuration: where packages come from and what runs while installing.
    if name in _INSTALLER_CONFIG:
        return Verdict(action="refused", reason=f"{rel.name} configures an installer (package sources, scripts)")
    if "node_modules" in parts and ".bin" in parts:
        return Verdict(action="refused", reason="npx runs node_modules/.bin programs in place of the package named")
    # 6. IPython and Jupyter read their configuration and start-up files from these folders and the working one.
    if ".ipython" in parts or ".jupyter" in parts:
        return Verdict(action="refused", reason="IPython / Jupyter configuration or start-up files")
    if name.startswith(_IPYTHON_CONFIG_PREFIXES) and "config" in name:
        return Verdict(action="refused", reason=f"{rel.name}: IPython / Jupyter load it from their working folder")
    # 7. Shell start-up files, and any dot-entry of the person's home when the workspace holds it.
    if name in _SHELL_STARTUP:
        return Verdict(action="refused", reason=f"{rel.name} is a shell start-up file")
    if land.user_home.is_relative_to(land.workspace) and path.is_relative_to(land.user_home) \
            and path != land.user_home and (first := path.relative_to(land.user_home).parts[0]).startswith("."):
        return Verdict(action="refused", reason=f"~/{first} is a dot-entry of your home (start-up files and "
                                                "settings programs read)")
    # 8. Folders and files other programs run without being told to.
    if hit := next((p for p in parts if p in _RUN_LATER), None):
        return Verdict(action="refused", reason=f"{hit}/: {_RUN_LATER[hit]}")
    if name in _RUN_LATER_FILES:
        return Verdict(action="refused", reason=f"{rel.name}: {_RUN_LATER_FILES[name]}")
    # 9. Not a file, folder or link: a fifo hangs its next reader, a device reaches hardware.
    if special:
        return Verdict(action="refused", reason="a fifo, socket or device, not a file, folder or link")
    # 10. A link leading out of the workspace: the person's next program that writes or runs it follows it.
    if link is not None and _leaves(path, link, land.workspace):
        return Verdict(action="refused", reason=f"a link to {link}, outside the workspace")
    # 11. A path the kernel's sys.path names itself (a zip or folder not made yet): everything in it imports.
    if not is_dir and path in land.import_folders:
        return Verdict(action="asks", reason="the kernel's sys.path names it: every module in it would import")
    # 12. A module the kernel's import system could find: a library's optional import or the next `import`
    #     would run it in the kernel.
    if (module := _module(path, land, is_dir=is_dir)) is not None:
        return Verdict(action="asks", reason=f"the kernel would import it as {module!r} (its next `import "
                                             f"{module.partition('.')[0]}`, or a library's optional import)")
    # 13. A dotenv file: loaders put its variables (PATH, LD_PRELOAD, PYTHONSTARTUP) in the person's programs.
    if name == ".env" or (name.startswith(".env.") and name.rpartition(".")[2] not in _ENV_TEMPLATES):
        return Verdict(action="asks", reason=f"{rel.name}: dotenv loaders put its variables in your programs' "
                                             "environment")
    # 14. A project manifest uv and pip trust: [tool.uv] package sources, the build backend pip runs.
    if name == "pyproject.toml":
        return Verdict(action="asks", reason="pyproject.toml names package sources uv trusts and the build "
                                             "backend pip runs")
    # 15. Everything else is data or text nothing runs unasked.
    return Verdict(action="lands", reason="nothing runs it unasked")


def _leaves(path: Path, target: str, workspace: Path) -> bool:
    """Whether a link at ``path`` to ``target`` points outside ``workspace`` (judged on the text: an absolute
    target, or one whose ``..`` climb out)."""
    if os.path.isabs(target):
        return not _within(Path(os.path.normpath(target)), workspace)
    joined = os.path.normpath(os.path.join(path.parent, target))
    return not _within(Path(joined), workspace)
