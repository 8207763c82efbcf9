"""Nothing the model writes is imported by the kernel in place of a real module.

The kernel's working folder (the default workspace) is first on its ``sys.path``, so a ``bashlex.py``,
``ipywidgets.py`` or ``markdown_it.py`` written there would run at hermes_nb's next lazy import, and a
``pandas.py`` at the person's next ``import pandas``. Two parts, one finder:

- ``install`` (at ``%load_ext``, undone at unload): a finder first on ``sys.meta_path`` that, for an import
  hermes_nb's own code asks for (its frame's module is ``hermes_nb.*``) and for everything that module's
  loading imports in turn, looks only at ``trusted_path()`` — ``sys.path`` without the folders the model can
  write. A module found nowhere else is a ``ModuleNotFoundError`` naming the workspace, never the planted
  file.
- The same finder, for **every** import (the person's, a library's optional one, ``importlib``, ``runpy``,
  ``%load_ext``, submodules): when the ledger of model-written files (``tools.safety.writes.ledger``) is not
  empty, it runs the import system's own search and refuses the spec it finds when a file loading it would
  run — source, extension, bytecode cache, zip archive; or every folder of a namespace package — still holds what
  the model wrote and no one trusted (``%trust``). The refusal is a ``ModuleNotFoundError`` naming the file,
  the call and ``%trust``, so an optional import's ``except ImportError`` carries on; stderr says it once. An
  unreadable ledger refuses every import from the workspace. What ran before the load (IPython imports
  ``storemagic`` at the kernel's start) cannot be stopped; the load names it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from types import ModuleType
from typing import Any

from hermes_nb.tools.safety.writes import ledger

__all__ = ["install", "trusted_imports", "trusted_path", "untrusted_folders"]

_local = threading.local()
_said: set[str] = set()  # the model-written files the guard has named on stderr (once each)


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
    """First on ``sys.meta_path`` while installed. For hermes_nb's own imports: only ``trusted_path()``. For
    every import: nothing the ledger says the model wrote (``_refuse_model_written``)."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
        if name in sys.builtin_module_names or name in _checking():
            return None  # builtins have no file; the guard's own search for this very name
        if path is not None or name == "hermes_nb" or (
                not getattr(_local, "depth", 0) and not _ours(sys._getframe(1))):
            return _checked(name, path, target)  # a submodule searches its package's own folder
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
        _refuse_model_written(name, spec)
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader)
        return spec


def _checked(name: str, path: Any, target: Any) -> Any:
    """The spec the rest of the import system finds for ``name``, unless it would load what the model wrote;
    None (the import system carries on as without us) while the ledger is empty."""
    checking = _checking()
    checking.add(name)  # only this name stands aside: what another finder imports meanwhile is checked too
    try:
        try:
            index = ledger.current()
        except (OSError, ValueError) as exc:  # fail closed: no import from the workspace while it is unreadable
            spec = _find_spec(name, path, target)
            ours = name == "hermes_nb" or name.startswith("hermes_nb.")  # installed, never the workspace
            if spec is not None and not ours and _untrusted_origin(spec, [str(p) for p in untrusted_folders()]):
                raise ModuleNotFoundError(f"refusing to import {name!r} from the workspace: hermes_nb cannot read "
                                          f"its ledger of model-written files ({exc})", name=name) from None
            return spec
        if not index:
            return None
        spec = _find_spec(name, path, target)
    finally:
        checking.discard(name)
    if spec is not None:
        _refuse_model_written(name, spec, index)
    return spec


def _checking() -> set[str]:
    """The names this thread's guard is searching for right now."""
    names = getattr(_local, "checking", None)
    if names is None:
        names = _local.checking = set()
    return names


def _find_spec(name: str, path: Any, target: Any) -> Any:
    """What the import system would find without this finder (its own search: legacy finders, the order)."""
    find = getattr(importlib._bootstrap, "_find_spec", None)  # type: ignore[attr-defined]
    if find is not None:
        return find(name, path, target)  # re-enters find_spec above, which stands aside while checking
    for finder in sys.meta_path:  # pragma: no cover (an interpreter without importlib's helper)
        if finder is not _TrustedFinder and (spec := finder.find_spec(name, path, target)) is not None:
            return spec
    return None


def _files(spec: Any) -> Iterator[str]:
    """The files loading ``spec`` would run: its source or extension, its bytecode cache, the archive it is
    read from (a zip on ``sys.path``)."""
    origin = spec.origin if spec.has_location else None
    if origin:
        yield origin
        with suppress(Exception):  # a loader that cannot name its cache
            if spec.cached:
                yield spec.cached
    archive = getattr(spec.loader, "archive", None)  # zipimport's loader
    if isinstance(archive, str):
        yield os.path.abspath(archive)  # as sys.path names it, maybe relative


def _refuse_model_written(name: str, spec: Any, index: ledger.Index | None = None) -> None:
    """ModuleNotFoundError (an optional import's ``except ImportError`` carries on) when loading ``spec``
    would run a file whose content is still what the model wrote, or when every folder of a namespace
    package is one the model created (the import would succeed only because of it)."""
    if index is None:
        try:
            index = ledger.current()
        except (OSError, ValueError):
            return  # hermes_nb's own imports: trusted_path() already leaves the workspace out
    if not index:
        return
    found = next((e for f in _files(spec) if (e := ledger.model_written(f, index)) is not None), None)
    if found is None and spec.origin is None and spec.submodule_search_locations:
        dirs = [ledger.model_written(p, index) for p in spec.submodule_search_locations]
        found = dirs[0] if dirs and all(dirs) else None
    if found is not None:
        if found.path not in _said:  # an optional import carries on silently: say once what was kept out
            _said.add(found.path)
            sys.stderr.write(f"hermes_nb: kept {found.path} out of this kernel's imports (the model wrote it, "
                             f"tool call {found.call_id}); %trust {found.path} if you want it imported\n")
        raise ModuleNotFoundError(
            f"refusing to import {name!r}: {found.path} was written by the model (tool call {found.call_id}, "
            f"{found.tool}) and no one has trusted it; if you do, run %trust {found.path}", name=name,
            path=found.path)


@contextmanager
def trusted_imports() -> Iterator[None]:
    """Imports in this block (this thread) look only at ``trusted_path()`` (needs ``install``)."""
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1


def install(ip: Any = None) -> Callable[[], None]:
    """Put the finder first on ``sys.meta_path``; returns the undo. Says which modules already imported
    (before the load: IPython's ``storemagic`` at the kernel's start) came from a model-written file."""
    if _TrustedFinder not in sys.meta_path:
        sys.meta_path.insert(0, _TrustedFinder)  # type: ignore[arg-type]
    for name, path, entry in _ran_before_load(ip):
        sys.stderr.write(f"hermes_nb: {name!r} was imported from {path} before hermes_nb loaded, and the model "
                         f"wrote it (tool call {entry.call_id}): its code has run in this kernel. Check it, then "
                         f"%trust {path} or delete it, and restart the kernel\n")

    def undo() -> None:
        while _TrustedFinder in sys.meta_path:
            sys.meta_path.remove(_TrustedFinder)  # type: ignore[arg-type]

    return undo


def _ran_before_load(ip: Any) -> list[tuple[str, str, ledger.Entry]]:
    """Model-written files the kernel ran before the guard existed: modules in ``sys.modules`` loaded from
    one, and the extensions IPython imports at its start (its own ``storemagic`` is tried from the working
    folder first) that resolve to one — a payload that raised after running left no module behind."""
    try:
        index = ledger.current()
    except (OSError, ValueError):
        return []  # the guard refuses workspace imports from now on; what ran before cannot be told
    if not index:
        return []
    found: dict[str, tuple[str, str]] = {}
    for name, module in list(sys.modules.items()):  # by path only: a stat per module would slow the load
        path = getattr(getattr(module, "__spec__", None), "origin", None)
        if isinstance(path, str) and path in index.by_path:
            found[path] = (name, path)
    names: set[str] = set()
    if ip is not None:
        from IPython.core.extensions import BUILTINS_EXTS  # loaded with the shell: tried top-level first

        app = getattr(ip, "parent", None)
        names = {*BUILTINS_EXTS, *getattr(app, "default_extensions", ()), *getattr(app, "extensions", ())}
    for name in sorted(names):
        spec = importlib.machinery.PathFinder.find_spec(name) if name.isidentifier() else None
        if spec is not None and spec.origin:
            found.setdefault(spec.origin, (name, spec.origin))
    return [(name, path, entry) for name, path in found.values()
            if (entry := ledger.model_written(path, index)) is not None]

