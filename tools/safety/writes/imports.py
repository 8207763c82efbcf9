"""Nothing the model writes is imported by the kernel in place of a real module.

The kernel's working folder (the default workspace) is first on its ``sys.path``, so a ``bashlex.py``,
``ipywidgets.py`` or ``markdown_it.py`` written there would run at hermes_nb's next lazy import, and a
``pandas.py`` at the person's next ``import pandas``. Two parts:

- ``install`` (at ``%load_ext``, undone at unload): a finder first on ``sys.meta_path`` that, for an import
  hermes_nb's own code asks for (its frame's module is ``hermes_nb.*``) and for everything that module's
  loading imports in turn, looks only at ``trusted_path()`` — ``sys.path`` without the folders the model can
  write. A module found nowhere else is a ``ModuleNotFoundError`` naming the workspace, never the planted
  file. Imports made by the person's code (cells, their own tools) are untouched.
- ``shadowed_name`` (for ``write_file`` / ``patch``, and the sandbox's after-call check): the module a path
  would shadow when it is a top-level module file or package in a folder the kernel imports from; the
  importable names are computed once per kernel.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import os
import pkgutil
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["install", "shadowed_name", "trusted_imports", "trusted_path", "untrusted_folders"]

_local = threading.local()
_SUFFIXES = tuple(sorted(importlib.machinery.all_suffixes(), key=len, reverse=True))


def untrusted_folders() -> list[Path]:
    """The import folders the model can write: the working folder (``""`` on ``sys.path``), the folder the
    tools started in, ``$HERMES_NB_WORKSPACE``, and any ``sys.path`` entry inside those that is not a
    virtualenv's package folder (write-protected). Plain ``os`` calls only: the finder calls this while an
    import is in progress, so nothing here may import."""
    from hermes_nb.tools.workspace import _START_CWD

    roots = {os.path.realpath(os.getcwd()), os.path.realpath(_START_CWD)}
    if os.environ.get("HERMES_NB_WORKSPACE"):
        roots.add(os.path.realpath(os.path.expanduser(os.environ["HERMES_NB_WORKSPACE"])))
    out = set(roots)
    for entry in sys.path:
        real = os.path.realpath(entry or os.getcwd())
        inside = any(real == r or real.startswith(r + os.sep) for r in roots)
        if inside and os.path.basename(real) not in ("site-packages", "dist-packages"):
            out.add(real)
    return sorted(Path(p) for p in out)


def trusted_path() -> list[str]:
    """``sys.path`` without the folders the model can write."""
    bad = {str(p) for p in untrusted_folders()}
    return [e for e in sys.path if e and os.path.realpath(e) not in bad]


def _untrusted_origin(spec: Any, bad: Sequence[str]) -> bool:
    where = spec.origin if spec.origin not in (None, "built-in", "frozen") else None
    paths = [where] if where else list(spec.submodule_search_locations or [])
    return any(os.path.realpath(p).startswith(tuple(b + os.sep for b in bad)) for p in paths if p)


class _Loader(importlib.abc.Loader):
    """Runs the real loader with the guard on, so what the module imports while loading is trusted too."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._loader  # the module keeps its real loader (isinstance checks, reload)
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        with trusted_imports():
            self._loader.exec_module(module)

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, ...: the real loader's
        return getattr(self._loader, name)


def _ours(frame: Any) -> bool:
    """Whether the import running in ``frame`` (importlib's own frames skipped) is hermes_nb's."""
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not (frame.f_code.co_filename.startswith("<frozen importlib") or name == "importlib"
                or name.startswith("importlib.")):
            return name == "hermes_nb" or name.startswith("hermes_nb.")
        frame = frame.f_back
    return False


class _TrustedFinder:
    """First on ``sys.meta_path`` while installed; inert for every import that is not hermes_nb's."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
        if path is not None or name == "hermes_nb" or name in sys.builtin_module_names:
            return None  # a submodule searches its package's own folder; builtins have no file
        if not getattr(_local, "depth", 0) and not _ours(sys._getframe(1)):
            return None
        if importlib.machinery.FrozenImporter.find_spec(name) is not None:
            return None
        bad = [str(p) for p in untrusted_folders()]
        spec = importlib.machinery.PathFinder.find_spec(name, trusted_path())
        if spec is None:  # an editable install, a zip: the other finders, never a planted file
            for finder in sys.meta_path:
                if finder is _TrustedFinder or finder is importlib.machinery.PathFinder:
                    continue
                found = getattr(finder, "find_spec", lambda *a: None)(name, None, target)
                if found is not None and not _untrusted_origin(found, bad):
                    spec = found
                    break
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r} outside the workspace (hermes_nb never imports "
                                      "its dependencies from the folders the model can write)", name=name)
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader)
        return spec


@contextmanager
def trusted_imports() -> Iterator[None]:
    """Imports in this block (this thread) look only at ``trusted_path()`` (needs ``install``)."""
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1


def install(ip: Any = None) -> Callable[[], None]:
    """Put the finder first on ``sys.meta_path``; returns the undo."""
    if _TrustedFinder not in sys.meta_path:
        sys.meta_path.insert(0, _TrustedFinder)  # type: ignore[arg-type]

    def undo() -> None:
        while _TrustedFinder in sys.meta_path:
            sys.meta_path.remove(_TrustedFinder)  # type: ignore[arg-type]

    return undo


@functools.cache
def _importable() -> frozenset[str]:
    """Top-level module names the kernel can import from elsewhere (stdlib, builtins, installed packages);
    computed once per kernel."""
    names = set(sys.stdlib_module_names) | set(sys.builtin_module_names)
    names |= {m.name for m in pkgutil.iter_modules(trusted_path())}
    names |= {n.partition(".")[0] for n in list(sys.modules)}
    return frozenset(n for n in names if n.isidentifier() and not n.startswith("__"))


def shadowed_name(real: Path) -> str | None:
    """The importable module ``real`` would shadow: a top-level ``NAME.py`` (any import suffix) or
    ``NAME/__init__.py`` in a folder the model can write that the kernel imports from; else None."""
    folders = untrusted_folders()
    parent, name = real.parent, real.name
    if parent in folders:
        stem = next((name[: -len(s)] for s in _SUFFIXES if name.endswith(s) and len(name) > len(s)), None)
    elif parent.parent in folders and name.startswith("__init__."):
        stem = parent.name
    else:
        return None
    return stem if stem is not None and stem in _importable() else None
