"""The files a command runs that the model could have written, and their content: what an approval is tied to.

"For this session" (and "always") approves exactly what ran. ``python3 train.py`` runs whatever
``train.py`` holds at the time, so the approval remembers that file's SHA-256 beside the command and asks
again when it changed (the model rewrote it, or it was deleted and made again). Which files a command
runs is read from its words: a program given by path outside the system folders, the script operand of
a shell or interpreter (``python -m pkg.mod`` → ``pkg/mod.py``), ``make``'s makefile, ``awk -f`` / ``sed -f``
files, also when a wrapper runs them (``timeout 60 python3 train.py``). Relative paths are taken from the
workspace and from every folder the line may ``cd`` into (``line_folders``: each ``cd`` alone and all of them
one after another).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from hermes_nb.tools.safety.commands.command_rules import INTERPRETERS, SHELLS, WRAPPERS
from hermes_nb.tools.safety.commands.shell_words import Word
from hermes_nb.tools.safety.commands.walker import TRUSTED_DIRS
from hermes_nb.tools.safety.regular import open_regular

__all__ = ["cd_targets", "file_fingerprints", "fingerprints", "line_folders"]

_VALUE_OPTIONS = frozenset({"-W", "-X", "-o", "-O", "-I", "-x", "--rcfile", "--init-file"})
_MAKES = frozenset({"make", "gmake", "bmake"})
_SCRIPTED = frozenset({"awk", "gawk", "mawk", "nawk", "sed"})
_MAX_BYTES = 64 * 1024 * 1024  # larger "scripts" are fingerprinted by size and time instead


def _interpreter_files(base: str, args: list[str]) -> list[str]:
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-m" and i + 1 < len(args):
            mod = args[i + 1].replace(".", "/")
            return [f"{mod}.py", f"{mod}/__main__.py", f"{mod}/__init__.py"]
        if a in ("-c", "-e", "-E") or (base in SHELLS and a.startswith("-") and "c" in a[1:]):
            return []  # code on the command line: it is in the subject the person saw
        if a == "--":
            return args[i + 1:i + 2]
        if a.startswith("-"):
            i += 2 if a in _VALUE_OPTIONS else 1
            continue
        return [a]
    return []


def _make_files(args: list[str]) -> list[str]:
    files: list[str] = []
    folder = ""
    for i, a in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if a in ("-f", "--file", "--makefile"):
            files.append(nxt)
        elif a.startswith(("--file=", "--makefile=")):
            files.append(a.partition("=")[2])
        elif a.startswith("-f") and len(a) > 2:
            files.append(a[2:])
        elif a == "-C":
            folder = nxt
    if not files:
        files = ["GNUmakefile", "makefile", "Makefile"]
    return [os.path.join(folder, f) for f in files]


_PYTHONS = ("python", "python3", "python2", "ipython")
_MAX_SIBLINGS = 200


def _siblings(script: str, places: list[Path]) -> list[Path]:
    """Python puts a script's folder (or, for ``-c`` and ``-m``, the working folder) first on ``sys.path``:
    the ``.py`` files beside it are what ``import`` finds first, so the approval is tied to them too."""
    found: list[Path] = []
    for place in places:
        folder = (place / script).parent if script else place
        try:
            with os.scandir(folder) as entries:
                found.extend(Path(e.path) for e in entries if e.name.endswith(".py") and e.is_file())
        except OSError:
            continue
    return sorted(found)[:_MAX_SIBLINGS]


def _files_of(words: tuple[Word, ...]) -> list[str]:
    program = words[0].value
    base = program.rpartition("/")[2]
    args = [w.value for w in words[1:]]
    files: list[str] = []
    if "/" in program and program.rpartition("/")[0] not in TRUSTED_DIRS:
        files.append(program)
    if base in _MAKES:
        files.extend(_make_files(args))
    elif base in SHELLS or base in INTERPRETERS or base in ("source", "."):
        files.extend(_interpreter_files(base, args) if base not in ("source", ".") else args[:1])
    elif base in _SCRIPTED:
        files.extend(args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-f", "--file"))
        files.extend(a[2:] for a in args if a.startswith("-f") and len(a) > 2)
    return files


def _digest(path: Path) -> str:
    try:
        st = path.stat()
        if stat.S_ISDIR(st.st_mode):
            return "folder"
        if not stat.S_ISREG(st.st_mode):  # a pipe or a device (/dev/zero): reading it would never end
            return "not a regular file"
        if st.st_size > _MAX_BYTES:
            return f"size {st.st_size} mtime {st.st_mtime_ns}"
        h = hashlib.sha256()
        with open_regular(path) as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return "sha256 " + h.hexdigest()[:16]
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.errno})"


def _runs(words: tuple[Word, ...]) -> list[tuple[Word, ...]]:
    """The command itself and, for a wrapper (``timeout 60 python3 train.py``, ``env X=1 bash s.sh``), what it
    may run: the words from each later one on (a word that is no program names no file)."""
    if words[0].value.rpartition("/")[2] not in WRAPPERS:
        return [words]
    return [words[k:] for k in range(len(words))]


def cd_targets(commands: Sequence[tuple[Word, ...]]) -> list[str]:
    """Where each ``cd`` / ``pushd`` of a line goes, as written (``~`` and ``~/x`` expanded)."""
    cds = [w[1].value if len(w) > 1 else "~" for w in commands if w[0].value in ("cd", "pushd")]
    return [os.path.expanduser(c) if c == "~" or c.startswith("~/") else c for c in cds]


def line_folders(cds: Sequence[str]) -> list[str]:
    """Every folder (from the workspace) a line's later commands may run in: where it starts, each ``cd``
    alone and the ``cd``s one after another (``cd a; cd b`` is ``a/b``). Which one holds when a command runs
    is not followed (a subshell or a branch may undo a ``cd``), so all of them count."""
    return list(dict.fromkeys([".", *cds, *itertools.accumulate(cds, os.path.join)]))


def file_fingerprints(paths: Iterable[Path]) -> tuple[str, ...]:
    """``PATH (sha256 ...)`` for each of ``paths`` (sorted): an ``execute_code`` or ``python`` script's named files
    (``tools.code_execution.named_files``), bound as a command's are."""
    return tuple(f"{path} ({_digest(path)})" for path in sorted(set(paths)))


def fingerprints(commands: Sequence[tuple[Word, ...]], root: Path) -> tuple[str, ...]:
    """``PATH (sha256 ...)`` for every file the commands run (sorted; empty when they run none)."""
    folders = [Path(os.path.normpath(root / f)) for f in line_folders(cd_targets(commands))]
    seen: dict[str, str] = {}
    for words in (run for command in commands for run in _runs(command)):
        files = _files_of(words)
        for name in files:
            if not name:
                continue
            places = [Path(name)] if os.path.isabs(name) else [f / name for f in folders]
            for place in places:
                seen[str(place)] = _digest(place)
        base = words[0].value.rpartition("/")[2]
        if base.startswith(_PYTHONS):
            script = files[0] if files and not files[0].endswith(("__main__.py", "__init__.py")) else ""
            bases = [Path("/")] if script.startswith("/") else folders
            for sibling in _siblings(script, bases):
                seen.setdefault(str(sibling), _digest(sibling))
    return tuple(f"{path} ({digest})" for path, digest in sorted(seen.items()))
